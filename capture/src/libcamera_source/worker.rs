//! The libcamera thread: one per process, owning the `CameraManager` and every
//! acquired camera. libcamera allows a single `CameraManager` per process (a
//! second one aborts), and its camera objects are not `Send`; so every call
//! goes through this thread as a [`Cmd`] and the sources talk to it over
//! channels. Completed requests come back on libcamera's own thread, are
//! handed here as [`Cmd::Completed`] and forwarded to the source as a
//! [`Completion`]; the request waits here until its frame drops
//! ([`Cmd::Requeue`]) and is then reused and queued again.
//!
//! The manager is started when a command needs it and stopped again as soon
//! as no camera is open, so a process that closed its cameras holds none of
//! libcamera's file descriptors.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::mpsc::{channel, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::OnceLock;
use std::time::Duration;

use libcamera::camera::ActiveCamera;
use libcamera::camera_manager::CameraManager;
use libcamera::framebuffer::{AsFrameBuffer, FrameMetadataStatus};
use libcamera::framebuffer_allocator::{FrameBuffer, FrameBufferAllocator};
use libcamera::request::{Request, RequestStatus, ReuseFlag};
use libcamera::stream::Stream;
use nix::errno::Errno;

use super::metadata::RawMetadata;
use super::setup::{configure, describe, Configured};
use super::{LibcameraCamera, LibcameraConfig, LIBCAMERA};
use crate::{CaptureError, Result};

/// A camera opened by the thread.
pub(crate) type CamKey = u64;

/// What a source asks of the libcamera thread.
pub(crate) enum Cmd {
    /// List the cameras.
    Enumerate(SyncSender<Result<Vec<LibcameraCamera>>>),
    /// Acquire and configure a camera, allocate its buffers, and start it.
    Open {
        config: LibcameraConfig,
        completions: Sender<Completion>,
        reply: SyncSender<Result<Configured>>,
    },
    /// Start capturing, queueing every request not held by a frame.
    Start(CamKey, SyncSender<Result<()>>),
    /// Stop capturing (libcamera cancels the queued requests).
    Stop(CamKey, SyncSender<Result<()>>),
    /// Buffer `index`'s frame dropped: queue its request again when streaming.
    Requeue(CamKey, usize),
    /// Stop and release the camera, and the manager when it was the last one.
    Close(CamKey, SyncSender<()>),
    /// libcamera completed a request (sent from libcamera's thread), at this
    /// `CLOCK_MONOTONIC` time.
    Completed(CamKey, Request, Duration),
}

/// How a request came back.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A frame, with what libcamera said about it.
    Frame(RawMetadata),
    /// libcamera completed it without a frame.
    Failed(&'static str),
    /// Queueing it again failed.
    QueueFailed(Errno),
}

/// A completed (or failed) request of buffer `index`, for the source.
#[derive(Debug)]
pub(crate) struct Completion {
    pub index: usize,
    pub outcome: Outcome,
    /// `CLOCK_MONOTONIC` when libcamera completed it.
    pub completed: Duration,
}

/// The thread's sender, started on first use.
pub(crate) fn worker() -> Result<Sender<Cmd>> {
    static WORKER: OnceLock<std::result::Result<Sender<Cmd>, Errno>> = OnceLock::new();
    WORKER
        .get_or_init(|| {
            let (tx, rx) = channel();
            let own = tx.clone();
            std::thread::Builder::new()
                .name("zerocam-libcamera".into())
                .spawn(move || Worker::new(own, rx).run())
                .map(|_| tx)
                .map_err(|e| errno_of(&e))
        })
        .clone()
        .map_err(|errno| gone("start the libcamera thread", errno))
}

/// The error for a libcamera thread that could not be started or reached.
pub(crate) fn gone(operation: &'static str, errno: Errno) -> CaptureError {
    CaptureError::Libcamera {
        camera: LIBCAMERA.into(),
        operation,
        errno,
    }
}

/// The errno of an `io::Error` from the libcamera crate (EIO when it has none).
pub(crate) fn errno_of(e: &io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(Errno::EIO as i32))
}

/// `CLOCK_MONOTONIC` now.
fn monotonic_now() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(Duration::from)
        .unwrap_or_default()
}

/// Where one buffer's request is.
enum Slot {
    /// In our hands, not queued.
    Idle(Request),
    /// Queued to libcamera (the `ActiveCamera` holds it).
    Queued,
    /// Completed and handed to the source; back with `Requeue`.
    Out(Request),
    /// Lost (a re-queue that failed and gave nothing back cannot happen, but
    /// a slot is never left without a state).
    Gone,
}

/// One acquired camera. Field order is drop order: requests before the
/// allocator, the allocator before the camera.
struct OpenCamera {
    slots: Vec<Slot>,
    _allocator: FrameBufferAllocator,
    stream: Stream,
    completions: Sender<Completion>,
    streaming: bool,
    name: String,
    active: ActiveCamera<'static>,
}

