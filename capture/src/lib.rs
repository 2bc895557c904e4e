//! # zerocam-capture
//!
//! Camera frames as zero-copy tensors. A V4L2 [`Stream`] queues DMA-BUF
//! buffers — driver-allocated and exported once (`MMAP` + `VIDIOC_EXPBUF`), or
//! allocated by zerocam from the DMA heap (`DMABUF`) — and hands each dequeued
//! buffer out as a [`Frame`] whose tensor comes from an
//! [`ImportCache`](zerocam_cache::ImportCache): each buffer plane is imported
//! once, however many frames pass through it. Dropping the frame re-queues the
//! buffer. [`PatternSource`] is the same API on machines without a camera.
//!
//! ```
//! use std::time::Duration;
//! use zerocam_capture::{FrameSource, PatternConfig, PatternSource};
//!
//! let mut camera = PatternSource::new(PatternConfig::new("NV12".parse()?, 640, 480))?;
//! for _ in 0..10 {
//!     let frame = camera.next_frame(Duration::from_secs(1))?;
//!     assert_eq!(frame.tensor().shape(), &[720, 640]);
//! } // each frame drops here and its buffer goes back
//! let stats = camera.stats();
//! assert_eq!(stats.cache.misses, 4, "4 buffers, each imported once");
//! assert_eq!(stats.cache.hits, 6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(unsafe_code)]

// The layout: the source-neutral frame core (`frame/`), one folder per
// source (`v4l2/` with its ioctl layer below it, `libcamera_source/`,
// `gst/`, `pattern/`, and the sharing subscriber in `share/subscriber/`),
// sharing's publisher and wire format (`share/`), and the opener (`open`).
// Each is a public module; the root re-exports what most programs use.
mod error;
pub mod format;
pub mod frame;
/// The fuzz targets' entry points (`fuzz/`): not an API.
#[cfg(any(feature = "fuzzing", test))]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "gstreamer")]
pub mod gst;
#[cfg(any(feature = "libcamera", test))]
pub mod libcamera_source;
pub mod open;
pub mod pattern;
pub mod ros;
pub mod share;
#[cfg(test)]
use zerocam_test_support::alloc as test_alloc;
#[cfg(test)]
#[global_allocator]
static TEST_ALLOC: test_alloc::Counting = test_alloc::Counting;
pub mod v4l2;
pub mod zenoh_source;

pub use error::{ArgumentError, CaptureError, Result};
pub use format::{CaptureFormat, FourCc, CAPTURE_FORMATS};
pub use frame::{Frame, FrameSource, SharedPlane, StreamStats, Synthesized};
#[cfg(feature = "gstreamer")]
pub use gst::GstSource;
#[cfg(feature = "libcamera")]
pub use libcamera_source::{
    libcamera_cameras, quiet_libcamera_log, LibcameraConfig, LibcameraSource,
};
pub use pattern::{PatternConfig, PatternSource};
pub use v4l2::{capture_devices, BufferMode, Device, Stream, StreamConfig};
#[cfg(feature = "zenoh")]
pub use zenoh_source::{ZenohSource, ZenohSourceConfig};
// The negotiated format every source describes its frames with (V4L2's
// vocabulary, which libcamera, GStreamer, the pattern and sharing reuse).
pub use v4l2::{Colorimetry, PlaneLayout, StreamFormat};
pub use zerocam_cache::CacheStats;
pub use zerocam_tensor as tensor;
/// The GStreamer crates `GstSource` speaks (`pipeline`, `with_setup`;
/// feature `gstreamer`).
#[cfg(feature = "gstreamer")]
pub use {gstreamer, gstreamer_allocators, gstreamer_app, gstreamer_video};

/// docs/sharing.md's Rust example, compiled as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../../docs/sharing.md")]
struct SharingExamples;
