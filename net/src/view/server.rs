//! [`ViewServer`]: the listening side, the state viewers read and the
//! producer's calls.

use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use serde_json::{json, Value};

use super::detections::Detections;
use super::{routes, ViewConfig, ViewError};

/// One encoded picture, shared by every viewer that sends it.
#[derive(Debug, Default)]
pub(super) struct Picture {
    /// The frame's sequence.
    pub sequence: u32,
    /// The server's count of pictures published (a viewer's skips).
    pub number: u64,
    /// The JPEG.
    pub jpeg: Vec<u8>,
}

/// What viewers and the producer share.
#[derive(Debug, Default)]
pub(super) struct State {
    /// The newest picture.
    pub latest: Option<Arc<Picture>>,
    /// The newest boxes posted, as the page's JSON.
    pub detections: Option<Arc<str>>,
    /// The producer's figures, as JSON.
    pub status: Value,
    /// The newest snapshot, and its count.
    pub snapshot: Option<Arc<Picture>>,
    /// Set when the server stops: viewers end.
    pub stopping: bool,
}

/// Counters, read by [`ViewServer::stats`].
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub connections: AtomicUsize,
    pub viewers: AtomicUsize,
    pub requests: AtomicU64,
    pub refused: AtomicU64,
    pub bad_requests: AtomicU64,
    pub unauthorized: AtomicU64,
    pub parts_sent: AtomicU64,
    pub viewer_skips: AtomicU64,
    pub viewers_stalled: AtomicU64,
    pub detections: AtomicU64,
    pub snapshots: AtomicU64,
    /// Snapshot requests waiting (read by the producer each frame: an
    /// atomic, not the state's lock).
    pub snapshot_waiting: AtomicUsize,
}

/// The server's state, shared with its threads.
#[derive(Debug)]
pub(super) struct Shared {
    pub config: ViewConfig,
    pub state: Mutex<State>,
    /// Signalled on each picture, snapshot and stop.
    pub changed: Condvar,
    pub counters: Counters,
    /// When a refused request was last logged, and how many since.
    warned: Mutex<(Option<Instant>, u64)>,
}

impl Shared {
    /// The state, whatever a panicked thread left.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Logs a refused request: at most one line a second, with the count
    /// since, so a flood of bad requests cannot flood the log.
    pub fn warn(&self, line: &str) {
        let mut w = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if w.0
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            w.1 += 1;
            return;
        }
        match std::mem::take(&mut w.1) {
            0 => log::warn!("view: {line}"),
            n => log::warn!("view: {line} (and {n} more refused since the last line)"),
        }
        w.0 = Some(now);
    }
}

/// The figures of the stream the producer shows on the page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ViewStatus {
    /// The source's name (`pattern`, `/dev/video0`, `unix:/run/cam.sock`).
    pub source: String,
    /// Pixel format, size and colour, as one line.
    pub format: String,
    /// Frames a second, over the last second.
    pub fps: f64,
    /// Capture to now for the last frame, milliseconds.
    pub age_ms: f64,
    /// Frames captured.
    pub frames: u64,
    /// Frames the source lost.
    pub dropped: u64,
    /// Buffer imports so far (each buffer once, when zero-copy holds).
    pub imports: u64,
    /// The source's buffers.
    pub buffers: u64,
    /// The newest frame's sequence.
    pub sequence: u32,
}

/// What the server did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ViewServerStats {
    /// Connections open now.
    pub connections: usize,
    /// MJPEG viewers now.
    pub viewers: usize,
    /// Requests read.
    pub requests: u64,
    /// Requests refused for capacity (connections or viewers over the
    /// limit) or answered 503 for want of a frame (a snapshot).
    pub refused: u64,
    /// Requests answered 4xx (malformed, too large, too slow, unknown).
    pub bad_requests: u64,
    /// Requests without the token (401).
    pub unauthorized: u64,
    /// MJPEG parts sent, over all viewers.
    pub parts_sent: u64,
    /// Pictures a viewer skipped because it was slower than the camera.
    pub viewer_skips: u64,
    /// Viewers dropped because a write blocked past the write timeout.
    pub viewers_stalled: u64,
    /// Detection posts taken.
    pub detections: u64,
    /// Snapshots served.
    pub snapshots: u64,
}

/// The live view's HTTP server (see [the module](super)). Dropping it
/// stops it: the listener closes at once; each viewer's thread ends at its
/// next wake (within a second), a request still arriving within its time.
#[derive(Debug)]
pub struct ViewServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    /// Pictures published to the stream, and snapshots (counted apart, so
    /// a snapshot is never a picture a viewer skipped).
    published: u64,
    snapshots: u64,
}

