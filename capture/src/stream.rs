//! [`Stream`]: a V4L2 capture stream — buffers in one of two modes, queued and
//! dequeued as [`Frame`]s whose tensors come from the import cache.

use std::os::fd::AsFd;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use zerocam_cache::ImportCache;
use zerocam_tensor::{Tensor, TensorMemory};

use crate::frame::{Requeue, SequenceTracker};
use crate::planes::{frame_tensor, Composed, PlaneMemory, PlaneSource};
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
    fn memory(self) -> u32 {
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

#[derive(Debug)]
struct Slot {
    planes: Vec<PlaneMemory>,
    held: bool,
    composed: Composed,
}

#[derive(Debug)]
struct State {
    slots: Vec<Slot>,
    streaming: bool,
    queued: usize,
    cache: ImportCache,
    sequence: SequenceTracker,
    frames: u64,
    dropped: u64,
    errors: u64,
}

#[derive(Debug)]
struct Shared {
    device: Device,
    format: StreamFormat,
    buf_type: u32,
    mode: BufferMode,
    state: Mutex<State>,
}

/// A V4L2 capture stream. Made by [`Stream::new`], running until stopped or
/// dropped; frames come from [`FrameSource::next_frame`].
#[derive(Debug)]
pub struct Stream {
    shared: Arc<Shared>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn path(&self) -> &Path {
        self.device.path()
    }

    /// `VIDIOC_QBUF` of buffer `index`.
    fn queue(&self, st: &mut State, index: usize) -> Result<()> {
        let memory = self.mode.memory();
        let mut b = raw::Buffer::new(self.buf_type, memory, index as u32);
        let mut planes = [raw::Plane::default(); raw::MAX_PLANES];
        ioctl::attach_planes(&mut b, &mut planes);
        if self.mode == BufferMode::DmaBuf {
            let slot = &st.slots[index];
            for (i, p) in slot.planes.iter().enumerate() {
                let fd = p.fd().map_or(-1, |fd| std::os::fd::AsRawFd::as_raw_fd(&fd));
                if self.buf_type == raw::BUF_TYPE_VIDEO_CAPTURE_MPLANE {
                    planes[i].m.fd = fd;
                    planes[i].length = p.length as u32;
                } else {
                    b.m.fd = fd;
                    b.length = p.length as u32;
                }
            }
        }
        ioctl::qbuf(self.device.fd(), &mut b).map_err(self.device.ioctl_error("VIDIOC_QBUF"))?;
        st.queued += 1;
        Ok(())
    }

    fn stop(&self, st: &mut State) -> Result<()> {
        let result = if st.streaming {
            ioctl::stream(self.device.fd(), self.buf_type, false)
                .map_err(self.device.ioctl_error("VIDIOC_STREAMOFF"))
        } else {
            Ok(())
        };
        st.streaming = false;
        st.queued = 0;
        st.cache.invalidate();
        st.sequence.reset();
        for s in &mut st.slots {
            s.composed = Composed::default();
        }
        result
    }

    /// After the device vanished: nothing is queued, and every buffer the
    /// stream holds is released (frames still held keep their own).
    fn release_all(&self, st: &mut State) {
        st.streaming = false;
        st.queued = 0;
        st.cache.invalidate();
        for s in &mut st.slots {
            s.planes.clear();
            s.composed = Composed::default();
        }
    }
}

impl Requeue for Shared {
    fn requeue(&self, index: usize) {
        let mut st = self.lock();
        if let Some(slot) = st.slots.get_mut(index) {
            slot.held = false;
        }
        if st.streaming && !st.slots.get(index).is_some_and(|s| s.planes.is_empty()) {
            // A failure here (device gone) surfaces at the next dequeue.
            let _ = self.queue(&mut st, index);
        }
    }
}

fn fd_identity(path: &Path, fd: std::os::fd::BorrowedFd<'_>) -> Result<zerocam_tensor::FdIdentity> {
    let st = nix::sys::stat::fstat(fd).map_err(|errno| CaptureError::Ioctl {
        path: path.to_path_buf(),
        ioctl: "fstat of an exported buffer",
        errno,
    })?;
    Ok(zerocam_tensor::FdIdentity {
        dev: st.st_dev,
        ino: st.st_ino,
    })
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
            slots.push(Slot {
                planes,
                held: false,
                composed: Composed::default(),
            });
        }
        let planes = format.planes.len();
        let capacity = config.cache_capacity.unwrap_or(2 * slots.len() * planes);
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
            }),
            device,
        });
        let stream = Stream { shared };
        stream.start()?;
        Ok(stream)
    }

    /// Queues every buffer the caller does not hold and starts streaming (no-op
    /// when running).
    pub fn start(&self) -> Result<()> {
        let sh = &self.shared;
        let mut st = sh.lock();
        if st.streaming {
            return Ok(());
        }
        if st.slots.iter().any(|s| s.planes.is_empty()) {
            return Err(CaptureError::Disconnected {
                path: sh.path().to_path_buf(),
                errno: Errno::ENODEV,
            });
        }
        for i in 0..st.slots.len() {
            if !st.slots[i].held {
                sh.queue(&mut st, i)?;
            }
        }
        if let Err(errno) = ioctl::stream(sh.device.fd(), sh.buf_type, true) {
            let _ = sh.stop(&mut st);
            return Err(sh.device.ioctl_error("VIDIOC_STREAMON")(errno));
        }
        st.streaming = true;
        Ok(())
    }

    /// Stops streaming (`VIDIOC_STREAMOFF`): the driver gives back every buffer,
    /// and the import cache is invalidated. Held frames stay valid; they are
    /// queued again by [`start`](Stream::start).
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
    /// [`CaptureError::Ioctl`] with `EBUSY` while frames (or clones of their
    /// tensors) are still held: the driver cannot free buffers in use.
    pub fn into_device(self) -> Result<Device> {
        {
            let mut st = self.shared.lock();
            self.shared.stop(&mut st)?;
            for s in &mut st.slots {
                s.planes.clear();
            }
        }
        let shared = Arc::clone(&self.shared);
        drop(self);
        let shared = Arc::try_unwrap(shared).map_err(|shared| CaptureError::Ioctl {
            path: shared.path().to_path_buf(),
            ioctl: "VIDIOC_REQBUFS (frames still held)",
            errno: Errno::EBUSY,
        })?;
        let Shared {
            device,
            mode,
            buf_type,
            state,
            ..
        } = shared;
        drop(state);
        ioctl::reqbufs(device.fd(), buf_type, mode.memory(), 0)
            .map_err(device.ioctl_error("VIDIOC_REQBUFS"))?;
        Ok(device)
    }

    fn dequeue(&self, woke: Instant) -> Result<Option<Frame>> {
        let sh = &self.shared;
        let mut st = sh.lock();
        let mut planes = [raw::Plane::default(); raw::MAX_PLANES];
        let b = match ioctl::dqbuf(sh.device.fd(), sh.buf_type, sh.mode.memory(), &mut planes) {
            Ok(b) => b,
            Err(Errno::EAGAIN) => return Ok(None),
            Err(errno) => {
                let e = sh.device.ioctl_error("VIDIOC_DQBUF")(errno);
                if matches!(e, CaptureError::Disconnected { .. }) {
                    sh.release_all(&mut st);
                }
                return Err(e);
            }
        };
        st.queued = st.queued.saturating_sub(1);
        let index = b.index as usize;
        if index >= st.slots.len() {
            return Err(CaptureError::Ioctl {
                path: sh.path().to_path_buf(),
                ioctl: "VIDIOC_DQBUF (buffer index out of range)",
                errno: Errno::EINVAL,
            });
        }
        if b.flags & raw::BUF_FLAG_ERROR != 0 {
            st.errors += 1;
            sh.queue(&mut st, index)?;
            return Err(CaptureError::BufferError {
                path: sh.path().to_path_buf(),
                index: b.index,
                sequence: b.sequence,
            });
        }
        let lost = st.sequence.observe(b.sequence);
        st.dropped += lost;
        let (offsets, bytes_used) = if sh.buf_type == raw::BUF_TYPE_VIDEO_CAPTURE_MPLANE {
            let n = sh.format.planes.len();
            let offsets: Vec<usize> = planes[..n].iter().map(|p| p.data_offset as usize).collect();
            (
                offsets,
                planes[..n].iter().map(|p| p.bytesused as usize).sum(),
            )
        } else {
            (vec![0], b.bytesused as usize)
        };
        let made = {
            let State { slots, cache, .. } = &mut *st;
            let slot = &mut slots[index];
            frame_tensor(
                cache,
                &sh.format,
                &slot.planes,
                &offsets,
                &mut slot.composed,
            )
        };
        let tensor = match made {
            Ok(t) => t,
            Err(source) => {
                sh.queue(&mut st, index)?;
                return Err(CaptureError::Tensor {
                    path: sh.path().to_path_buf(),
                    source,
                });
            }
        };
        st.slots[index].held = true;
        st.frames += 1;
        let timestamp = Duration::new(
            b.timestamp.tv_sec.max(0) as u64,
            (b.timestamp.tv_usec.clamp(0, 999_999) * 1000) as u32,
        );
        Ok(Some(Frame {
            tensor,
            sequence: b.sequence,
            timestamp,
            bytes_used,
            index,
            overhead: woke.elapsed(),
            owner: sh.clone(),
        }))
    }
}

