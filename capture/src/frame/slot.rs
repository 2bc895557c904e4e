//! One buffer slot, as every source keeps it (V4L2, the pattern source,
//! libcamera): the buffer's memory planes, the borrow records of their files,
//! its composed-tensor cache, and one [`SlotState`] whose variants own what
//! the state holds. Callers move a slot through its states with the methods
//! here; the count of queued buffers is read from the states.

use smallvec::SmallVec;
use zerocam_cache::ImportCache;
use zerocam_tensor::{Access, DeviceBorrow, FileBorrows, Tensor};

use crate::frame::plane_memory::PlaneMemory;
use crate::frame::tensor::{frame_tensor_at, Composed};
use crate::StreamFormat;

/// Where a buffer is.
#[derive(Debug)]
pub(crate) enum SlotState {
    /// Free and not queued (stopped, or never started): a start queues it.
    Idle,
    /// Queued to the device, or done and not yet taken back: the device
    /// borrows the planes' files, so no CPU map of them can start.
    Queued(#[allow(dead_code)] DeviceBorrows), // held for its drop: leaving the state ends the borrows
    /// A frame of it is out.
    Held,
    /// Free while streaming but not queued: a CPU map of it was alive, or
    /// queueing it failed. The source's next frame tries again.
    Pending,
    /// The device vanished: the planes are closed (frames still out keep
    /// their own tensors) and the slot is never queued again.
    Released,
}

/// A device's write borrows of a buffer's files while the buffer is queued to
/// it: no CPU map of them can start meanwhile. Dropping them ends the borrows.
/// Inline up to four files (every format zerocam captures has at most two
/// memory planes), so queueing a buffer allocates nothing.
#[derive(Debug)]
pub(crate) struct DeviceBorrows(#[allow(dead_code)] SmallVec<[DeviceBorrow; 4]>); // held for its drop

impl DeviceBorrows {
    /// The device's write borrow of every file in `files`; on failure (a CPU
    /// map is alive) none is kept.
    fn take(files: &[FileBorrows]) -> zerocam_tensor::Result<DeviceBorrows> {
        files
            .iter()
            .map(|a| a.device_borrow(Access::Write))
            .collect::<zerocam_tensor::Result<_>>()
            .map(DeviceBorrows)
    }
}

/// One buffer of a source.
#[derive(Debug)]
pub(crate) struct Slot {
    /// The buffer's memory planes (empty once [`Released`](SlotState::Released)).
    pub planes: Vec<PlaneMemory>,
    /// The composed two-buffer tensor of the planes, reused across frames.
    pub composed: Composed,
    /// The borrows of each plane's file.
    files: Vec<FileBorrows>,
    state: SlotState,
}

impl Slot {
    /// An [`Idle`](SlotState::Idle) slot of `planes`.
    pub fn new(planes: Vec<PlaneMemory>) -> Slot {
        Slot {
            files: planes.iter().map(|p| FileBorrows::of(p.file)).collect(),
            planes,
            composed: Composed::default(),
            state: SlotState::Idle,
        }
    }

    /// The slot's state.
    pub fn state(&self) -> &SlotState {
        &self.state
    }

    /// Whether the device has the buffer.
    pub fn is_queued(&self) -> bool {
        matches!(self.state, SlotState::Queued(_))
    }

    /// Whether a frame of the buffer is out.
    pub fn is_held(&self) -> bool {
        matches!(self.state, SlotState::Held)
    }

    /// The frame tensor of the buffer in `format` through `cache`, each
    /// plane's data at `offsets` (see [`frame_tensor_at`] for `chroma_offset`).
    pub fn tensor(
        &mut self,
        cache: &mut ImportCache,
        format: &StreamFormat,
        offsets: &[usize],
        chroma_offset: Option<usize>,
    ) -> zerocam_tensor::Result<Tensor<u8>> {
        let composed = &mut self.composed;
        frame_tensor_at(
            cache,
            format,
            &self.planes,
            offsets,
            chroma_offset,
            composed,
        )
    }

    /// A read-only fd of each of the buffer's planes
    /// ([`PlaneMemory::read_only_fd`]), or why not.
    pub fn read_only_planes(&self) -> Result<Vec<crate::SharedPlane>, String> {
        if self.planes.is_empty() {
            return Err("the buffer was released (the device vanished)".into());
        }
        self.planes
            .iter()
            .map(|p| {
                Ok(crate::SharedPlane {
                    fd: p.read_only_fd()?,
                    length: p.length,
                })
            })
            .collect()
    }

    /// The device borrows the planes' files: [`Queued`](SlotState::Queued).
    /// When a CPU map of one is alive the slot is
    /// [`Pending`](SlotState::Pending) instead, and the error says why.
    pub fn lend(&mut self) -> zerocam_tensor::Result<()> {
        self.state = SlotState::Pending;
        self.state = SlotState::Queued(DeviceBorrows::take(&self.files)?);
        Ok(())
    }

    /// Queues a free slot: [`lend`](Self::lend)s it to the device, then
    /// `submit`s its planes (the queueing call). `Ok(false)`: a CPU map is
    /// alive, the slot waits [`Pending`](SlotState::Pending). When `submit`
    /// fails the borrows end and the slot is `Pending`.
    pub fn queue<E>(
        &mut self,
        submit: impl FnOnce(&[PlaneMemory]) -> Result<(), E>,
    ) -> Result<bool, E> {
        if self.lend().is_err() {
            return Ok(false);
        }
        submit(&self.planes).inspect_err(|_| self.state = SlotState::Pending)?;
        Ok(true)
    }

    /// The device gave the buffer back: its borrows end, the slot is free
    /// ([`Pending`](SlotState::Pending)) until it is held or queued again.
    pub fn dequeued(&mut self) {
        self.state = SlotState::Pending;
    }

    /// A frame of the buffer goes out: [`Held`](SlotState::Held).
    pub fn hold(&mut self) {
        self.state = SlotState::Held;
    }

    /// The buffer is free (its frame dropped, or it was never handed out):
    /// [`Pending`](SlotState::Pending) while `streaming`, else
    /// [`Idle`](SlotState::Idle). A queued or released slot stays as it is.
    pub fn free(&mut self, streaming: bool) {
        if !matches!(self.state, SlotState::Queued(_) | SlotState::Released) {
            self.state = if streaming {
                SlotState::Pending
            } else {
                SlotState::Idle
            };
        }
    }

    /// The device stopped: a queued or pending slot is
    /// [`Idle`](SlotState::Idle) (the borrows end); held and released ones
    /// stay.
    pub fn stopped(&mut self) {
        if matches!(self.state, SlotState::Queued(_) | SlotState::Pending) {
            self.state = SlotState::Idle;
        }
    }

    /// The device vanished: the planes close and the slot is
    /// [`Released`](SlotState::Released) for good.
    pub fn release(&mut self) {
        self.state = SlotState::Released;
        self.planes.clear();
        self.files.clear();
        self.composed = Composed::default();
    }
}

/// [`FrameSource::read_only_planes`](crate::FrameSource::read_only_planes)
/// of a source whose buffers are `slots`, named `path`.
pub(crate) fn read_only_planes_of(
    slots: &[Slot],
    index: usize,
    path: &std::path::Path,
) -> crate::Result<Vec<crate::SharedPlane>> {
    let not_shareable = |reason: String| crate::CaptureError::NotShareable {
        path: path.to_path_buf(),
        index,
        reason,
    };
    slots
        .get(index)
        .ok_or_else(|| not_shareable(format!("the source has {} buffers", slots.len())))?
        .read_only_planes()
        .map_err(not_shareable)
}

/// The buffers of a source that fills them itself (the pattern, a Zenoh
/// topic's decoder): each `Idle` or `Held`, never queued to a driver; a
/// frame's drop frees its slot.
#[derive(Debug)]
pub(crate) struct OwnedSlots {
    pub slots: Vec<Slot>,
    pub cache: zerocam_cache::ImportCache,
    pub counters: crate::frame::stats::Counters,
}

impl OwnedSlots {
    /// Checks a buffer count for a source that fills its own buffers:
    /// at least 2 (one held, one filling), at most
    /// [`MAX_BUFFERS`](crate::v4l2::MAX_BUFFERS).
    pub fn check_count(buffers: u32) -> crate::Result<()> {
        if buffers < 2 {
            return Err(crate::ArgumentError::TooFewBuffers(buffers).into());
        }
        if buffers > crate::v4l2::MAX_BUFFERS {
            return Err(crate::ArgumentError::TooManyBuffers(buffers).into());
        }
        Ok(())
    }

    /// `slots` of `planes` memory planes each, with an import cache of
    /// [`cache_capacity`].
    pub fn new(slots: Vec<Slot>, planes: usize) -> OwnedSlots {
        let capacity = cache_capacity(slots.len(), planes);
        OwnedSlots {
            slots,
            cache: zerocam_cache::ImportCache::new(capacity),
            counters: crate::frame::stats::Counters::default(),
        }
    }

    /// The slots not held, in order from `start` round (buffers cycle as a
    /// driver's queue does: each imported once, the oldest free one next).
    pub fn free_from(&self, start: usize) -> impl Iterator<Item = usize> + '_ {
        let n = self.slots.len();
        (0..n)
            .map(move |i| (start + i) % n.max(1))
            .filter(|&i| !self.slots[i].is_held())
    }
}

impl crate::frame::Requeue for std::sync::Mutex<OwnedSlots> {
    fn requeue(&self, index: usize) {
        if let Some(s) = crate::frame::lock(self).slots.get_mut(index) {
            s.free(false);
        }
    }
}

/// A source's default import-cache capacity: every buffer plane twice.
pub(crate) fn cache_capacity(buffers: usize, planes: usize) -> usize {
    2 * buffers * planes
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocam_tensor::{Tensor, TensorMemory};

    fn shm_plane() -> (PlaneMemory, Tensor<u8>) {
        let t = Tensor::<u8>::new(&[16], Some(TensorMemory::Shm), None).unwrap();
        (PlaneMemory::owned(t.clone()).unwrap(), t)
    }

    #[test]
    fn queueing_and_dequeueing_a_slot_allocates_nothing() {
        let (a, _ta) = shm_plane();
        let (b, _tb) = shm_plane();
        let mut slot = Slot::new(vec![a, b]);
        slot.queue(|_| Ok::<_, ()>(())).unwrap(); // warm-up: the files' borrow lists grow once
        slot.dequeued();
        let before = crate::test_alloc::this_thread();
        for _ in 0..10 {
            assert_eq!(slot.queue(|_| Ok::<_, ()>(())), Ok(true));
            slot.dequeued();
        }
        assert_eq!(
            crate::test_alloc::this_thread() - before,
            0,
            "allocations per queue"
        );
    }

    #[test]
    fn device_borrows_refuse_a_live_map_and_end_on_release() {
        let (a, ta) = shm_plane();
        let (b, tb) = shm_plane();
        let mut slot = Slot::new(vec![a, b]);
        let map = tb.map_read().unwrap();
        assert_eq!(slot.queue(|_| Ok::<_, ()>(())), Ok(false), "a map is alive");
        assert!(matches!(slot.state(), SlotState::Pending));
        assert!(ta.map_read().is_ok(), "none kept on failure");
        drop(map);
        assert_eq!(slot.queue(|_| Err("refused")), Err("refused"));
        assert!(matches!(slot.state(), SlotState::Pending));
        assert!(ta.map_read().is_ok(), "a failed submit keeps no borrow");
        let submitted = slot.queue(|p| {
            assert_eq!(p.len(), 2);
            Ok::<_, ()>(())
        });
        assert_eq!(submitted, Ok(true));
        assert!(slot.is_queued());
        assert!(ta.map_read().is_err() && tb.map_read().is_err());
        slot.dequeued();
        assert!(ta.map_read().is_ok() && tb.map_read().is_ok());
        slot.hold();
        slot.stopped();
        assert!(slot.is_held(), "a stop leaves a held slot held");
        slot.free(false);
        assert!(matches!(slot.state(), SlotState::Idle));
        slot.lend().unwrap();
        slot.free(true);
        assert!(slot.is_queued(), "a queued slot is not freed");
        slot.release();
        assert!(matches!(slot.state(), SlotState::Released) && slot.planes.is_empty());
        assert!(ta.map_read().is_ok(), "released: no borrow");
    }
}
