//! The libcamera thread: one per process, owning the `CameraManager` and every
//! acquired camera. libcamera allows a single `CameraManager` per process (a
//! second one aborts), and its camera objects are not `Send`; so every call
//! goes through this thread as a [`Cmd`] and the sources talk to it over
//! channels. Completed requests come back on libcamera's own thread, are
//! handed here as [`Cmd::Completed`] and forwarded to the source as an
//! [`Event`]; the request waits here until its frame drops
//! ([`Cmd::Requeue`]) and is then reused and queued again.
//!
//! The manager is started when a command needs it and stopped again as soon
//! as no camera is open, so a process that closed its cameras holds none of
//! libcamera's file descriptors.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use libcamera::camera_manager::CameraManager;
use libcamera::request::Request;
use nix::errno::Errno;

use super::camera::{OpenCamera, Slot};
use super::events::{CamKey, Configured, Event};
use super::setup::{configure, describe};
use super::{call_failed, LibcameraCamera, LibcameraConfig, LIBCAMERA};
use crate::frame::stats::monotonic_now;
use crate::{CaptureError, Result};

/// What a source asks of the libcamera thread.
pub(crate) enum Cmd {
    /// List the cameras.
    Enumerate(SyncSender<Result<Vec<LibcameraCamera>>>),
    /// Acquire and configure a camera, allocate its buffers, and start it
    /// with every request queued.
    Open {
        config: LibcameraConfig,
        events: Sender<Event>,
        reply: SyncSender<Result<Configured>>,
    },
    /// Start capturing, queueing the requests of these buffers.
    Start(CamKey, Vec<usize>, SyncSender<Result<()>>),
    /// Stop capturing (libcamera cancels the queued requests).
    Stop(CamKey, SyncSender<Result<()>>),
    /// Buffer `index` is free: queue its request when streaming.
    Requeue(CamKey, usize),
    /// Stop and release the camera, and the manager when it was the last one.
    Close(CamKey, SyncSender<()>),
    /// libcamera completed a request (sent from libcamera's thread), at this
    /// `CLOCK_MONOTONIC` time.
    Completed(CamKey, Request, Duration),
    /// libcamera said the camera was disconnected (from libcamera's thread).
    Disconnected(CamKey),
}

/// The running thread: its sender and handle.
static WORKER: Mutex<Option<(Sender<Cmd>, JoinHandle<()>)>> = Mutex::new(None);

/// The thread's sender; the thread is started on first use, and again if it
/// ended (it catches panics of commands, so only a panic while unwinding ends it).
pub(crate) fn worker() -> Result<Sender<Cmd>> {
    let mut w = WORKER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((tx, handle)) = w.as_ref() {
        if !handle.is_finished() {
            return Ok(tx.clone());
        }
    }
    let (tx, rx) = channel();
    let own = tx.clone();
    let handle = std::thread::Builder::new()
        .name("zerocam-libcamera".into())
        .spawn(move || Worker::new(own, rx).run())
        .map_err(|e| gone("start the libcamera thread", errno_of(&e)))?;
    *w = Some((tx.clone(), handle));
    Ok(tx)
}

/// The error for a libcamera thread that could not be started or reached.
pub(crate) fn gone(operation: &'static str, errno: Errno) -> CaptureError {
    call_failed(LIBCAMERA, operation, errno)
}

/// The errno of an `io::Error` from the libcamera crate (EIO when it has none).
pub(crate) fn errno_of(e: &io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(Errno::EIO as i32))
}

struct Worker {
    /// Dropped before the manager, which no camera may outlive (`OpenCamera::active`).
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
                // Ends only if every sender is gone, which the own one prevents.
                None => match self.rx.recv() {
                    Ok(cmd) => cmd,
                    Err(_) => return,
                },
            };
            // A panic in a command (the libcamera crate unwraps internally)
            // fails that command (its reply is dropped: the caller sees EPIPE),
            // not every later one.
            let _ = catch_unwind(AssertUnwindSafe(|| self.handle(cmd)));
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
                Ok(Cmd::Disconnected(key)) if !self.cameras.contains_key(&key) => {}
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
                events,
                reply,
            } => {
                let r = self.open(&config, events);
                if r.is_err() {
                    // A camera that failed after queueing was dropped: its
                    // cancelled requests must not outlive the manager.
                    self.drain_stale();
                }
                self.release_manager_if_idle();
                let _ = reply.send(r);
            }
            Cmd::Start(key, queue, reply) => {
                let _ = reply.send(self.with(key, |cam| cam.start(&queue)));
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
                // Dropping the camera disconnects its callbacks, then stops it
                // and releases it; requests still queued are dropped inside
                // it, each FrameBuffer keeping the allocator's buffers alive
                // through its Arc until then.
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
            Cmd::Disconnected(key) => {
                if let Some(cam) = self.cameras.get_mut(&key) {
                    cam.streaming = false;
                    let _ = cam.events.send(Event::Disconnected);
                }
            }
        }
    }

    fn manager(&mut self) -> Result<&CameraManager> {
        if self.manager.is_none() {
            let m = CameraManager::new().map_err(|e| gone("camera manager start", errno_of(&e)))?;
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

    fn open(&mut self, config: &LibcameraConfig, events: Sender<Event>) -> Result<Configured> {
        let key = self.next_key;
        self.next_key += 1;
        let (own, own_too) = (self.own.clone(), self.own.clone());
        let manager = self.manager()?;
        let (mut active, stream, allocator, buffers, configured) = configure(manager, config)?;
        active.on_request_completed(move |request| {
            let _ = own.send(Cmd::Completed(key, request, monotonic_now()));
        });
        active.on_disconnected(move || {
            let _ = own_too.send(Cmd::Disconnected(key));
        });
        let name = configured.name.clone();
        let mut slots = Vec::with_capacity(buffers.len());
        let lc_error = |operation, errno| call_failed(&name, operation, errno);
        for (index, buffer) in buffers.into_iter().enumerate() {
            let mut request = active
                .create_request(Some(index as u64))
                .ok_or_else(|| lc_error("create request", Errno::ENOMEM))?;
            request
                .add_buffer(&stream, buffer)
                .map_err(|e| lc_error("add buffer to request", errno_of(&e)))?;
            slots.push(Slot::new(request));
        }
        let all: Vec<usize> = (0..slots.len()).collect();
        let mut cam = OpenCamera {
            slots,
            _allocator: allocator,
            stream,
            events,
            streaming: false,
            name,
            active,
        };
        cam.start(&all)?;
        self.cameras.insert(key, cam);
        Ok(Configured { key, ..configured })
    }
}
