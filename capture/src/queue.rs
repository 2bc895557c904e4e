//! The state a stream shares with its frames: the buffer slots, what is queued
//! to the driver, the import cache — and the queue/dequeue mechanics.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use nix::errno::Errno;
use zerocam_cache::ImportCache;

use crate::frame::{Requeue, SequenceTracker};
use crate::planes::{frame_tensor, Composed, DeviceBorrows, PlaneMemory};
use crate::v4l2::{raw, BufferQueue, DmaBufPlane, QbufError, QbufPlanes};
use crate::{BufferMode, BufferPlan, CaptureError, Device, Frame, Result, StreamFormat};

/// One buffer of the stream.
#[derive(Debug)]
pub(crate) struct Slot {
    pub planes: Vec<PlaneMemory>,
    /// The driver's borrows of the planes' files while the buffer is queued.
    pub borrows: DeviceBorrows,
    /// A frame of it is out.
    pub held: bool,
    /// Free, but not queued: a CPU map of it is still alive.
    pub pending: bool,
    pub composed: Composed,
}

impl Slot {
    pub fn new(planes: Vec<PlaneMemory>) -> Slot {
        Slot {
            borrows: DeviceBorrows::new(&planes),
            planes,
            held: false,
            pending: false,
            composed: Composed::default(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct State {
    pub slots: Vec<Slot>,
    pub streaming: bool,
    pub queued: usize,
    pub cache: ImportCache,
    pub sequence: SequenceTracker,
    pub frames: u64,
    pub dropped: u64,
    pub errors: u64,
    /// A re-queue that failed when a frame dropped, reported by the next dequeue.
    pub requeue_error: Option<CaptureError>,
}

/// Generic over the ioctls it makes ([`BufferQueue`]): a [`Device`] in a
/// stream, a fake device in host tests.
#[derive(Debug)]
pub(crate) struct Shared<D = Device> {
    pub device: D,
    pub format: StreamFormat,
    /// The buffer count asked for, why, and what was granted.
    pub plan: BufferPlan,
    pub buf_type: u32,
    pub mode: BufferMode,
    pub state: Mutex<State>,
}

impl<D: BufferQueue> Shared<D> {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn path(&self) -> &Path {
        self.device.path()
    }

    /// Queues buffer `index` (`VIDIOC_QBUF`) with the driver's borrow of its
    /// planes. `Ok(false)`: a CPU map of it is alive, so it waits (`pending`).
    pub fn queue(&self, st: &mut State, index: usize) -> Result<bool> {
        let slot = &mut st.slots[index];
        if slot.borrows.borrow().is_err() {
            slot.pending = true;
            return Ok(false);
        }
        let queued = match self.mode {
            BufferMode::Mmap => self.device.qbuf(index as u32, QbufPlanes::Mmap),
            BufferMode::DmaBuf => with_dmabuf_planes(&slot.planes, |planes| {
                self.device.qbuf(index as u32, planes)
            }),
        };
        if let Err(e) = queued {
            slot.borrows.release();
            return Err(self.queue_failed(st, "VIDIOC_QBUF", e));
        }
        slot.pending = false;
        st.queued += 1;
        Ok(true)
    }

    /// Queues the free buffers that waited for a CPU map to end.
    pub fn queue_pending(&self, st: &mut State) -> Result<()> {
        for i in 0..st.slots.len() {
            if st.slots[i].pending && !st.slots[i].held {
                self.queue(st, i)?;
            }
        }
        Ok(())
    }

    /// `VIDIOC_STREAMOFF` (also after a failed start, to cancel what was
    /// queued): the driver gives every buffer back. The buffers stay allocated,
    /// so the cache keeps its imports (same tensors and identities after a
    /// restart).
    pub fn stop(&self, st: &mut State) -> Result<()> {
        let result = if st.streaming || st.queued > 0 {
            self.device
                .stream(false)
                .map_err(|e| e.into_capture(self.path(), "VIDIOC_STREAMOFF"))
        } else {
            Ok(())
        };
        Self::unqueued(st);
        result
    }

    /// Nothing is queued any more (stopped, or the device vanished): the
    /// driver's borrows end, the sequence count starts over.
    fn unqueued(st: &mut State) {
        st.streaming = false;
        st.queued = 0;
        st.sequence.reset();
        for s in &mut st.slots {
            s.borrows.release();
            s.pending = false;
        }
    }

    /// Queues every buffer not held and starts streaming.
    pub fn start(&self, st: &mut State) -> Result<()> {
        if st.streaming {
            return Ok(());
        }
        if st.slots.iter().any(|s| s.planes.is_empty()) {
            return Err(CaptureError::Disconnected {
                path: self.path().to_path_buf(),
                errno: Errno::ENODEV,
            });
        }
        let mut started = Ok(());
        for i in 0..st.slots.len() {
            if !st.slots[i].held {
                started = self.queue(st, i).map(drop);
                if started.is_err() {
                    break;
                }
            }
        }
        let started = started.and_then(|()| {
            self.device
                .stream(true)
                .map_err(|e| e.into_capture(self.path(), "VIDIOC_STREAMON"))
        });
        if let Err(e) = started {
            let _ = self.stop(st);
            return Err(e);
        }
        st.streaming = true;
        Ok(())
    }

    /// After the device vanished: nothing is queued, the cache is
    /// invalidated and every buffer the stream holds is released (frames
    /// still held keep their own).
    pub fn release_all(&self, st: &mut State) {
        Self::unqueued(st);
        st.cache.invalidate();
        for s in &mut st.slots {
            s.borrows = DeviceBorrows::default();
            s.planes.clear();
            s.composed = Composed::default();
        }
    }

    /// `VIDIOC_QBUF` or `VIDIOC_DQBUF` failed: the error to report.
    /// `Disconnected` releases every buffer; `Io` is vb2's fatal queue error
    /// (`vb2_queue_error`: both ioctls answer `EIO` until `STREAMOFF`), so the
    /// stream stops itself and reports `StreamFailed` (a `start` then recovers).
    fn queue_failed(&self, st: &mut State, ioctl: &'static str, e: QbufError) -> CaptureError {
        let path = self.path().to_path_buf();
        let e = match e {
            QbufError::Io => match self.stop(st) {
                Err(e @ CaptureError::Disconnected { .. }) => e,
                _ => CaptureError::StreamFailed {
                    path,
                    ioctl,
                    errno: Errno::EIO,
                },
            },
            QbufError::Disconnected(errno) => CaptureError::Disconnected { path, errno },
            QbufError::BadPlanes { .. } => CaptureError::Ioctl {
                path,
                ioctl: "VIDIOC_QBUF (more DMABUF planes than the queue takes)",
                errno: Errno::EINVAL,
            },
            QbufError::Other(errno) => CaptureError::Ioctl { path, ioctl, errno },
        };
        if matches!(e, CaptureError::Disconnected { .. }) {
            self.release_all(st);
        }
        e
    }

    /// Before a dequeue: reports a failed re-queue, queues the buffers whose
    /// CPU map ended, and says whether anything is queued to wait for
    /// (`NotStreaming`, `NoFreeBuffer` when every buffer is held or waits).
    pub fn ready_to_dequeue(&self) -> Result<()> {
        let mut st = self.lock();
        if let Some(e) = st.requeue_error.take() {
            return Err(e);
        }
        if !st.streaming {
            return Err(CaptureError::NotStreaming {
                path: self.path().to_path_buf(),
            });
        }
        self.queue_pending(&mut st)?;
        if st.queued == 0 {
            return Err(CaptureError::NoFreeBuffer {
                path: self.path().to_path_buf(),
                buffers: st.slots.len(),
            });
        }
        Ok(())
    }

    /// `VIDIOC_DQBUF` and the frame's tensor from the cache; `None` when the
    /// driver had nothing after all (`EAGAIN`).
    pub fn dequeue(self: &std::sync::Arc<Self>, woke: Instant) -> Result<Option<Frame>> {
        let mut st = self.lock();
        let b = match self.device.dqbuf(self.mode) {
            Ok(b) => b,
            Err(e) => match e.queue_error() {
                None => return Ok(None), // not ready after all
                Some(e) => return Err(self.queue_failed(&mut st, "VIDIOC_DQBUF", e)),
            },
        };
        st.queued = st.queued.saturating_sub(1);
        let index = b.index as usize;
        let Some(slot) = st.slots.get_mut(index) else {
            return Err(CaptureError::Ioctl {
                path: self.path().to_path_buf(),
                ioctl: "VIDIOC_DQBUF (buffer index out of range)",
                errno: Errno::EINVAL,
            });
        };
        slot.borrows.release(); // the driver is done with it
        let lost = st.sequence.observe(b.sequence);
        st.dropped += lost;
        if b.error {
            st.errors += 1;
            self.queue(&mut st, index)?;
            return Err(CaptureError::BufferError {
                path: self.path().to_path_buf(),
                index: b.index,
                sequence: b.sequence,
            });
        }
        let n = self.format.planes.len().min(raw::MAX_PLANES);
        let mut offsets = [0usize; raw::MAX_PLANES];
        for (o, p) in offsets.iter_mut().zip(&b.planes[..n]) {
            *o = p.data_offset as usize;
        }
        let bytes_used = b.planes[..n].iter().map(|p| p.bytes_used as usize).sum();
        let made = {
            let State { slots, cache, .. } = &mut *st;
            let slot = &mut slots[index];
            frame_tensor(
                cache,
                &self.format,
                &slot.planes,
                &offsets[..n],
                &mut slot.composed,
            )
        };
        let tensor = match made {
            Ok(t) => t,
            Err(source) => {
                self.queue(&mut st, index)?;
                return Err(CaptureError::Tensor {
                    path: self.path().to_path_buf(),
                    source,
                });
            }
        };
        st.slots[index].held = true;
        st.frames += 1;
        Ok(Some(Frame {
            tensor,
            sequence: b.sequence,
            timestamp: b.timestamp,
            bytes_used,
            index,
            overhead: woke.elapsed(),
            synthesized: crate::frame::Synthesized::NONE,
            color: self.format.color,
            owner: self.clone(),
        }))
    }
}

impl<D: BufferQueue> Requeue for Shared<D> {
    fn requeue(&self, index: usize) {
        let mut st = self.lock();
        let Some(slot) = st.slots.get_mut(index) else {
            return;
        };
        slot.held = false;
        if st.streaming && !st.slots[index].planes.is_empty() {
            if let Err(e) = self.queue(&mut st, index) {
                st.requeue_error = Some(e);
            }
        }
    }
}

/// Calls `qbuf` with the `DMABUF` handles of `planes` (on the stack: nothing
/// allocated per frame). A plane without an fd is refused (`EBADF`).
fn with_dmabuf_planes(
    planes: &[PlaneMemory],
    qbuf: impl FnOnce(QbufPlanes<'_>) -> std::result::Result<(), QbufError>,
) -> std::result::Result<(), QbufError> {
    let no_fd = QbufError::Other(Errno::EBADF);
    let first = planes.first().and_then(PlaneMemory::fd).ok_or(no_fd)?;
    if planes.len() > raw::MAX_PLANES {
        return Err(QbufError::BadPlanes {
            planes: planes.len(),
            max: raw::MAX_PLANES,
        });
    }
    let mut handles = [DmaBufPlane {
        fd: first,
        length: 0,
    }; raw::MAX_PLANES];
    for (h, p) in handles.iter_mut().zip(planes) {
        *h = DmaBufPlane {
            fd: p.fd().ok_or(no_fd)?,
            length: u32::try_from(p.length).map_err(|_| QbufError::Other(Errno::EOVERFLOW))?,
        };
    }
    qbuf(QbufPlanes::DmaBuf(&handles[..planes.len()]))
}
