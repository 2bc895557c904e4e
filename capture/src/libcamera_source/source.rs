//! [`LibcameraSource`], and listing libcamera's cameras.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use zerocam_cache::ImportCache;

use super::frames::{Shared, State};
use super::setup::Configured;
use super::worker::{gone, worker, Cmd, Completion};
use super::{LibcameraCamera, LibcameraConfig};
use crate::{ArgumentError, CaptureError, Frame, FrameSource, Result, StreamFormat, StreamStats};

/// Every libcamera camera present, with its formats and sizes (empty when
/// there is none).
///
/// # Errors
/// [`CaptureError::Libcamera`] when libcamera's camera manager cannot start.
pub fn libcamera_cameras() -> Result<Vec<LibcameraCamera>> {
    let (reply, answer) = sync_channel(1);
    worker()?
        .send(Cmd::Enumerate(reply))
        .map_err(|_| gone("list cameras", Errno::EPIPE))?;
    answer
        .recv()
        .map_err(|_| gone("list cameras", Errno::EPIPE))?
}

/// A libcamera camera streaming one configured stream. See the
/// [module docs](super).
///
/// ```no_run
/// use std::time::Duration;
/// use zerocam_capture::{FrameSource, LibcameraConfig, LibcameraSource};
///
/// let mut camera = LibcameraSource::open(LibcameraConfig::new("NV12".parse()?, 640, 480))?;
/// let frame = camera.next_frame(Duration::from_secs(2))?;
/// println!("{:?} synthesized: {:?}", frame.tensor().shape(), frame.synthesized());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LibcameraSource {
    shared: Arc<Shared>,
    completions: Receiver<Completion>,
    format: StreamFormat,
    id: String,
    adjustments: Vec<String>,
}

/// Asks the libcamera thread to open `config`, with completions into a new channel.
fn open_camera(config: &LibcameraConfig) -> Result<(Configured, Receiver<Completion>)> {
    if config.buffers < 2 {
        return Err(ArgumentError::TooFewBuffers(config.buffers).into());
    }
    let (completions, frames) = channel();
    let (reply, answer) = sync_channel(1);
    worker()?
        .send(Cmd::Open {
            config: config.clone(),
            completions,
            reply,
        })
        .map_err(|_| gone("open a camera", Errno::EPIPE))?;
    let configured = answer
        .recv()
        .map_err(|_| gone("open a camera", Errno::EPIPE))??;
    Ok((configured, frames))
}

impl LibcameraSource {
    /// Acquires the camera (`config.camera`, or the first), configures one
    /// stream as asked, allocates its buffers and starts capturing.
    ///
    /// # Errors
    /// [`CaptureError::NoCamera`], [`CaptureError::UnknownCamera`] (listing
    /// the ids present), [`CaptureError::ConfigInvalid`] when libcamera
    /// rejects the configuration, [`CaptureError::ConfigAdjusted`] when it
    /// would change the format or size (unless `accept_adjusted`),
    /// [`CaptureError::UnsupportedFormat`] for a format zerocam cannot hand
    /// out, [`CaptureError::InvalidArgument`] for fewer than 2 buffers,
    /// [`CaptureError::Libcamera`] when a libcamera call fails (a camera in
    /// use: `acquire` with `EBUSY`).
    pub fn open(config: LibcameraConfig) -> Result<LibcameraSource> {
        let (configured, completions) = open_camera(&config)?;
        let worker = worker()?;
        let format = configured.format.clone();
        let id = configured.id.clone();
        let adjustments = configured.adjustments.clone();
        let name = PathBuf::from(&configured.name);
        let cache = ImportCache::new(2 * configured.buffers.len() * format.planes.len());
        let shared = Arc::new(Shared::new(name, worker, State::new(configured, cache)));
        Ok(LibcameraSource {
            shared,
            completions,
            format,
            id,
            adjustments,
        })
    }

    /// libcamera's id of the camera.
    pub fn camera_id(&self) -> &str {
        &self.id
    }

    /// What libcamera changed in the configuration asked for, e.g.
    /// `buffers 2 -> 4` (format and size changes only with `accept_adjusted`).
    pub fn adjustments(&self) -> &[String] {
        &self.adjustments
    }

    fn call(
        &self,
        make: impl FnOnce(std::sync::mpsc::SyncSender<Result<()>>) -> Cmd,
    ) -> Result<()> {
        let (reply, answer) = sync_channel(1);
        self.shared
            .worker
            .send(make(reply))
            .map_err(|_| gone("reach the libcamera thread", Errno::EPIPE))?;
        answer
            .recv()
            .map_err(|_| gone("reach the libcamera thread", Errno::EPIPE))?
    }

