//! What a source counts and stamps: [`StreamStats`] and the [`Counters`] it
//! is built from, [`SequenceTracker`] (drops from sequence gaps) and
//! [`monotonic_now`], the clock frames are stamped with.

use std::time::Duration;

use zerocam_cache::CacheStats;

/// A source's counters, over its whole life (restarts included).
///
/// Between a start and the next stop, every sequence number the driver used
/// is counted once: in `frames` (handed out), `dropped` (a gap before a later
/// one) or `buffer_errors` (came back flagged). Frames still queued when the
/// stream stops are not counted, and each start begins a new sequence count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Frames handed out.
    pub frames: u64,
    /// Frames the driver lost, counted from gaps in sequence numbers.
    pub dropped: u64,
    /// Buffers that came back flagged with an error (`V4L2_BUF_FLAG_ERROR`).
    pub buffer_errors: u64,
    /// Buffers of the stream.
    pub buffers: usize,
    /// Memory planes per buffer.
    pub planes: usize,
    /// The import cache's counters: `misses` are imports (buffers × planes
    /// once every buffer came round; a V4L2 stream's stop/start adds none),
    /// `invalidated` counts entries dropped when the buffers went away.
    pub cache: CacheStats,
    /// Frames that came in system memory rather than as dma-bufs (a
    /// GStreamer software decoder's, `videotestsrc`'s): the CPU reads them
    /// in place, the GPU path uploads them. 0 for sources of dma-bufs only.
    pub system_memory_frames: u64,
    /// Frames that came after a newer one and were dropped (a network
    /// source's reordering). 0 for local sources.
    pub late: u64,
    /// Frames the source refused: malformed, too large, undecodable (a
    /// network source's; each logged). 0 for local sources.
    pub rejected: u64,
}

impl StreamStats {
    /// The stats of a source: its `counters`, `buffers` buffers of `planes`
    /// memory planes, and its import cache's counters.
    pub(crate) fn new(
        counters: Counters,
        buffers: usize,
        planes: usize,
        cache: CacheStats,
    ) -> Self {
        let (frames, dropped, buffer_errors) = (counters.frames, counters.dropped, counters.errors);
        StreamStats {
            frames,
            dropped,
            buffer_errors,
            buffers,
            planes,
            cache,
            system_memory_frames: 0,
            late: 0,
            rejected: 0,
        }
    }
}

/// A source's running counts over its whole life: [`StreamStats`]'
/// `frames`, `dropped` and `buffer_errors`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counters {
    pub frames: u64,
    pub dropped: u64,
    pub errors: u64,
}

/// A step between two sequence numbers above this is the count going back,
/// not forward past a wrap-around.
const BACKWARDS: u32 = u32::MAX / 2;

/// Counts frames lost between two sequence numbers.
#[derive(Debug, Default)]
pub(crate) struct SequenceTracker {
    last: Option<u32>,
}

impl SequenceTracker {
    /// Records `sequence`; returns how many frames were skipped since the last.
    ///
    /// The count wraps at `u32::MAX` as V4L2's does. A sequence that repeats
    /// the last one or goes back (a driver that numbers two buffers alike, or
    /// restarts its count) loses nothing: it is never read as a wrap-around
    /// past four billion frames.
    pub fn observe(&mut self, sequence: u32) -> u64 {
        let lost = match self.last {
            Some(last) => match sequence.wrapping_sub(last) {
                ahead @ 1..=BACKWARDS => u64::from(ahead - 1),
                _ => 0,
            },
            None => 0,
        };
        self.last = Some(sequence);
        lost
    }

    /// The last sequence observed.
    #[cfg_attr(not(feature = "libcamera"), allow(dead_code))] // libcamera's metadata only
    pub fn last(&self) -> Option<u32> {
        self.last
    }

    /// Forgets the last sequence (a restart begins a new count).
    pub fn reset(&mut self) {
        self.last = None;
    }
}

/// The clock a source's [`Frame::timestamp`](crate::Frame::timestamp)s are on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Clock {
    /// `CLOCK_MONOTONIC` of this machine: V4L2, libcamera, GStreamer, the
    /// pattern, a local publisher's frames.
    #[default]
    Monotonic,
    /// The system clock (`CLOCK_REALTIME`, since the Unix epoch), possibly
    /// another machine's: ROS stamps, frames from a Zenoh topic.
    Realtime,
}

impl Clock {
    /// This clock now (0 when it cannot be read).
    pub fn now(self) -> Duration {
        match self {
            Clock::Monotonic => monotonic_now(),
            Clock::Realtime => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default(),
        }
    }
}

/// `CLOCK_MONOTONIC` now, the clock V4L2 timestamps use.
pub(crate) fn monotonic_now() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(Duration::from)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::SequenceTracker;

    #[test]
    fn gaps_are_drops() {
        let mut t = SequenceTracker::default();
        assert_eq!(t.observe(5), 0);
        assert_eq!(t.observe(6), 0);
        assert_eq!(t.observe(9), 2);
        t.reset();
        assert_eq!(t.observe(0), 0);
        assert_eq!(t.observe(u32::MAX.wrapping_add(2)), 0);
        // Across the wrap: u32::MAX, then 1 (0 lost).
        assert_eq!(t.observe(u32::MAX), 0);
        assert_eq!(t.observe(1), 1);
    }

    #[test]
    fn a_repeated_or_earlier_sequence_loses_nothing() {
        let mut t = SequenceTracker::default();
        t.observe(13);
        assert_eq!(t.observe(13), 0, "a repeat");
        assert_eq!(t.observe(10), 0, "back by 3, not 4 billion lost");
        assert_eq!(t.observe(12), 1, "counted from where the driver went");
    }
}
