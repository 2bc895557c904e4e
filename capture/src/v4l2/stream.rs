//! [`Stream`]: a V4L2 capture stream — buffers in one of two modes, queued and
//! dequeued as [`Frame`]s whose tensors come from the import cache.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::frame::lock;
use crate::frame::slot::{cache_capacity, read_only_planes_of};
use crate::v4l2::buffers::{set_up, Buffers};
use crate::v4l2::ioctl::{calls, raw};
use crate::v4l2::queue::Queue;
use crate::v4l2::BufferPlan;
use crate::{
    CaptureError, Device, Frame, FrameSource, Result, SharedPlane, StreamFormat, StreamStats,
};

/// Where a stream's buffers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BufferMode {
    /// The driver allocates (`V4L2_MEMORY_MMAP`); each buffer plane is exported
    /// once with `VIDIOC_EXPBUF` and its dma-buf fd kept for the stream's life.
    #[default]
    Mmap,
    /// zerocam allocates from the DMA heap and queues the dma-bufs
    /// (`V4L2_MEMORY_DMABUF`); the pool survives stop/start.
    DmaBuf,
}

impl BufferMode {
    pub(crate) fn memory(self) -> u32 {
        match self {
            BufferMode::Mmap => raw::MEMORY_MMAP,
            BufferMode::DmaBuf => raw::MEMORY_DMABUF,
        }
    }

    /// The name used on the command line (`mmap`, `dmabuf`).
    pub fn name(self) -> &'static str {
        match self {
            BufferMode::Mmap => "mmap",
            BufferMode::DmaBuf => "dmabuf",
        }
    }
}

/// How to set up a stream. The buffer count is derived from `buffers`,
/// `hold` and the driver's minimum as [`BufferPlan`] says;
/// [`Stream::buffer_plan`] says what was chosen and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamConfig {
    /// Buffers to ask for at least (2 or more; more are asked when the
    /// driver's minimum plus `hold` is larger, at most [`MAX_BUFFERS`](crate::v4l2::MAX_BUFFERS)).
    pub buffers: u32,
    /// Frames the caller holds at once (at least 1): a frame is held from
    /// `next_frame` until it drops. Holding more than this may leave the
    /// driver with fewer buffers queued than it needs (a stall or drops).
    pub hold: u32,
    /// The buffer mode.
    pub mode: BufferMode,
    /// Import cache entries; default: enough for every buffer plane twice.
    pub cache_capacity: Option<usize>,
    /// DMA heap of the `DmaBuf` pool (default: zerocam-tensor's default heap).
    pub dma_heap: Option<String>,
    /// Make the buffers read-only for the CPU, so they can be shared with
    /// other processes that must not write them
    /// ([`share::Publisher`](crate::share::Publisher)): MMAP buffers are
    /// exported `O_RDONLY` (`VIDIOC_EXPBUF`), the DMABUF pool is allocated
    /// read-only ([`allocate_read_only`](zerocam_tensor::allocate_read_only)).
    /// The driver still writes them; a writable map of a frame's tensor is
    /// then `Error::ReadOnly`. Default `false`.
    pub read_only: bool,
}

impl Default for StreamConfig {
    /// 4 buffers at least, 1 frame held, MMAP.
    fn default() -> StreamConfig {
        StreamConfig {
            buffers: 4,
            hold: 1,
            mode: BufferMode::Mmap,
            cache_capacity: None,
            dma_heap: None,
            read_only: false,
        }
    }
}

/// A V4L2 capture stream. Made by [`Stream::new`], running until stopped or
/// dropped; frames come from [`FrameSource::next_frame`].
///
/// Its life, and what each step costs:
///
/// - [`Stream::new`] takes a [`Device`] whose format is set, asks for the
///   buffers ([`buffer_plan`](Stream::buffer_plan) says how many and why) and
///   starts. On failure the device comes back ([`NewStreamError`]).
/// - [`next_frame`](FrameSource::next_frame) hands out [`Frame`]s; each buffer
///   plane is imported once, on its first frame, and every later frame of it
///   is a cache hit with the same tensor and `BufferIdentity`.
/// - [`stop`](Stream::stop) / [`start`](Stream::start) keep the buffers and
///   the imports: a restart imports nothing (`stats().cache.misses` stays at
///   buffers × planes).
/// - Errors of one frame leave the stream running:
///   [`BufferError`](CaptureError::BufferError) (a flagged buffer, re-queued),
///   [`Timeout`](CaptureError::Timeout),
///   [`NoFreeBuffer`](CaptureError::NoFreeBuffer). Two stop it:
///   [`StreamFailed`](CaptureError::StreamFailed) (the driver's fatal error;
///   `start` recovers) and [`Disconnected`](CaptureError::Disconnected) (every
///   buffer released; nothing recovers).
/// - [`into_device`](Stream::into_device) frees the buffers (the next stream
///   on the device imports anew); dropping the stream stops it, and the last
///   frame out closes everything.
///
/// [`stats`](FrameSource::stats) counts over the stream's life, restarts
/// included ([`StreamStats`]).
#[derive(Debug)]
pub struct Stream {
    queue: Arc<Queue>,
}