    /// Starts capturing again after [`stop`](Self::stop): every request whose
    /// frame is not held is queued. Sequence and timestamp checks start over.
    ///
    /// # Errors
    /// [`CaptureError::Libcamera`] when libcamera refuses to start or queue,
    /// [`CaptureError::NotStreaming`] after a failed reconfigure.
    pub fn start(&mut self) -> Result<()> {
        let key = {
            let st = self.shared.lock();
            if !st.open {
                return Err(CaptureError::NotStreaming {
                    path: self.shared.name.clone(),
                });
            }
            if st.streaming {
                return Ok(());
            }
            st.key
        };
        self.call(|reply| Cmd::Start(key, reply))?;
        let mut st = self.shared.lock();
        st.fixer.reset();
        st.streaming = true;
        Ok(())
    }

    /// Stops capturing: libcamera cancels the queued requests, frames not yet
    /// taken are given back, and the import cache is invalidated (the next
    /// frames import again). Held frames stay valid.
    ///
    /// # Errors
    /// [`CaptureError::Libcamera`] when libcamera's stop fails.
    pub fn stop(&mut self) -> Result<()> {
        let key = {
            let st = self.shared.lock();
            if !st.streaming {
                return Ok(());
            }
            st.key
        };
        let stopped = self.call(|reply| Cmd::Stop(key, reply));
        let mut st = self.shared.lock();
        st.streaming = false;
        while let Ok(c) = self.completions.try_recv() {
            self.shared.give_back(&mut st, c.index);
        }
        st.cache.invalidate();
        stopped
    }

    /// Configures the same camera anew (format, size, buffers from `config`;
    /// its `camera` is ignored): stops, releases the buffers, and starts with
    /// the new ones. The import cache is invalidated. On failure the source is
    /// left closed (frames give [`CaptureError::NotStreaming`]) until a
    /// reconfigure succeeds.
    ///
    /// # Errors
    /// [`CaptureError::FramesHeld`] while frames are out (nothing changes
    /// then), and [`open`](Self::open)'s errors.
    pub fn reconfigure(&mut self, config: LibcameraConfig) -> Result<()> {
        let held = self.shared.lock().slots.iter().filter(|s| s.held).count();
        if held > 0 {
            return Err(CaptureError::FramesHeld {
                path: self.shared.name.clone(),
                held,
            });
        }
        self.close();
        let config = LibcameraConfig {
            camera: Some(self.id.clone()),
            ..config
        };
        let (configured, completions) = open_camera(&config)?;
        self.format = configured.format.clone();
        self.adjustments = configured.adjustments.clone();
        self.completions = completions;
        let mut st = self.shared.lock();
        // Invalidated by close(); kept (with its counters) when big enough.
        let needed = 2 * configured.buffers.len() * self.format.planes.len();
        let cache = match std::mem::replace(&mut st.cache, ImportCache::new(1)) {
            c if c.capacity() >= needed => c,
            _ => ImportCache::new(needed),
        };
        let (frames, dropped, errors) = (st.frames, st.dropped, st.errors);
        *st = State {
            frames,
            dropped,
            errors,
            ..State::new(configured, cache)
        };
        Ok(())
    }

    /// Closes the camera on the libcamera thread (idempotent).
    fn close(&mut self) {
        let key = {
            let mut st = self.shared.lock();
            if !st.open {
                return;
            }
            st.open = false;
            st.streaming = false;
            st.cache.invalidate();
            st.key
        };
        let (reply, answer) = sync_channel(1);
        if self.shared.worker.send(Cmd::Close(key, reply)).is_ok() {
            let _ = answer.recv();
        }
    }
}

impl Drop for LibcameraSource {
    fn drop(&mut self) {
        self.close();
    }
}

impl FrameSource for LibcameraSource {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        let deadline = Instant::now().checked_add(timeout);
        {
            let st = self.shared.lock();
            if !st.open || !st.streaming {
                return Err(CaptureError::NotStreaming {
                    path: self.shared.name.clone(),
                });
            }
            if st.slots.iter().all(|s| s.held) {
                return Err(CaptureError::NoFreeBuffer {
                    path: self.shared.name.clone(),
                    buffers: st.slots.len(),
                });
            }
        }
        let got = match deadline {
            Some(d) => self
                .completions
                .recv_timeout(d.saturating_duration_since(Instant::now())),
            None => self
                .completions
                .recv()
                .map_err(|_| RecvTimeoutError::Disconnected),
        };
        match got {
            Ok(c) => self.shared.frame(c, Instant::now()),
            Err(RecvTimeoutError::Timeout) => Err(CaptureError::Timeout {
                path: self.shared.name.clone(),
                timeout,
            }),
            Err(RecvTimeoutError::Disconnected) => Err(gone("receive a frame", Errno::EPIPE)),
        }
    }

    fn stream_format(&self) -> &StreamFormat {
        &self.format
    }

    fn stats(&self) -> StreamStats {
        let st = self.shared.lock();
        StreamStats {
            frames: st.frames,
            dropped: st.dropped,
            buffer_errors: st.errors,
            buffers: st.slots.len(),
            planes: st.format.planes.len(),
            cache: st.cache.stats(),
        }
    }

    fn name(&self) -> &Path {
        &self.shared.name
    }
}
