//! [`Frame`], the guard a source hands out, and what every source shares:
//! its counters and the [`FrameSource`] trait.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use zerocam_cache::CacheStats;
use zerocam_tensor::{ColorSpec, Tensor};

use crate::{Result, StreamFormat};

/// The owner of a frame's buffer: takes it back when the frame drops.
pub(crate) trait Requeue: Send + Sync {
    /// Buffer `index` is free again.
    fn requeue(&self, index: usize);
}

/// A captured frame: its tensor, sequence number, timestamp and colour
/// spec. Dropping it
/// gives the buffer back to the source (V4L2: `VIDIOC_QBUF`).
///
/// The tensor is the driver's buffer itself, imported once and cached: clones
/// of it stay valid memory after the frame drops, but the driver writes the
/// next frames into it — copy what you keep.
pub struct Frame {
    pub(crate) tensor: Tensor<u8>,
    pub(crate) sequence: u32,
    pub(crate) timestamp: Duration,
    pub(crate) bytes_used: usize,
    pub(crate) index: usize,
    pub(crate) overhead: Duration,
    pub(crate) synthesized: Synthesized,
    pub(crate) color: ColorSpec,
    pub(crate) owner: Arc<dyn Requeue>,
}

/// Which of a frame's metadata zerocam made up because the source left it
/// empty (libcamera 0.4.0's virtual camera fills no frame metadata, for one).
/// All `false` for V4L2 streams and the pattern source, whose values are the
/// source's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Synthesized {
    /// [`Frame::sequence`] is zerocam's count of frames since the stream
    /// started (0, 1, 2, …), not the camera's.
    pub sequence: bool,
    /// [`Frame::timestamp`] is `CLOCK_MONOTONIC` read by zerocam when the
    /// frame completed, not the camera's capture time.
    pub timestamp: bool,
    /// [`Frame::bytes_used`] is the buffer planes' lengths, not the bytes the
    /// camera reported filling.
    pub bytes_used: bool,
}

impl Synthesized {
    /// Nothing synthesized: every field is the source's.
    pub const NONE: Synthesized = Synthesized {
        sequence: false,
        timestamp: false,
        bytes_used: false,
    };

    /// Whether any field was synthesized.
    pub fn any(self) -> bool {
        self.sequence || self.timestamp || self.bytes_used
    }
}

impl Frame {
    /// The frame as a tensor (an image tensor with the stream's format, strides
    /// and plane offsets; NV12M/NV16M planes live in two buffers).
    pub fn tensor(&self) -> &Tensor<u8> {
        &self.tensor
    }

    /// The driver's sequence number (zerocam's frame count where
    /// [`synthesized`](Self::synthesized)`().sequence`).
    pub fn sequence(&self) -> u32 {
        self.sequence
    }

    /// When the frame was captured, as the driver stamped it: `CLOCK_MONOTONIC`
    /// for drivers that flag `V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC` (vb2 drivers,
    /// vivid and the i.MX ISI among them) and for the pattern source; for
    /// libcamera, its `FrameMetadata::timestamp` (nanoseconds, monotonic), or
    /// zerocam's `CLOCK_MONOTONIC` at completion where
    /// [`synthesized`](Self::synthesized)`().timestamp`.
    pub fn timestamp(&self) -> Duration {
        self.timestamp
    }

    /// Which of [`sequence`](Self::sequence), [`timestamp`](Self::timestamp)
    /// and [`bytes_used`](Self::bytes_used) zerocam synthesized because the
    /// source left them empty.
    pub fn synthesized(&self) -> Synthesized {
        self.synthesized
    }

    /// Bytes the driver filled, all planes (V4L2 `bytesused`, `data_offset` included).
    pub fn bytes_used(&self) -> usize {
        self.bytes_used
    }

    /// How the frame's YCbCr is to be read (matrix and range): give it to a
    /// conversion (`zerocam_gpu::ConvertOptions::color`,
    /// `CpuPreprocessor::convert`). It is the stream's
    /// ([`StreamFormat::color`](crate::StreamFormat::color)), decided once at
    /// set-up:
    ///
    /// - V4L2: the driver's `colorspace`, `ycbcr_enc` and `quantization` of
    ///   the stream's format, "default" values resolved by the kernel's rules
    ///   ([`Colorimetry::color_spec`](crate::Colorimetry::color_spec):
    ///   SMPTE170M and sRGB give BT.601 limited, REC709 BT.709 limited, JPEG
    ///   BT.601 full; BT.2020 and SMPTE 240M are read as BT.709).
    /// - libcamera: the stream configuration's `ColorSpace` after
    ///   `validate()` (its Y'CbCr encoding and range), BT.601 limited when the
    ///   pipeline handler leaves it unset.
    /// - The pattern source: BT.601 limited, what it draws with
    ///   ([`rgb_to_yuv`](crate::rgb_to_yuv)).
    ///
    /// For RGB frames there is nothing to convert and the spec only records
    /// the source's colorimetry.
    pub fn color_spec(&self) -> ColorSpec {
        self.color
    }

    /// The index of the buffer the frame is in.
    pub fn buffer_index(&self) -> usize {
        self.index
    }

    /// The time zerocam spent handing this frame out: from the buffer being
    /// ready (the driver's wake-up, the pattern drawn; the call itself when a
    /// buffer was already done) to the frame returned — `VIDIOC_DQBUF`, the
    /// cache lookup, the guard. Waiting for the driver is not included. Re-queueing is timed by the caller around the drop.
    pub fn dequeue_overhead(&self) -> Duration {
        self.overhead
    }

    /// Gives the buffer back now (the same as dropping the frame).
    pub fn release(self) {}
}

impl Drop for Frame {
    fn drop(&mut self) {
        self.owner.requeue(self.index);
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frame")
            .field("sequence", &self.sequence)
            .field("timestamp", &self.timestamp)
            .field("bytes_used", &self.bytes_used)
            .field("index", &self.index)
            .field("synthesized", &self.synthesized)
            .field("color", &self.color)
            .field("tensor", &self.tensor)
            .finish()
    }
}

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
}

/// Anything that produces frames: a V4L2 [`Stream`](crate::Stream) or the
/// built-in [`PatternSource`](crate::PatternSource).
pub trait FrameSource: Send {
    /// The next frame, waiting at most `timeout`.
    ///
    /// # Errors
    /// [`CaptureError::Timeout`](crate::CaptureError::Timeout) when none came,
    /// [`CaptureError::NoFreeBuffer`](crate::CaptureError::NoFreeBuffer) when the
    /// caller holds every buffer, and the source's own failures.
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame>;

    /// The format frames come in.
    fn stream_format(&self) -> &StreamFormat;

    /// The counters so far.
    fn stats(&self) -> StreamStats;

    /// The device path, or `pattern` for the pattern source.
    fn name(&self) -> &Path;
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

/// A source's default import-cache capacity: every buffer plane twice.
pub(crate) fn cache_capacity(buffers: usize, planes: usize) -> usize {
    2 * buffers * planes
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