/// [`Stream::into_device`] failed; the stream is handed back when it survived.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct IntoDeviceError {
    /// The stream, still usable (it is `None` only when freeing its buffers failed).
    pub stream: Option<Stream>,
    /// What went wrong.
    pub error: CaptureError,
}

/// [`Stream::new`] failed: the device comes back with the error, its buffers
/// freed (`VIDIOC_REQBUFS` 0), so the caller can try another buffer mode,
/// format or count on it without reopening.
///
/// `?` turns it into its [`CaptureError`] (the device is then closed).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct NewStreamError {
    /// The device, as it was given (with whatever format was set on it);
    /// boxed to keep the error small.
    pub device: Box<Device>,
    /// What went wrong.
    #[source]
    pub error: CaptureError,
}

impl From<NewStreamError> for CaptureError {
    fn from(e: NewStreamError) -> CaptureError {
        e.error
    }
}

impl Stream {
    /// Sets up buffers for the device's current format in `config.mode`
    /// (their count: see [`StreamConfig`]) and starts streaming.
    ///
    /// # Errors
    /// The device comes back in every error ([`NewStreamError`]), with one of:
    /// [`CaptureError::InvalidArgument`] for fewer than 2 buffers or a hold of
    /// 0; [`CaptureError::BadFormat`] when the device's format or its buffers
    /// do not fit; [`CaptureError::BufferGrant`] when the driver grants fewer
    /// buffers than its minimum plus the hold (or more than
    /// [`MAX_BUFFERS`](crate::v4l2::MAX_BUFFERS)); [`CaptureError::UnsupportedMode`]
    /// when the driver or the machine cannot do the buffer mode (no DMA heap
    /// for `DmaBuf`); ioctl failures.
    pub fn new(device: Device, config: StreamConfig) -> Result<Stream, NewStreamError> {
        let Buffers {
            format,
            plan,
            slots,
        } = match set_up(&device, &config) {
            Ok(b) => b,
            Err(error) => {
                return Err(NewStreamError {
                    device: Box::new(device),
                    error,
                })
            }
        };
        let capacity = config
            .cache_capacity
            .unwrap_or_else(|| cache_capacity(slots.len(), format.planes.len()));
        let queue = Queue::new(device, format, plan, config.mode, slots, capacity);
        let started = queue.start(&mut queue.lock());
        match started {
            Ok(()) => Ok(Stream {
                queue: Arc::new(queue),
            }),
            // A failed start cancelled what it queued: free the buffers.
            Err(error) => Err(NewStreamError {
                device: Box::new(free_buffers(queue).0),
                error,
            }),
        }
    }

    /// How many buffers the stream asked for, why, and what the driver granted.
    pub fn buffer_plan(&self) -> BufferPlan {
        self.queue.plan
    }

    /// Queues every buffer the caller does not hold and starts streaming (no-op
    /// when running). On failure whatever was queued is cancelled, so `start`
    /// can be tried again.
    pub fn start(&self) -> Result<()> {
        let mut st = self.queue.lock();
        self.queue.start(&mut st)
    }

    /// Stops streaming (`VIDIOC_STREAMOFF`): the driver gives back every buffer.
    /// The buffers stay allocated and the import cache keeps them: after
    /// [`start`](Stream::start) each buffer's frames have the same tensor, fds
    /// and `BufferIdentity` as before, so no buffer is imported again (here or
    /// in a GPU cache downstream). Frames held stay valid; dropped after the
    /// next `start`, their buffers are queued again.
    pub fn stop(&self) -> Result<()> {
        let mut st = self.queue.lock();
        self.queue.stop(&mut st)
    }

    /// The device being captured from.
    pub fn device(&self) -> &Device {
        &self.queue.device
    }

    /// The buffer mode.
    pub fn mode(&self) -> BufferMode {
        self.queue.mode
    }

