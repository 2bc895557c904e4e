//! The source-neutral frame core: [`Frame`], the guard a source hands out,
//! and the [`FrameSource`] trait every source implements; below it, the slot
//! that keeps a lent buffer from its owner (`slot`), the frame's tensor out
//! of the import cache (`tensor`), the memory a plane lives in
//! (`plane_memory`) and the counters (`stats`: [`StreamStats`]).

pub(crate) mod plane_memory;
pub(crate) mod slot;
pub(crate) mod stats;
pub(crate) mod tensor;

pub use stats::{Clock, StreamStats};

use std::fmt;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use zerocam_tensor::{ColorSpec, Tensor};

use crate::{Result, StreamFormat};

/// The owner of a frame's buffer: takes it back when the frame drops.
pub(crate) trait Requeue: Send + Sync {
    /// Buffer `index` is free again.
    fn requeue(&self, index: usize);
}

/// Locks the state a source shares with its frames, poisoned or not.
pub(crate) fn lock<T>(state: &Mutex<T>) -> MutexGuard<'_, T> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A captured frame: its tensor, sequence number, timestamp and colour
/// spec. Dropping it
/// gives the buffer back to the source (V4L2: `VIDIOC_QBUF`).
///
/// The tensor is the driver's buffer itself, imported once and cached: clones
/// of it stay valid memory after the frame drops, but the driver writes the
/// next frames into it — copy what you keep.
pub struct Frame {
    tensor: Tensor<u8>,
    meta: FrameMeta,
    index: usize,
    overhead: Duration,
    color: ColorSpec,
    owner: Arc<dyn Requeue>,
}

/// What a source says of a frame besides its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameMeta {
    pub sequence: u32,
    pub timestamp: Duration,
    pub bytes_used: usize,
    pub synthesized: Synthesized,
    /// Where the source laid the tensor in the buffer's planes.
    pub placement: Placement,
}

/// Where a frame lies in its buffer's memory planes: what the source gave
/// `Slot::tensor` (V4L2's `data_offset` per plane; libcamera's chroma offset in
/// a one-file buffer) and what a publisher sends so that a subscriber lays the
/// same tensor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The data offset in each memory plane (unused entries 0).
    pub offsets: [usize; 2],
    /// The chroma plane's offset after the luma plane in a one-buffer
    /// two-plane format (`None`: right after it).
    pub chroma_offset: Option<usize>,
}

impl Placement {
    /// `offsets` (at most two memory planes) and `chroma_offset`.
    pub fn new(offsets: &[usize], chroma_offset: Option<usize>) -> Placement {
        let mut p = Placement {
            offsets: [0; 2],
            chroma_offset,
        };
        for (to, from) in p.offsets.iter_mut().zip(offsets) {
            *to = *from;
        }
        p
    }
}

/// One memory plane of a buffer as handed to another process
/// ([`FrameSource::read_only_planes`]).
#[derive(Debug)]
pub struct SharedPlane {
    /// The plane's file, opened `O_RDONLY`.
    pub fd: OwnedFd,
    /// Its length in bytes.
    pub length: usize,
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
    /// The frame of buffer `index` of `owner` (which takes the buffer back
    /// when it drops), its tensor and metadata; `ready` is when the buffer
    /// was ready (the dequeue overhead is counted from it).
    pub(crate) fn new(
        owner: Arc<dyn Requeue>,
        index: usize,
        tensor: Tensor<u8>,
        color: ColorSpec,
        meta: FrameMeta,
        ready: Instant,
    ) -> Frame {
        Frame {
            tensor,
            meta,
            index,
            overhead: ready.elapsed(),
            color,
            owner,
        }
    }

    /// The frame as a tensor (an image tensor with the stream's format, strides
    /// and plane offsets; NV12M/NV16M planes live in two buffers).
    pub fn tensor(&self) -> &Tensor<u8> {
        &self.tensor
    }

    /// The driver's sequence number (zerocam's frame count where
    /// [`synthesized`](Self::synthesized)`().sequence`).
    pub fn sequence(&self) -> u32 {
        self.meta.sequence
    }

    /// When the frame was captured, as the driver stamped it: `CLOCK_MONOTONIC`
    /// for drivers that flag `V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC` (vb2 drivers,
    /// vivid and the i.MX ISI among them) and for the pattern source; for
    /// libcamera, its `FrameMetadata::timestamp` (nanoseconds, monotonic), or
    /// zerocam's `CLOCK_MONOTONIC` at completion where
    /// [`synthesized`](Self::synthesized)`().timestamp`.
    pub fn timestamp(&self) -> Duration {
        self.meta.timestamp
    }

