//! The live view of `zerocam view` and `serve --http`: zerocam-net's
//! `ViewServer` fed from the capture (docs/view.md). It takes the stream's
//! JPEG (encoded once for it and Zenoh's `PREFIX/jpeg`) only while a
//! browser watches; the stream's figures go to the page four times a
//! second; a snapshot is its own encode, at its own quality.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use zerocam_capture::{Frame, FrameSource};
use zerocam_encode::jpeg::JpegEncoder;
use zerocam_net::outputs::{Output, OutputError, Still, Takes};
use zerocam_net::view::{ViewConfig, ViewServer, ViewStatus};

use crate::CliError;

/// JPEG quality of `GET /snapshot.jpg`.
const SNAPSHOT_QUALITY: u8 = 95;
/// How often the page's figures are refreshed.
const STATUS_EVERY: Duration = Duration::from_millis(250);
/// At most one snapshot encode per this: requests looping on
/// `/snapshot.jpg` cannot make every frame a full-quality encode.
const SNAPSHOT_EVERY: Duration = Duration::from_secs(1);

/// What `--http` serves, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewServe {
    /// The address (`--http`, default 127.0.0.1:8080).
    pub addr: SocketAddr,
    /// The token the page and endpoints want (`--token`).
    pub token: Option<String>,
    /// The stream's JPEG quality (`--quality`; the stream's JPEG encoder,
    /// shared with Zenoh's `PREFIX/jpeg`, has it).
    pub quality: u8,
}

/// The view's side of a capture: the server, its snapshot encoder and
/// figures.
pub struct ViewSide {
    server: ViewServer,
    snapshot: JpegEncoder,
    /// Frames seen, and at the start of the current second.
    frames: u64,
    window: (Instant, u64),
    fps: f64,
    status_at: Option<Instant>,
    snapshot_at: Option<Instant>,
    /// Frames that would not encode (each logged).
    errors: u64,
}

impl ViewSide {
    /// Binds the address and starts the server.
    ///
    /// # Errors
    /// [`CliError::Usage`] naming the address when it cannot be bound, or a
    /// token the view refuses; the snapshot encoder's error.
    pub fn new(serve: &ViewServe) -> Result<ViewSide, CliError> {
        let server = ViewServer::start(ViewConfig {
            addr: serve.addr,
            token: serve.token.clone(),
            ..ViewConfig::new()
        })
        .map_err(|e| CliError::Usage(format!("--http: {e}")))?;
        Ok(ViewSide {
            server,
            snapshot: JpegEncoder::new(SNAPSHOT_QUALITY)?,
            frames: 0,
            window: (Instant::now(), 0),
            fps: 0.0,
            status_at: None,
            snapshot_at: None,
            errors: 0,
        })
    }

    /// Takes one frame of `source`: encoded for a waiting snapshot when
    /// there is one; the figures refreshed now and then.
    fn take(&mut self, frame: &Frame, source: &dyn FrameSource) {
        self.frames += 1;
        let now = Instant::now();
        let elapsed = now.duration_since(self.window.0);
        if elapsed >= Duration::from_secs(1) {
            self.fps = (self.frames - self.window.1) as f64 / elapsed.as_secs_f64();
            self.window = (now, self.frames);
        }
        let snapshot_due = self
            .snapshot_at
            .is_none_or(|t| now.duration_since(t) >= SNAPSHOT_EVERY);
        if snapshot_due && self.server.wants_snapshot() {
            self.snapshot_at = Some(now);
            match self.snapshot.encode(frame) {
                Ok(jpeg) => self.server.publish_snapshot(frame.sequence(), jpeg),
                Err(e) => self.failed(&e),
            }
        }
        if self
            .status_at
            .is_none_or(|t| now.duration_since(t) >= STATUS_EVERY)
        {
            self.status_at = Some(now);
            self.server.set_status(&status_of(frame, source, self.fps));
        }
    }

    fn failed(&mut self, e: &dyn std::fmt::Display) {
        self.errors += 1;
        if self.errors.is_power_of_two() {
            log::warn!("view: a frame did not encode ({} so far): {e}", self.errors);
        }
    }
}

/// The view as one output of the capture: it takes frames (figures,
/// snapshots) and the stream's JPEG while a browser watches.
impl Output for ViewSide {
    fn takes(&self) -> Takes {
        Takes {
            frames: true,
            h264: false,
            jpeg: true,
        }
    }

    /// The line announcing the page.
    fn describe(&self) -> String {
        format!("live view at {}", self.server.url())
    }

    /// The server's counters as a status line.
    fn status(&self) -> String {
        let s = self.server.stats();
        format!(
            "view: viewers {}, parts sent {}, skipped for slow viewers {}, stalled viewers {}, \
             bad requests {}, unauthorized {}, refused {}, detections {}, snapshots {}, \
             encode errors {}",
            s.viewers,
            s.parts_sent,
            s.viewer_skips,
            s.viewers_stalled,
            s.bad_requests,
            s.unauthorized,
            s.refused,
            s.detections,
            s.snapshots,
            self.errors
        )
    }

    fn frame(&mut self, frame: &Frame, source: &dyn FrameSource) -> Result<(), OutputError> {
        self.take(frame, source);
        Ok(())
    }

    fn wants_jpeg(&mut self) -> bool {
        self.server.wants_frame()
    }

    fn jpeg(&mut self, still: &Still<'_>) -> Result<(), OutputError> {
        self.server.publish(still.sequence, still.data);
        Ok(())
    }
}

/// The page's figures for `frame` of `source`.
fn status_of(frame: &Frame, source: &dyn FrameSource, fps: f64) -> ViewStatus {
    let f = source.stream_format();
    let st = source.stats();
    let age = source.clock().now().saturating_sub(frame.timestamp());
    ViewStatus {
        source: source.name().display().to_string(),
        format: format!("{} {}x{}, {}", f.format.name, f.width, f.height, f.color),
        fps,
        age_ms: age.as_secs_f64() * 1e3,
        frames: st.frames,
        dropped: st.dropped,
        imports: st.cache.misses,
        buffers: st.buffers as u64,
        sequence: frame.sequence(),
    }
}