    /// Stops the stream, frees its buffers (`VIDIOC_REQBUFS` 0) and gives the
    /// device back, e.g. to change the format.
    ///
    /// # Errors
    /// [`CaptureError::FramesHeld`] while frames are out (the stream comes back
    /// in the error, untouched); a failed `STREAMOFF` (the stream comes back) or
    /// `REQBUFS` (it does not).
    pub fn into_device(self) -> Result<Device, IntoDeviceError> {
        if Arc::strong_count(&self.queue) > 1 {
            return Err(self.frames_held());
        }
        if let Err(error) = self.stop() {
            return Err(self.back(error));
        }
        let queue = Arc::clone(&self.queue);
        drop(self);
        // Frames are only made by `next_frame(&mut self)`, so with none out
        // (checked above) this is the last reference.
        let queue = Arc::try_unwrap(queue).map_err(|queue| Stream { queue }.frames_held())?;
        match free_buffers(queue) {
            (device, Ok(())) => Ok(device),
            (_, Err(error)) => Err(IntoDeviceError {
                stream: None,
                error,
            }),
        }
    }

    /// [`into_device`](Stream::into_device) failed with `error`: the stream
    /// comes back in the error.
    fn back(self, error: CaptureError) -> IntoDeviceError {
        IntoDeviceError {
            stream: Some(self),
            error,
        }
    }

    /// [`CaptureError::FramesHeld`], counting the frames that share the queue.
    fn frames_held(self) -> IntoDeviceError {
        let path = self.queue.path().to_path_buf();
        let held = Arc::strong_count(&self.queue) - 1;
        self.back(CaptureError::FramesHeld { path, held })
    }
}

/// Frees a stream's buffers (`VIDIOC_REQBUFS` 0) once no frame refers to them:
/// the exported fds, the pool and the cache go first (a buffer still exported
/// is in use, and the driver would refuse). The device comes back either way.
fn free_buffers(queue: Queue) -> (Device, Result<()>) {
    let Queue {
        device,
        mode,
        state,
        ..
    } = queue;
    drop(state);
    let buf_type = device.info().api.buf_type();
    let freed = calls::reqbufs(device.fd(), buf_type, mode.memory(), 0)
        .map(drop)
        .map_err(|e| {
            e.ioctl_error()
                .into_capture(device.path(), "VIDIOC_REQBUFS")
        });
    (device, freed)
}

impl FrameSource for Stream {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        let sh = &self.queue;
        let mut since = Instant::now();
        let deadline = since.checked_add(timeout);
        let timed_out = || CaptureError::Timeout {
            path: sh.path().to_path_buf(),
            timeout,
        };
        loop {
            sh.ready_to_dequeue()?;
            // The fd is O_NONBLOCK: DQBUF answers EAGAIN (`None`) when no buffer
            // is done, so a frame already ready costs this one ioctl (its
            // overhead counted from the call, or from the last empty try);
            // poll only when none is, then dequeue again.
            if let Some(frame) = sh.dequeue(since)? {
                return Ok(frame);
            }
            if !wait_readable(&sh.device, deadline)? {
                return Err(timed_out());
            }
            // POLLIN, or POLLERR/POLLHUP whose cause DQBUF reports.
            if let Some(frame) = sh.dequeue(Instant::now())? {
                return Ok(frame);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(timed_out());
            }
            since = Instant::now();
        }
    }

    fn stream_format(&self) -> &StreamFormat {
        &self.queue.format
    }

    fn stats(&self) -> StreamStats {
        let st = self.queue.lock();
        let planes = self.queue.format.planes.len();
        StreamStats::new(st.counters, st.slots.len(), planes, st.cache.stats())
    }

    fn name(&self) -> &Path {
        self.queue.path()
    }

    /// The buffer's read-only fds: dups of its planes' fds when the stream
    /// was made with [`StreamConfig::read_only`]; otherwise the driver's
    /// read-write dma-bufs cannot be re-opened read-only, a typed error.
    fn read_only_planes(&self, index: usize) -> Result<Vec<SharedPlane>> {
        let st = lock(&self.queue.state);
        read_only_planes_of(&st.slots, index, self.queue.path())
    }
}

/// Polls the device for a done buffer (`POLLIN`, or `POLLERR`/`POLLHUP` whose
/// cause DQBUF reports) until `deadline`; `false` when it passed first.
fn wait_readable(device: &Device, deadline: Option<Instant>) -> Result<bool> {
    loop {
        let wait = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                PollTimeout::try_from(i32::try_from(left.as_millis()).unwrap_or(i32::MAX))
                    .unwrap_or(PollTimeout::MAX)
            }
            None => PollTimeout::NONE,
        };
        let mut fds = [PollFd::new(device.fd(), PollFlags::POLLIN)];
        match poll(&mut fds, wait) {
            Ok(n) => return Ok(n > 0),
            Err(Errno::EINTR) => continue,
            Err(errno) => return Err(device.ioctl_error("poll")(errno.into())),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let mut st = self.queue.lock();
        // Nothing to report to: a failed STREAMOFF leaves the fd to close.
        let _ = self.queue.stop(&mut st);
    }
}