    /// Which of [`sequence`](Self::sequence), [`timestamp`](Self::timestamp)
    /// and [`bytes_used`](Self::bytes_used) zerocam synthesized because the
    /// source left them empty.
    pub fn synthesized(&self) -> Synthesized {
        self.meta.synthesized
    }

    /// Bytes the driver filled, all planes (V4L2 `bytesused`, `data_offset` included).
    pub fn bytes_used(&self) -> usize {
        self.meta.bytes_used
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
    ///   ([`rgb_to_yuv`](crate::pattern::rgb_to_yuv)).
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

    /// Where the frame lies in its buffer's memory planes.
    pub(crate) fn placement(&self) -> Placement {
        self.meta.placement
    }

    /// Gives the buffer back now (the same as dropping the frame).
    pub fn release(self) {}

    /// Two holders of this frame: each a `Frame` of its own (the same
    /// tensor, metadata and buffer), and the buffer goes back to its source
    /// only when both are dropped. For two consumers that each keep the
    /// frame as long as they need it, neither copying it: a hardware
    /// encoder importing its dma-buf, and the socket's clients leasing it.
    ///
    /// ```
    /// # use zerocam_capture::{FrameSource, PatternConfig, PatternSource};
    /// # use std::time::Duration;
    /// let mut source = PatternSource::new(PatternConfig::new("NV12".parse()?, 64, 48))?;
    /// let frame = source.next_frame(Duration::from_secs(1))?;
    /// let (encoder_s, clients) = frame.share();
    /// assert_eq!(encoder_s.buffer_index(), clients.buffer_index());
    /// drop(clients); // the buffer stays out: the encoder's copy holds it
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn share(mut self) -> (Frame, Frame) {
        let joint: Arc<dyn Requeue> = Arc::new(Joint {
            owner: self.owner.clone(),
            holders: AtomicUsize::new(2),
        });
        self.owner = joint.clone();
        let other = Frame {
            tensor: self.tensor.clone(),
            meta: self.meta,
            index: self.index,
            overhead: self.overhead,
            color: self.color,
            owner: joint,
        };
        (self, other)
    }
}

/// The owner of a frame's buffer for the holders [`Frame::share`] made:
/// the buffer goes back to `owner` when the last of them is dropped.
struct Joint {
    owner: Arc<dyn Requeue>,
    holders: AtomicUsize,
}

impl Requeue for Joint {
    fn requeue(&self, index: usize) {
        if self.holders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.owner.requeue(index);
        }
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        self.owner.requeue(self.index);
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frame")
            .field("meta", &self.meta)
            .field("index", &self.index)
            .field("color", &self.color)
            .field("tensor", &self.tensor)
            .finish()
    }
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

    /// Read-only fds of buffer `index`'s memory planes, for handing to other
    /// processes ([`share::Publisher`](crate::share::Publisher) asks once per
    /// buffer): V4L2 streams opened with
    /// [`StreamConfig::read_only`](crate::StreamConfig::read_only) and the
    /// pattern source (its memfds re-opened `O_RDONLY`) have them.
    ///
    /// # Errors
    /// [`CaptureError::NotShareable`](crate::CaptureError::NotShareable) when
    /// the buffers cannot be had read-only (a read-write dma-buf cannot be
    /// re-opened read-only; this default), or `index` is not a buffer.
    fn read_only_planes(&self, index: usize) -> Result<Vec<SharedPlane>> {
        Err(crate::CaptureError::NotShareable {
            path: self.name().to_path_buf(),
            index,
            reason: "this source's buffers cannot be had read-only".into(),
        })
    }

    /// The clock its frames' timestamps are on ([`Clock::Monotonic`]: this
    /// default).
    fn clock(&self) -> Clock {
        Clock::Monotonic
    }
}

/// A boxed source is a source (the CLI opens one of several kinds and hands
/// it to a [`Publisher`](crate::share::Publisher)).
impl<S: FrameSource + ?Sized> FrameSource for Box<S> {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        (**self).next_frame(timeout)
    }

    fn stream_format(&self) -> &StreamFormat {
        (**self).stream_format()
    }

    fn stats(&self) -> StreamStats {
        (**self).stats()
    }

    fn name(&self) -> &Path {
        (**self).name()
    }

    fn read_only_planes(&self, index: usize) -> Result<Vec<SharedPlane>> {
        (**self).read_only_planes(index)
    }

    fn clock(&self) -> Clock {
        (**self).clock()
    }
}
