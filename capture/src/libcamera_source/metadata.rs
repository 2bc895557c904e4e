//! Frame metadata a pipeline handler may leave empty, and what zerocam puts
//! in its place. libcamera 0.4.0's virtual camera writes no `FrameMetadata`
//! at all (bytesused 0, no sequence, no timestamp); other handlers fill it.
//! Pure logic, unit-tested on the host.

use std::time::Duration;

use crate::frame::stats::SequenceTracker;
use crate::frame::{FrameMeta, Placement, Synthesized};

/// What libcamera said about one completed buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RawMetadata {
    /// `FrameMetadata::sequence`, when the metadata was written.
    pub sequence: Option<u32>,
    /// `FrameMetadata::timestamp` in nanoseconds, when written.
    pub timestamp_ns: Option<u64>,
    /// The sum of `FrameMetadata::planes()[i].bytesused`, when written.
    pub bytes_used: Option<usize>,
}

/// Fills what the camera left empty, per stream session (reset at start).
///
/// A sequence or timestamp that is missing, or that does not increase, makes
/// zerocam count or stamp frames itself for the rest of the session (a
/// sequence that jumps between the camera's and ours would be worse than
/// either). `bytes_used` is decided per frame: 0 or missing means the planes'
/// lengths.
#[derive(Debug, Default)]
pub(crate) struct MetadataFixer {
    frames: u32,
    own_sequence: bool,
    own_timestamp: bool,
    last_timestamp: Option<u64>,
    drops: SequenceTracker,
}

impl MetadataFixer {
    /// A new session: the camera's metadata is trusted again until it fails.
    pub fn reset(&mut self) {
        *self = MetadataFixer::default();
    }

    /// The metadata of the next frame: `raw` from libcamera, `length` the
    /// sum of its buffer's plane lengths, `completed` the `CLOCK_MONOTONIC`
    /// time it completed; and the frames lost before it (0 when the sequence
    /// is synthesized).
    pub fn fix(
        &mut self,
        raw: &RawMetadata,
        length: usize,
        completed: Duration,
    ) -> (FrameMeta, u64) {
        let count = self.frames;
        self.frames = self.frames.wrapping_add(1);
        let mut synthesized = Synthesized::NONE;

        let sequence_ok = match (raw.sequence, self.drops.last()) {
            (None, _) => false,
            (Some(s), Some(last)) => s > last,
            (Some(_), None) => true,
        };
        self.own_sequence |= !sequence_ok;
        let (sequence, dropped) = match raw.sequence {
            Some(s) if !self.own_sequence => (s, self.drops.observe(s)),
            _ => {
                synthesized.sequence = true;
                (count, 0)
            }
        };

        let timestamp_ok = match (raw.timestamp_ns, self.last_timestamp) {
            (None | Some(0), _) => false,
            (Some(t), Some(last)) => t > last,
            (Some(_), None) => true,
        };
        self.own_timestamp |= !timestamp_ok;
        let timestamp = match raw.timestamp_ns {
            Some(t) if !self.own_timestamp => {
                self.last_timestamp = Some(t);
                Duration::from_nanos(t)
            }
            _ => {
                synthesized.timestamp = true;
                completed
            }
        };

        let bytes_used = match raw.bytes_used {
            None | Some(0) => {
                synthesized.bytes_used = true;
                length
            }
            Some(reported) => reported,
        };

        let meta = FrameMeta {
            sequence,
            timestamp,
            bytes_used,
            synthesized,
            placement: Placement::default(),
        };
        (meta, dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(seq: u32, ts: u64, used: usize) -> RawMetadata {
        RawMetadata {
            sequence: Some(seq),
            timestamp_ns: Some(ts),
            bytes_used: Some(used),
        }
    }

    #[test]
    fn complete_metadata_is_the_cameras() {
        let mut f = MetadataFixer::default();
        let (a, _) = f.fix(&raw(7, 1_000, 300), 460_800, Duration::from_secs(9));
        assert_eq!(
            (a.sequence, a.timestamp, a.bytes_used),
            (7, Duration::from_nanos(1_000), 300)
        );
        assert_eq!(a.synthesized, Synthesized::NONE);
        let (b, dropped) = f.fix(&raw(10, 2_000, 300), 460_800, Duration::from_secs(9));
        assert_eq!((b.sequence, dropped), (10, 2), "a gap counts as drops");
    }

    #[test]
    fn empty_metadata_is_synthesized_and_said_so() {
        let mut f = MetadataFixer::default();
        for i in 0..3u32 {
            let now = Duration::from_millis(u64::from(i) * 33);
            let (m, _) = f.fix(&RawMetadata::default(), 460_800, now);
            assert_eq!((m.sequence, m.timestamp, m.bytes_used), (i, now, 460_800));
            assert!(m.synthesized.sequence && m.synthesized.timestamp && m.synthesized.bytes_used);
        }
    }

    #[test]
    fn bytesused_zero_means_plane_lengths_per_frame() {
        let mut f = MetadataFixer::default();
        let (m, _) = f.fix(&raw(0, 5, 0), 15, Duration::ZERO);
        assert_eq!((m.bytes_used, m.synthesized.bytes_used), (15, true));
        let (m, _) = f.fix(&raw(1, 6, 12), 15, Duration::ZERO);
        assert_eq!((m.bytes_used, m.synthesized.bytes_used), (12, false));
    }

    #[test]
    fn a_sequence_or_timestamp_going_backwards_is_replaced_for_the_session() {
        let mut f = MetadataFixer::default();
        f.fix(&raw(5, 100, 1), 1, Duration::from_secs(1));
        let (m, _) = f.fix(&raw(5, 50, 1), 1, Duration::from_secs(2));
        assert!(m.synthesized.sequence && m.synthesized.timestamp);
        assert_eq!((m.sequence, m.timestamp), (1, Duration::from_secs(2)));
        let (m, _) = f.fix(&raw(6, 200, 1), 1, Duration::from_secs(3));
        assert!(m.synthesized.sequence && m.synthesized.timestamp, "sticky");
        assert_eq!(m.sequence, 2);
        f.reset();
        let (m, _) = f.fix(&raw(6, 200, 1), 1, Duration::from_secs(3));
        assert_eq!(
            m.synthesized,
            Synthesized::NONE,
            "a new session trusts again"
        );
    }

    #[test]
    fn a_zero_timestamp_is_not_a_timestamp() {
        let mut f = MetadataFixer::default();
        let (m, _) = f.fix(&raw(0, 0, 1), 1, Duration::from_secs(4));
        assert_eq!(
            (m.timestamp, m.synthesized.timestamp),
            (Duration::from_secs(4), true)
        );
        assert!(!m.synthesized.sequence);
    }
}