struct Worker {
    /// Dropped before the manager.
    cameras: HashMap<CamKey, OpenCamera>,
    manager: Option<CameraManager>,
    next_key: CamKey,
    own: Sender<Cmd>,
    rx: Receiver<Cmd>,
    /// Commands read while draining a closed camera's completions.
    deferred: VecDeque<Cmd>,
}

impl Worker {
    fn new(own: Sender<Cmd>, rx: Receiver<Cmd>) -> Worker {
        Worker {
            cameras: HashMap::new(),
            manager: None,
            next_key: 1,
            own,
            rx,
            deferred: VecDeque::new(),
        }
    }

    fn run(mut self) {
        loop {
            let cmd = match self.deferred.pop_front() {
                Some(cmd) => cmd,
                // Ends only if every sender is gone, which the static one prevents.
                None => match self.rx.recv() {
                    Ok(cmd) => cmd,
                    Err(_) => return,
                },
            };
            self.handle(cmd);
        }
    }

    /// Drops the completed requests of cameras no longer open that are
    /// waiting in the channel (so that none outlives the manager), keeping
    /// every other command for later.
    fn drain_stale(&mut self) {
        loop {
            match self.rx.try_recv() {
                Ok(Cmd::Completed(key, request, _)) if !self.cameras.contains_key(&key) => {
                    drop(request);
                }
                Ok(cmd) => self.deferred.push_back(cmd),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
            }
        }
    }

    fn handle(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Enumerate(reply) => {
                let r = self.manager().map(describe);
                self.release_manager_if_idle();
                let _ = reply.send(r);
            }
            Cmd::Open {
                config,
                completions,
                reply,
            } => {
                let r = self.open(&config, completions);
                self.release_manager_if_idle();
                let _ = reply.send(r);
            }
            Cmd::Start(key, reply) => {
                let _ = reply.send(self.with(key, OpenCamera::start));
            }
            Cmd::Stop(key, reply) => {
                let _ = reply.send(self.with(key, OpenCamera::stop));
            }
            Cmd::Requeue(key, index) => {
                if let Some(cam) = self.cameras.get_mut(&key) {
                    cam.requeue(index);
                }
            }
            Cmd::Close(key, reply) => {
                // Dropping the camera disconnects its completion callback, then
                // stops it (its queued requests are cancelled and dropped with
                // it) and releases it; its buffers go when their requests do.
                drop(self.cameras.remove(&key));
                self.drain_stale();
                self.release_manager_if_idle();
                let _ = reply.send(());
            }
            Cmd::Completed(key, request, at) => match self.cameras.get_mut(&key) {
                Some(cam) => cam.completed(request, at),
                // A camera closed since: nothing waits for the request.
                None => drop(request),
            },
        }
    }

    fn manager(&mut self) -> Result<&CameraManager> {
        if self.manager.is_none() {
            let m = CameraManager::new().map_err(|e| CaptureError::Libcamera {
                camera: LIBCAMERA.into(),
                operation: "camera manager start",
                errno: errno_of(&e),
            })?;
            self.manager = Some(m);
        }
        self.manager
            .as_ref()
            .ok_or_else(|| gone("camera manager start", Errno::EIO))
    }

    fn release_manager_if_idle(&mut self) {
        if self.cameras.is_empty() {
            self.manager = None;
        }
    }

    fn with(&mut self, key: CamKey, f: impl FnOnce(&mut OpenCamera) -> Result<()>) -> Result<()> {
        match self.cameras.get_mut(&key) {
            Some(cam) => f(cam),
            None => Err(gone("use of a closed camera", Errno::ENODEV)),
        }
    }

    fn open(
        &mut self,
        config: &LibcameraConfig,
        completions: Sender<Completion>,
    ) -> Result<Configured> {
        let key = self.next_key;
        self.next_key += 1;
        let own = self.own.clone();
        let manager = self.manager()?;
        let (mut active, stream, allocator, buffers, configured) = configure(manager, config)?;
        active.on_request_completed(move |request| {
            let _ = own.send(Cmd::Completed(key, request, monotonic_now()));
        });
        let name = configured.name.clone();
        let mut slots = Vec::with_capacity(buffers.len());
        let lc_error = |operation, errno| CaptureError::Libcamera {
            camera: name.clone(),
            operation,
            errno,
        };
        for (index, buffer) in buffers.into_iter().enumerate() {
            let mut request = active
                .create_request(Some(index as u64))
                .ok_or_else(|| lc_error("create request", Errno::ENOMEM))?;
            request
                .add_buffer(&stream, buffer)
                .map_err(|e| lc_error("add buffer to request", errno_of(&e)))?;
            slots.push(Slot::Idle(request));
        }
        let mut cam = OpenCamera {
            slots,
            _allocator: allocator,
            stream,
            completions,
            streaming: false,
            name,
            active,
        };
        cam.start()?;
        self.cameras.insert(key, cam);
        Ok(Configured { key, ..configured })
    }
}

