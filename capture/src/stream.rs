//! [`Stream`]: a V4L2 capture stream — buffers in one of two modes, queued and
//! dequeued as [`Frame`]s whose tensors come from the import cache.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use zerocam_cache::ImportCache;

use crate::buffers::{allocate_planes, export_planes};
use crate::frame::{cache_capacity, SequenceTracker};
use crate::queue::{Shared, Slot, State};
use crate::v4l2::{ioctl, raw};
use crate::{
    ArgumentError, CaptureError, Device, Frame, FrameSource, Result, StreamFormat, StreamStats,
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

/// How to set up a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamConfig {
    /// Buffers to request (at least 2; the driver may grant more).
    pub buffers: u32,
    /// The buffer mode.
    pub mode: BufferMode,
    /// Import cache entries; default: enough for every buffer plane twice.
    pub cache_capacity: Option<usize>,
    /// DMA heap of the `DmaBuf` pool (default: zerocam-tensor's default heap).
    pub dma_heap: Option<String>,
}

impl Default for StreamConfig {
    fn default() -> StreamConfig {
        StreamConfig {
            buffers: 4,
            mode: BufferMode::Mmap,
            cache_capacity: None,
            dma_heap: None,
        }
    }
}

/// A V4L2 capture stream. Made by [`Stream::new`], running until stopped or
/// dropped; frames come from [`FrameSource::next_frame`].
#[derive(Debug)]
pub struct Stream {
    shared: Arc<Shared>,
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

impl Stream {
    /// Requests `config.buffers` buffers in `config.mode` for the device's
    /// current format and starts streaming.
    ///
    /// # Errors
    /// [`CaptureError::InvalidArgument`] for fewer than 2 buffers,
    /// [`CaptureError::TooFewBuffers`] when the driver grants fewer,
    /// [`CaptureError::UnsupportedMode`] when the driver or the machine cannot
    /// do the buffer mode (no DMA heap for `DmaBuf`), ioctl failures.
    pub fn new(device: Device, config: StreamConfig) -> Result<Stream> {
        if config.buffers < 2 {
            return Err(ArgumentError::TooFewBuffers(config.buffers).into());
        }
        let format = device.format()?;
        let buf_type = device.info().api.buf_type();
        let memory = config.mode.memory();
        let path = device.path().to_path_buf();
        let req = ioctl::reqbufs(device.fd(), buf_type, memory, config.buffers).map_err(
            |errno| match (config.mode, errno) {
                (BufferMode::DmaBuf, Errno::EINVAL) => CaptureError::UnsupportedMode {
                    path: path.clone(),
                    mode: config.mode.name(),
                    reason: "the driver refuses V4L2_MEMORY_DMABUF".into(),
                },
                _ => device.ioctl_error("VIDIOC_REQBUFS")(errno),
            },
        )?;
        if req.count < 2 {
            return Err(CaptureError::TooFewBuffers {
                path,
                requested: config.buffers,
                granted: req.count,
            });
        }
        let mut slots = Vec::with_capacity(req.count as usize);
        for index in 0..req.count {
            let planes = match config.mode {
                BufferMode::Mmap => export_planes(&device, &format, buf_type, index)?,
                BufferMode::DmaBuf => allocate_planes(&device, &format, &config, index)?,
            };
            slots.push(Slot::new(planes));
        }
        let capacity = config
            .cache_capacity
            .unwrap_or_else(|| cache_capacity(slots.len(), format.planes.len()));
        let shared = Arc::new(Shared {
            format,
            buf_type,
            mode: config.mode,
            state: Mutex::new(State {
                slots,
                streaming: false,
                queued: 0,
                cache: ImportCache::new(capacity),
                sequence: SequenceTracker::default(),
                frames: 0,
                dropped: 0,
                errors: 0,
                requeue_error: None,
            }),
            device,
        });
        let stream = Stream { shared };
        stream.start()?;
        Ok(stream)
    }

