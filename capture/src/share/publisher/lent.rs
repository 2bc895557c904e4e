//! The frames the publisher has lent out: each keeps the source's own
//! [`Frame`] guard (so its buffer stays out of the driver's queue) until the
//! last lease on it ends or its deadline passes. Dropping an entry drops the
//! guard, which gives the buffer back to the source.

use std::collections::VecDeque;
use std::time::Instant;

use crate::Frame;

/// One lent frame.
#[derive(Debug)]
pub(super) struct LentFrame {
    /// The id clients release it by.
    pub id: u64,
    /// Clients holding a lease on it.
    pub leases: usize,
    /// When its leases end whether released or not.
    pub deadline: Instant,
    /// The source's frame, held for its drop.
    #[allow(dead_code)] // held for its drop: the buffer goes back then
    pub frame: Frame,
}

/// The lent frames, oldest first.
#[derive(Debug, Default)]
pub(super) struct LentFrames {
    frames: VecDeque<LentFrame>,
}

impl LentFrames {
    /// How many frames are out.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Keeps `frame` until its leases end.
    pub fn push(&mut self, frame: LentFrame) {
        self.frames.push_back(frame);
    }

    /// One lease on frame `id` ended: the frame goes back when it was the last.
    pub fn end_lease(&mut self, id: u64) {
        if let Some(i) = self.frames.iter().position(|f| f.id == id) {
            self.frames[i].leases = self.frames[i].leases.saturating_sub(1);
            if self.frames[i].leases == 0 {
                self.frames.remove(i); // the guard drops: the buffer goes back
            }
        }
    }

    /// The oldest frame whose deadline is `now` or past, taken out.
    pub fn take_expired(&mut self, now: Instant) -> Option<LentFrame> {
        let i = self.frames.iter().position(|f| f.deadline <= now)?;
        self.frames.remove(i)
    }

    /// The oldest frame, taken out (for a source short of buffers).
    pub fn take_oldest(&mut self) -> Option<LentFrame> {
        self.frames.pop_front()
    }

    /// Every frame, taken out.
    pub fn clear(&mut self) {
        self.frames.clear();
    }
}