impl OpenCamera {
    fn error(&self, operation: &'static str) -> impl Fn(Errno) -> CaptureError + '_ {
        move |errno| CaptureError::Libcamera {
            camera: self.name.clone(),
            operation,
            errno,
        }
    }

    fn start(&mut self) -> Result<()> {
        if self.streaming {
            return Ok(());
        }
        self.active
            .start(None)
            .map_err(|e| self.error("start")(errno_of(&e)))?;
        self.streaming = true;
        for index in 0..self.slots.len() {
            if matches!(self.slots[index], Slot::Idle(_)) {
                if let Err(errno) = self.queue(index) {
                    let _ = self.stop();
                    return Err(self.error("queue request")(errno));
                }
            }
        }
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        if !self.streaming {
            return Ok(());
        }
        self.streaming = false;
        // libcamera completes every queued request as cancelled before stop()
        // returns; they arrive as Cmd::Completed and become Idle.
        self.active
            .stop()
            .map_err(|e| self.error("stop")(errno_of(&e)))
    }

    /// Queues the request of slot `index` (Idle or Out); it stays Idle on failure.
    fn queue(&mut self, index: usize) -> std::result::Result<(), Errno> {
        let Some(slot) = self.slots.get_mut(index) else {
            return Err(Errno::EINVAL);
        };
        let mut request = match std::mem::replace(slot, Slot::Gone) {
            Slot::Idle(r) | Slot::Out(r) => r,
            other => {
                *slot = other;
                return Ok(());
            }
        };
        request.reuse(ReuseFlag::REUSE_BUFFERS);
        match self.active.queue_request(request) {
            Ok(()) => {
                self.slots[index] = Slot::Queued;
                Ok(())
            }
            Err((request, e)) => {
                self.slots[index] = Slot::Idle(request);
                Err(errno_of(&e))
            }
        }
    }

    fn requeue(&mut self, index: usize) {
        if !matches!(self.slots.get(index), Some(Slot::Out(_))) {
            return;
        }
        if !self.streaming {
            if let Some(slot) = self.slots.get_mut(index) {
                if let Slot::Out(r) = std::mem::replace(slot, Slot::Gone) {
                    *slot = Slot::Idle(r);
                }
            }
            return;
        }
        if let Err(errno) = self.queue(index) {
            let _ = self.completions.send(Completion {
                index,
                outcome: Outcome::QueueFailed(errno),
                completed: monotonic_now(),
            });
        }
    }

    fn completed(&mut self, request: Request, at: Duration) {
        let Some(index) = usize::try_from(request.cookie())
            .ok()
            .filter(|&i| i < self.slots.len())
        else {
            return;
        };
        let outcome = match request.status() {
            RequestStatus::Complete => match request.buffer::<FrameBuffer>(&self.stream) {
                Some(fb) => raw_metadata(fb),
                None => Outcome::Failed("no buffer in the completed request"),
            },
            RequestStatus::Cancelled => Outcome::Failed("cancelled"),
            RequestStatus::Pending => Outcome::Failed("completed while pending"),
        };
        if !self.streaming {
            // Stopped: a cancelled request, or a frame that completed as the
            // stream stopped; nobody asked for it.
            self.slots[index] = Slot::Idle(request);
            return;
        }
        self.slots[index] = Slot::Out(request);
        let sent = self.completions.send(Completion {
            index,
            outcome,
            completed: at,
        });
        if sent.is_err() {
            // The source is gone without closing (cannot happen: it closes on drop).
            self.requeue(index);
        }
    }
}

/// What libcamera wrote into a completed buffer's `FrameMetadata`, if anything.
fn raw_metadata(fb: &impl AsFrameBuffer) -> Outcome {
    match fb.metadata() {
        // The libcamera crate marks unwritten metadata (its status sentinel):
        // libcamera 0.4.0's virtual pipeline handler writes none.
        None => Outcome::Frame(RawMetadata::default()),
        Some(m) if m.status() == FrameMetadataStatus::Error => Outcome::Failed("buffer error"),
        Some(m) if m.status() == FrameMetadataStatus::Cancelled => Outcome::Failed("cancelled"),
        Some(m) => Outcome::Frame(RawMetadata {
            sequence: Some(m.sequence()),
            timestamp_ns: Some(m.timestamp()),
            bytes_used: Some(
                m.planes()
                    .into_iter()
                    .map(|p| p.bytes_used as usize)
                    .collect(),
            ),
        }),
    }
}