    /// Queues every buffer the caller does not hold and starts streaming (no-op
    /// when running). On failure whatever was queued is cancelled, so `start`
    /// can be tried again.
    pub fn start(&self) -> Result<()> {
        let mut st = self.shared.lock();
        self.shared.start(&mut st)
    }

    /// Stops streaming (`VIDIOC_STREAMOFF`): the driver gives back every buffer,
    /// and the import cache is invalidated. Frames held stay valid; dropped after
    /// the next [`start`](Stream::start), their buffers are queued again.
    pub fn stop(&self) -> Result<()> {
        let mut st = self.shared.lock();
        self.shared.stop(&mut st)
    }

    /// The device being captured from.
    pub fn device(&self) -> &Device {
        &self.shared.device
    }

    /// The buffer mode.
    pub fn mode(&self) -> BufferMode {
        self.shared.mode
    }

    /// Stops the stream, frees its buffers (`VIDIOC_REQBUFS` 0) and gives the
    /// device back, e.g. to change the format.
    ///
    /// # Errors
    /// [`CaptureError::FramesHeld`] while frames are out (the stream comes back
    /// in the error, untouched); a failed `STREAMOFF` (the stream comes back) or
    /// `REQBUFS` (it does not).
    pub fn into_device(self) -> Result<Device, IntoDeviceError> {
        let held = Arc::strong_count(&self.shared) - 1;
        if held > 0 {
            let error = CaptureError::FramesHeld {
                path: self.shared.path().to_path_buf(),
                held,
            };
            return Err(IntoDeviceError {
                stream: Some(self),
                error,
            });
        }
        if let Err(error) = self.stop() {
            return Err(IntoDeviceError {
                stream: Some(self),
                error,
            });
        }
        let shared = Arc::clone(&self.shared);
        drop(self);
        // Frames are only made by `next_frame(&mut self)`, so with none out
        // (checked above) this is the last reference.
        let shared = match Arc::try_unwrap(shared) {
            Ok(s) => s,
            Err(shared) => {
                let error = CaptureError::FramesHeld {
                    path: shared.path().to_path_buf(),
                    held: Arc::strong_count(&shared) - 1,
                };
                return Err(IntoDeviceError {
                    stream: Some(Stream { shared }),
                    error,
                });
            }
        };
        let Shared {
            device,
            mode,
            buf_type,
            state,
            ..
        } = shared;
        drop(state); // exported fds, pool and cache go before the buffers are freed
        ioctl::reqbufs(device.fd(), buf_type, mode.memory(), 0).map_err(|errno| {
            IntoDeviceError {
                stream: None,
                error: device.ioctl_error("VIDIOC_REQBUFS")(errno),
            }
        })?;
        Ok(device)
    }
}

impl FrameSource for Stream {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        let sh = &self.shared;
        let mut since = Instant::now();
        let deadline = since.checked_add(timeout);
        let timed_out = || CaptureError::Timeout {
            path: sh.path().to_path_buf(),
            timeout,
        };
        loop {
            {
                let mut st = sh.lock();
                if let Some(e) = st.requeue_error.take() {
                    return Err(e);
                }
                if !st.streaming {
                    return Err(CaptureError::NotStreaming {
                        path: sh.path().to_path_buf(),
                    });
                }
                sh.queue_pending(&mut st)?;
                if st.queued == 0 {
                    return Err(CaptureError::NoFreeBuffer {
                        path: sh.path().to_path_buf(),
                        buffers: st.slots.len(),
                    });
                }
            }
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
        &self.shared.format
    }

    fn stats(&self) -> StreamStats {
        let st = self.shared.lock();
        StreamStats {
            frames: st.frames,
            dropped: st.dropped,
            buffer_errors: st.errors,
            buffers: st.slots.len(),
            planes: self.shared.format.planes.len(),
            cache: st.cache.stats(),
        }
    }

    fn name(&self) -> &Path {
        self.shared.path()
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
            Err(errno) => return Err(device.ioctl_error("poll")(errno)),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        // Nothing to report to: a failed STREAMOFF leaves the fd to close.
        let _ = self.shared.stop(&mut st);
    }
}
