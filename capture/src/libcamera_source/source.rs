//! [`LibcameraSource`], and listing libcamera's cameras.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use nix::errno::Errno;
use zerocam_cache::ImportCache;

use super::events::{Configured, Event};
use super::frames::Shared;
use super::slots::State;
use super::worker::{gone, worker, Cmd};
use super::{LibcameraCamera, LibcameraConfig};
use crate::frame::slot::cache_capacity;
use crate::{ArgumentError, CaptureError, Frame, FrameSource, Result, StreamFormat, StreamStats};

/// Every libcamera camera present, with its formats and sizes (empty when
/// there is none).
///
/// # Errors
/// [`CaptureError::Libcamera`] when libcamera's camera manager cannot start.
pub fn libcamera_cameras() -> Result<Vec<LibcameraCamera>> {
    ask(&worker()?, "list cameras", Cmd::Enumerate)?
}

/// Sends the libcamera thread the command `make` builds around a reply
/// channel, and waits for the reply; a thread gone is an `EPIPE` error
/// naming `operation`.
fn ask<T>(
    worker: &Sender<Cmd>,
    operation: &'static str,
    make: impl FnOnce(SyncSender<T>) -> Cmd,
) -> Result<T> {
    let (reply, answer) = sync_channel(1);
    let lost = || gone(operation, Errno::EPIPE);
    worker.send(make(reply)).map_err(|_| lost())?;
    answer.recv().map_err(|_| lost())
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
    events: Receiver<Event>,
    worker: Sender<Cmd>,
    id: String,
    adjustments: Vec<String>,
}

/// Asks the libcamera thread to open `config`, with events into a new channel.
fn open_camera(
    worker: &Sender<Cmd>,
    config: &LibcameraConfig,
) -> Result<(Configured, Receiver<Event>)> {
    if config.buffers < 2 {
        return Err(ArgumentError::TooFewBuffers(config.buffers).into());
    }
    let (events, received) = channel();
    let open = |reply| Cmd::Open {
        config: config.clone(),
        events,
        reply,
    };
    Ok((ask(worker, "open a camera", open)??, received))
}

/// Closes camera `key` on the libcamera thread and waits until it is.
fn close_camera(worker: &Sender<Cmd>, key: super::events::CamKey) {
    let _ = ask(worker, "close a camera", |reply| Cmd::Close(key, reply));
}

/// What the source and its frames share for a camera just opened (closed
/// again on failure).
fn new_shared(worker: &Sender<Cmd>, configured: Configured) -> Result<Shared> {
    let Configured {
        key,
        name,
        format,
        buffers,
        ..
    } = configured;
    let name = PathBuf::from(name);
    let cache = ImportCache::new(cache_capacity(buffers.len(), format.planes.len()));
    let state = match State::new(key, buffers, cache) {
        Ok(st) => st,
        Err(source) => {
            close_camera(worker, key);
            return Err(CaptureError::Tensor { path: name, source });
        }
    };
    let to_worker = worker.clone();
    let requeue = Box::new(move |key, index| to_worker.send(Cmd::Requeue(key, index)).is_ok());
    Ok(Shared::new(name, format, requeue, state))
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
        let worker = worker()?;
        let (configured, events) = open_camera(&worker, &config)?;
        let id = configured.id.clone();
        let adjustments = configured.adjustments.clone();
        let shared = new_shared(&worker, configured)?;
        Ok(LibcameraSource {
            shared: Arc::new(shared),
            events,
            worker,
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

    fn call(&self, make: impl FnOnce(SyncSender<Result<()>>) -> Cmd) -> Result<()> {
        ask(&self.worker, "reach the libcamera thread", make)?
    }

    /// Starts capturing again after [`stop`](Self::stop): every buffer whose
    /// frame is not held is queued (one whose tensor is still mapped waits
    /// until the map drops). Sequence and timestamp checks start over.
    ///
    /// # Errors
    /// [`CaptureError::Libcamera`] when libcamera refuses to start or queue,
    /// [`CaptureError::NotStreaming`] after a failed reconfigure,
    /// [`CaptureError::Disconnected`] once the camera went away.
    pub fn start(&mut self) -> Result<()> {
        // Locked throughout: a frame dropping meanwhile waits, then queues.
        let mut st = self.shared.lock();
        if st.disconnected {
            return Err(self.shared.disconnected());
        }
        if !st.open {
            return Err(CaptureError::NotStreaming {
                path: self.shared.name.clone(),
            });
        }
        if st.streaming {
            return Ok(());
        }
        let key = st.key;
        let queue = self.shared.prepare_start(&mut st);
        if let Err(e) = self.call(|reply| Cmd::Start(key, queue, reply)) {
            self.shared.stopped(&mut st);
            return Err(e);
        }
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
        let mut st = self.shared.lock();
        if !st.streaming {
            return Ok(());
        }
        let key = st.key;
        let stopped = self.call(|reply| Cmd::Stop(key, reply));
        // libcamera has given every buffer back: the camera's borrows end.
        self.shared.stopped(&mut st);
        while let Ok(event) = self.events.try_recv() {
            match event {
                Event::Completion(c) => self.shared.give_back(&mut st, c.index),
                Event::Disconnected => st.disconnected = true,
            }
        }
        stopped
    }

    /// Configures the same camera anew (format, size, buffers from `config`;
    /// its `camera` is ignored): stops, releases the buffers, and starts with
    /// the new ones. The import cache is new; its counters (and the frame
    /// counters) go on from the old ones. On failure the source is left
    /// closed (frames give [`CaptureError::NotStreaming`], `stats().buffers`
    /// is 0, the old buffers are released) until a reconfigure succeeds.
    ///
    /// # Errors
    /// [`CaptureError::FramesHeld`] while frames are out (nothing changes
    /// then), and [`open`](Self::open)'s errors.
    pub fn reconfigure(&mut self, config: LibcameraConfig) -> Result<()> {
        let held = self.shared.lock().held();
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
        let (configured, events) = open_camera(&self.worker, &config)?;
        let adjustments = configured.adjustments.clone();
        let shared = new_shared(&self.worker, configured)?;
        shared.lock().go_on_from(&self.shared.lock());
        // No frame of the old configuration is out: nothing uses it any more.
        self.shared = Arc::new(shared);
        self.adjustments = adjustments;
        self.events = events;
        Ok(())
    }

    /// Closes the camera on the libcamera thread, then releases the buffers
    /// (idempotent).
    fn close(&mut self) {
        let mut st = self.shared.lock();
        if !st.open {
            return;
        }
        close_camera(&self.worker, st.key);
        st.open = false;
        self.shared.stopped(&mut st);
        st.slots.clear();
    }
}

impl Drop for LibcameraSource {
    fn drop(&mut self) {
        self.close();
    }
}

impl FrameSource for LibcameraSource {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        self.shared.next_frame(&self.events, timeout)
    }

    fn stream_format(&self) -> &StreamFormat {
        &self.shared.format
    }

    fn stats(&self) -> StreamStats {
        let st = self.shared.lock();
        let planes = self.shared.format.planes.len();
        StreamStats::new(st.counters, st.slots.len(), planes, st.cache_stats())
    }

    fn name(&self) -> &Path {
        &self.shared.name
    }
}
