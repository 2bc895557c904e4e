//! [`Queue`]: a V4L2 stream's buffer queue, what the [`Stream`](crate::Stream)
//! and its frames share (an `Arc`): the device, the buffer slots, the import
//! cache, and queueing and dequeueing. It is not merged into `Stream`, which
//! is the caller's handle: dropping a `Stream` stops the queue, and
//! `into_device` needs to know no frame shares the queue any more, while a
//! frame may outlive its `Stream` and re-queue into the queue.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use nix::errno::Errno;
use zerocam_cache::ImportCache;

use crate::frame::plane_memory::PlaneMemory;
use crate::frame::slot::{Slot, SlotState};
use crate::frame::stats::{Counters, SequenceTracker};
use crate::frame::{lock, FrameMeta, Placement, Requeue, Synthesized};
use crate::v4l2::ioctl::{raw, BufferQueue, DmaBufPlane, QbufError, QbufPlanes};
use crate::v4l2::BufferPlan;
use crate::{BufferMode, CaptureError, Device, Frame, Result, StreamFormat};

#[derive(Debug)]
pub(crate) struct State {
    pub slots: Vec<Slot>,
    pub streaming: bool,
    pub cache: ImportCache,
    pub sequence: SequenceTracker,
    pub counters: Counters,
    /// A re-queue that failed when a frame dropped, reported by the next dequeue.
    pub requeue_error: Option<CaptureError>,
}

/// Drop order is field order, and it matters: `state` goes first — the
/// cache's imports (their mappings and fds), then the slots' exported fds
/// (MMAP) or pool buffers (DMABUF) — and the device fd last, so the driver
/// frees its buffers on close with none of them still exported by us (as
/// `stream::free_buffers` does before `REQBUFS` 0).
///
/// Generic over the ioctls it makes ([`BufferQueue`]): a [`Device`] in a
/// stream, a fake device in host tests.
#[derive(Debug)]
pub(crate) struct Queue<D = Device> {
    pub state: Mutex<State>,
    pub format: StreamFormat,
    /// The buffer count asked for, why, and what was granted.
    pub plan: BufferPlan,
    pub mode: BufferMode,
    pub device: D,
}

impl<D: BufferQueue> Queue<D> {
    /// A stopped queue of `slots` on `device`, its import cache holding
    /// `cache_capacity` entries.
    pub fn new(
        device: D,
        format: StreamFormat,
        plan: BufferPlan,
        mode: BufferMode,
        slots: Vec<Slot>,
        cache_capacity: usize,
    ) -> Queue<D> {
        let state = Mutex::new(State {
            slots,
            streaming: false,
            cache: ImportCache::new(cache_capacity),
            sequence: SequenceTracker::default(),
            counters: Counters::default(),
            requeue_error: None,
        });
        Queue {
            state,
            format,
            plan,
            mode,
            device,
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    pub fn path(&self) -> &Path {
        self.device.path()
    }

    /// Queues buffer `index` (`VIDIOC_QBUF`) with the driver's borrow of its
    /// planes. `Ok(false)`: a CPU map of it is alive, so it waits (`Pending`).
    pub fn queue(&self, st: &mut State, index: usize) -> Result<bool> {
        let queued = st.slots[index].queue(|planes| match self.mode {
            BufferMode::Mmap => self.device.qbuf(index as u32, QbufPlanes::Mmap),
            BufferMode::DmaBuf => {
                with_dmabuf_planes(planes, |handles| self.device.qbuf(index as u32, handles))
            }
        });
        queued.map_err(|e| self.queue_failed(st, "VIDIOC_QBUF", e))
    }

    /// Queues the free buffers that waited for a CPU map to end.
    pub fn queue_pending(&self, st: &mut State) -> Result<()> {
        for i in 0..st.slots.len() {
            if matches!(st.slots[i].state(), SlotState::Pending) {
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
        let result = if st.streaming || st.slots.iter().any(Slot::is_queued) {
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
        st.sequence.reset();
        st.slots.iter_mut().for_each(Slot::stopped);
    }

    /// Queues every buffer not held and starts streaming.
    pub fn start(&self, st: &mut State) -> Result<()> {
        if st.streaming {
            return Ok(());
        }
        let released = |s: &Slot| matches!(s.state(), SlotState::Released);
        if st.slots.iter().any(released) {
            return Err(CaptureError::Disconnected {
                path: self.path().to_path_buf(),
                errno: Errno::ENODEV,
            });
        }
        let started = (0..st.slots.len()).try_for_each(|i| match st.slots[i].is_held() {
            true => Ok(()),
            false => self.queue(st, i).map(drop),
        });
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
        st.slots.iter_mut().for_each(Slot::release);
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
        if !st.slots.iter().any(Slot::is_queued) {
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
        let st = &mut *self.lock();
        let b = match self.device.dqbuf(self.mode) {
            Ok(b) => b,
            Err(e) => match e.queue_error() {
                None => return Ok(None), // not ready after all
                Some(e) => return Err(self.queue_failed(st, "VIDIOC_DQBUF", e)),
            },
        };
        let index = b.index as usize;
        let Some(slot) = st.slots.get_mut(index) else {
            return Err(CaptureError::Ioctl {
                path: self.path().to_path_buf(),
                ioctl: "VIDIOC_DQBUF (buffer index out of range)",
                errno: Errno::EINVAL,
            });
        };
        slot.dequeued(); // the driver is done with it
        let lost = st.sequence.observe(b.sequence);
        st.counters.dropped += lost;
        if b.error {
            st.counters.errors += 1;
            self.queue(st, index)?;
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
        let made = st.slots[index].tensor(&mut st.cache, &self.format, &offsets[..n], None);
        let tensor = match made {
            Ok(t) => t,
            Err(source) => {
                self.queue(st, index)?;
                return Err(CaptureError::Tensor {
                    path: self.path().to_path_buf(),
                    source,
                });
            }
        };
        st.slots[index].hold();
        st.counters.frames += 1;
        let meta = FrameMeta {
            sequence: b.sequence,
            timestamp: b.timestamp,
            bytes_used,
            synthesized: Synthesized::NONE,
            placement: Placement::new(&offsets[..n], None),
        };
        let color = self.format.color;
        Ok(Some(Frame::new(
            self.clone(),
            index,
            tensor,
            color,
            meta,
            woke,
        )))
    }
}

impl<D: BufferQueue> Requeue for Queue<D> {
    fn requeue(&self, index: usize) {
        let st = &mut *self.lock();
        let Some(slot) = st.slots.get_mut(index) else {
            return;
        };
        slot.free(st.streaming);
        if matches!(slot.state(), SlotState::Pending) {
            // A new error replaces one not reported yet; a success keeps it.
            st.requeue_error = self.queue(st, index).err().or(st.requeue_error.take());
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