impl FrameSource for Stream {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        let sh = &self.shared;
        let deadline = Instant::now() + timeout;
        loop {
            {
                let st = sh.lock();
                if !st.streaming {
                    return Err(CaptureError::NotStreaming {
                        path: sh.path().to_path_buf(),
                    });
                }
                if st.queued == 0 {
                    return Err(CaptureError::NoFreeBuffer {
                        path: sh.path().to_path_buf(),
                        buffers: st.slots.len(),
                    });
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
            let mut fds = [PollFd::new(sh.device.fd(), PollFlags::POLLIN)];
            let ready = match poll(
                &mut fds,
                PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
            ) {
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(errno) => return Err(sh.device.ioctl_error("poll")(errno)),
            };
            if ready == 0 {
                return Err(CaptureError::Timeout {
                    path: sh.path().to_path_buf(),
                    timeout,
                });
            }
            // POLLIN, or POLLERR/POLLHUP whose cause DQBUF reports.
            if let Some(frame) = self.dequeue(Instant::now())? {
                return Ok(frame);
            }
            if Instant::now() >= deadline {
                return Err(CaptureError::Timeout {
                    path: sh.path().to_path_buf(),
                    timeout,
                });
            }
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

impl Drop for Stream {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        // Nothing to report to: a failed STREAMOFF leaves the fd to close.
        let _ = self.shared.stop(&mut st);
    }
}

fn export_planes(
    device: &Device,
    format: &StreamFormat,
    buf_type: u32,
    index: u32,
) -> Result<Vec<PlaneMemory>> {
    let mut planes = [raw::Plane::default(); raw::MAX_PLANES];
    let b = ioctl::querybuf(device.fd(), buf_type, raw::MEMORY_MMAP, index, &mut planes)
        .map_err(device.ioctl_error("VIDIOC_QUERYBUF"))?;
    let lengths: Vec<usize> = if buf_type == raw::BUF_TYPE_VIDEO_CAPTURE_MPLANE {
        planes[..format.planes.len()]
            .iter()
            .map(|p| p.length as usize)
            .collect()
    } else {
        vec![b.length as usize]
    };
    lengths
        .into_iter()
        .enumerate()
        .map(|(p, length)| {
            let fd = ioctl::expbuf(device.fd(), buf_type, index, p as u32)
                .map_err(device.ioctl_error("VIDIOC_EXPBUF"))?;
            let file = fd_identity(device.path(), fd.as_fd())?;
            Ok(PlaneMemory {
                source: PlaneSource::Exported(fd),
                file,
                length,
            })
        })
        .collect()
}

fn allocate_planes(
    device: &Device,
    format: &StreamFormat,
    config: &StreamConfig,
    index: u32,
) -> Result<Vec<PlaneMemory>> {
    format
        .planes
        .iter()
        .enumerate()
        .map(|(p, layout)| {
            let mut b = Tensor::<u8>::builder(&[layout.size as usize])
                .memory(TensorMemory::Dma)
                .name(&format!("{}:{index}.{p}", device.path().display()));
            if let Some(heap) = &config.dma_heap {
                b = b.dma_heap(heap);
            }
            let t = b.build().map_err(|e| match e {
                zerocam_tensor::Error::DmaUnavailable { .. }
                | zerocam_tensor::Error::UnknownHeap { .. } => CaptureError::UnsupportedMode {
                    path: device.path().to_path_buf(),
                    mode: BufferMode::DmaBuf.name(),
                    reason: e.to_string(),
                },
                source => CaptureError::Tensor {
                    path: device.path().to_path_buf(),
                    source,
                },
            })?;
            let file = t
                .fd_identity()
                .ok_or_else(|| CaptureError::UnsupportedMode {
                    path: device.path().to_path_buf(),
                    mode: BufferMode::DmaBuf.name(),
                    reason: "the pool buffer has no fd".into(),
                })?;
            Ok(PlaneMemory {
                source: PlaneSource::Owned(Box::new(t)),
                file,
                length: layout.size as usize,
            })
        })
        .collect()
}
