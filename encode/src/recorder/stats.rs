//! [`RecorderStats`]: what a recorder has done.

use crate::encoder::EncodeStats;

/// A recorder's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecorderStats {
    /// Frames given to [`Recorder::write`](super::Recorder::write).
    pub frames: u64,
    /// Samples (encoded frames) in the file.
    pub samples: u64,
    /// Bytes in the file (its size once finished).
    pub bytes: u64,
    /// The encoder's counts (copies included).
    pub encoder: EncodeStats,
    /// Whether the file is closed.
    pub finished: bool,
}
