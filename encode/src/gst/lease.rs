//! Frame leases lent to GStreamer: a [`Lease`] holds a frame while any of its
//! plane memories lives; [`Leases`] counts them for a sink and takes back
//! what GStreamer still holds after the pipeline stopped (an element that
//! leaked a buffer would otherwise keep the source's buffer forever).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use zerocam_capture::Frame;
use zerocam_tensor::DeviceBorrow;

/// Leases kept before dead ones are swept from the list.
const SWEEP_AT: usize = 64;

/// One frame lent to GStreamer: given back when the last plane memory
/// holding it is freed, or when its sink takes it back.
pub(crate) struct Lease {
    /// `Some` until given back; with the record that GStreamer reads the
    /// frame's buffers (CPU writers are refused meanwhile) when its memories
    /// are the buffers' fds rather than zerocam's maps.
    frame: Mutex<Option<(Frame, Option<DeviceBorrow>)>>,
    outstanding: Arc<AtomicU64>,
}

impl Lease {
    /// Gives the frame back to its source now, if it is still here; whether
    /// it was.
    fn give_back(&self) -> bool {
        let frame = self
            .frame
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some((frame, borrow)) = frame else {
            return false;
        };
        log::trace!("frame {} given back by GStreamer", frame.sequence());
        drop(borrow); // GStreamer reads it no more
        frame.release(); // back at the source before it is counted back
        self.outstanding.fetch_sub(1, Ordering::AcqRel);
        true
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// A sink's leases: how many GStreamer holds, and a weak list of them.
#[derive(Default)]
pub(crate) struct Leases {
    outstanding: Arc<AtomicU64>,
    live: Vec<Weak<Lease>>,
}

impl Leases {
    /// A lease on `frame` (with `borrow`, the record of GStreamer's reads
    /// of its fds, ended with the lease), counted until it is given back.
    pub(crate) fn lend(&mut self, frame: Frame, borrow: Option<DeviceBorrow>) -> Arc<Lease> {
        self.outstanding.fetch_add(1, Ordering::AcqRel);
        let lease = Arc::new(Lease {
            frame: Mutex::new(Some((frame, borrow))),
            outstanding: Arc::clone(&self.outstanding),
        });
        if self.live.len() >= SWEEP_AT {
            self.live.retain(|w| w.strong_count() > 0);
        }
        self.live.push(Arc::downgrade(&lease));
        lease
    }

    /// Takes `lease`'s frame back before GStreamer ever had it (its memories
    /// could not all be made, and were dropped): not counted as lent.
    pub(crate) fn unlend(&mut self, lease: &Lease) -> Option<Frame> {
        let (frame, borrow) = lease
            .frame
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        drop(borrow);
        self.outstanding.fetch_sub(1, Ordering::AcqRel);
        Some(frame)
    }

    /// Frames GStreamer still holds.
    pub(crate) fn outstanding(&self) -> u64 {
        self.outstanding.load(Ordering::Acquire)
    }

    /// Gives back every frame still lent, GStreamer's memories or not: for
    /// after the pipeline stopped. The memories stay valid (each holds its
    /// own fd, or its own map, of the buffer); only the lease ends. How many
    /// there were.
    pub(crate) fn take_back(&mut self) -> u64 {
        let taken = self
            .live
            .drain(..)
            .filter_map(|w| w.upgrade())
            .filter(|l| l.give_back())
            .count();
        taken as u64
    }
}