impl ViewServer {
    /// Binds `config.addr` and starts answering.
    ///
    /// # Errors
    /// [`ViewError::Bind`] when the address cannot be bound,
    /// [`ViewError::BadToken`] for a token a URL would mangle,
    /// [`ViewError::Thread`] when the accepting thread cannot start.
    pub fn start(config: ViewConfig) -> Result<ViewServer, ViewError> {
        if let Some(t) = &config.token {
            let ok = (1..=128).contains(&t.len())
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b));
            if !ok {
                return Err(ViewError::BadToken { len: t.len() });
            }
        }
        let listener = TcpListener::bind(config.addr).map_err(|source| ViewError::Bind {
            addr: config.addr,
            source,
        })?;
        let bind_error = |source| ViewError::Bind {
            addr: config.addr,
            source,
        };
        let addr = listener.local_addr().map_err(bind_error)?;
        listener.set_nonblocking(true).map_err(bind_error)?;
        if !addr.ip().is_loopback() && config.token.is_none() {
            log::warn!(
                "view: listening on {addr}, beyond loopback, without a token: \
                 anyone who reaches this address sees the camera (--token)"
            );
        }
        let shared = Arc::new(Shared {
            config,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            counters: Counters::default(),
            warned: Mutex::new((None, 0)),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (shared, stop) = (shared.clone(), stop.clone());
            std::thread::Builder::new()
                .name("zerocam-view".into())
                .spawn(move || accept_loop(&listener, &shared, &stop))
                .map_err(ViewError::Thread)?
        };
        Ok(ViewServer {
            shared,
            addr,
            stop,
            accept: Some(accept),
            published: 0,
            snapshots: 0,
        })
    }

    /// The address bound (the port picked, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page's URL, with the token when there is one.
    pub fn url(&self) -> String {
        match &self.shared.config.token {
            Some(t) => format!("http://{}/?token={t}", self.addr),
            None => format!("http://{}/", self.addr),
        }
    }

    /// Whether a viewer is connected: the producer encodes only then.
    pub fn wants_frame(&self) -> bool {
        self.shared.counters.viewers.load(Ordering::Relaxed) > 0
    }

    /// Whether a snapshot request waits for the next frame.
    pub fn wants_snapshot(&self) -> bool {
        self.shared
            .counters
            .snapshot_waiting
            .load(Ordering::Relaxed)
            > 0
    }

    /// Hands the viewers the JPEG of the frame of `sequence`. Never waits
    /// for a viewer; the previous picture's buffer is reused when no
    /// viewer still sends it.
    pub fn publish(&mut self, sequence: u32, jpeg: &[u8]) {
        self.published += 1;
        let number = self.published;
        let mut st = self.shared.lock();
        let picture = refill(st.latest.take(), sequence, number, jpeg);
        st.latest = Some(picture);
        drop(st);
        self.shared.changed.notify_all();
    }

    /// Hands the waiting snapshot requests the full-quality JPEG of the
    /// frame of `sequence`.
    pub fn publish_snapshot(&mut self, sequence: u32, jpeg: &[u8]) {
        self.snapshots += 1;
        let number = self.snapshots;
        let mut st = self.shared.lock();
        st.snapshot = Some(refill(st.snapshot.take(), sequence, number, jpeg));
        drop(st);
        self.shared.changed.notify_all();
    }

    /// The producer's figures, shown on the page (`GET /stats`).
    pub fn set_status(&self, status: &ViewStatus) {
        let v = json!({
            "source": status.source,
            "format": status.format,
            "fps": status.fps,
            "age_ms": status.age_ms,
            "frames": status.frames,
            "dropped": status.dropped,
            "imports": status.imports,
            "buffers": status.buffers,
            "sequence": status.sequence,
        });
        self.shared.lock().status = v;
    }

    /// The newest boxes posted, if any.
    pub fn detections(&self) -> Option<Detections> {
        let json = self.shared.lock().detections.clone()?;
        Detections::from_json(json.as_bytes()).ok()
    }

    /// The counters so far.
    pub fn stats(&self) -> ViewServerStats {
        stats_of(&self.shared.counters)
    }
}

/// The counters as a [`ViewServerStats`].
pub(super) fn stats_of(c: &Counters) -> ViewServerStats {
    let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
    ViewServerStats {
        connections: c.connections.load(Ordering::Relaxed),
        viewers: c.viewers.load(Ordering::Relaxed),
        requests: r(&c.requests),
        refused: r(&c.refused),
        bad_requests: r(&c.bad_requests),
        unauthorized: r(&c.unauthorized),
        parts_sent: r(&c.parts_sent),
        viewer_skips: r(&c.viewer_skips),
        viewers_stalled: r(&c.viewers_stalled),
        detections: r(&c.detections),
        snapshots: r(&c.snapshots),
    }
}

/// `old`'s buffer refilled when nobody else holds it, else a new one.
fn refill(old: Option<Arc<Picture>>, sequence: u32, number: u64, jpeg: &[u8]) -> Arc<Picture> {
    let mut picture = old
        .and_then(|mut p| Arc::get_mut(&mut p).is_some().then_some(p))
        .unwrap_or_default();
    // Unique by construction: either just checked, or new.
    if let Some(p) = Arc::get_mut(&mut picture) {
        p.sequence = sequence;
        p.number = number;
        p.jpeg.clear();
        p.jpeg.extend_from_slice(jpeg);
    }
    picture
}

impl Drop for ViewServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.shared.lock().stopping = true;
        self.shared.changed.notify_all();
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// A connection counted while its thread lives.
struct Open<'a>(&'a Shared);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.counters.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Accepts connections until `stop`, each answered on a thread of its own;
/// over `max_connections`, answered 503 at once.
fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        if poll(&mut fds, PollTimeout::from(200u16)).is_err() {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let (mut stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => {
                // Out of fds, say: wait a moment rather than spin.
                shared.warn(&format!("accept: {e}"));
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let c = &shared.counters;
        if c.connections.load(Ordering::Relaxed) >= shared.config.max_connections {
            c.refused.fetch_add(1, Ordering::Relaxed);
            shared.warn(&format!(
                "{peer}: refused, {} connections open",
                shared.config.max_connections
            ));
            routes::busy(&mut stream);
            continue;
        }
        c.connections.fetch_add(1, Ordering::Relaxed);
        let conn_shared = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("zerocam-view-conn".into())
            .spawn(move || {
                // Given back however the connection ends, a panic included.
                let _open = Open(&conn_shared);
                routes::serve_connection(stream, peer, &conn_shared);
            });
        if let Err(e) = spawned {
            c.connections.fetch_sub(1, Ordering::Relaxed);
            shared.warn(&format!("{peer}: no thread for it: {e}"));
        }
    }
}
