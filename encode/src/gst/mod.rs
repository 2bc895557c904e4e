//! GStreamer encoders and the sink side (feature `gstreamer`).
//!
//! - [`FrameSink`]: an `appsrc` that takes [`Frame`](zerocam_capture::Frame)s
//!   into any pipeline (`FrameSink::launch("x264enc ! mp4mux ! filesink
//!   location=x.mp4", &first)`, or over an `appsrc` the caller made). Each
//!   buffer of the frame (memfd, dma-buf or heap; one for NV12, two for
//!   NV12M) becomes one `GstMemory` over its CPU map, no bytes copied, with
//!   a `GstVideoMeta` carrying the planes' offsets and strides, under plain
//!   `video/x-raw` caps. Every memory holds a share of the frame: the frame
//!   goes back to its source when GStreamer frees the last of them.
//!   [`SinkConfig::copy`] copies instead (counted), for sources with fewer
//!   buffers than the pipeline holds.
//! - [`GstVideoEncoder`]: `appsrc ! ELEMENT ! parser ! appsink` as a
//!   [`VideoEncoder`](crate::VideoEncoder): Annex-B access units, SPS/PPS
//!   before every keyframe.
//! - [`find`]: the first installed encoder element of a codec.
//!
//! The memories are wrapped CPU maps, not `GstDmaBufMemory`: gstreamer-rs
//! makes dma-buf memory only through `unsafe` calls, and this crate has no
//! unsafe code. Elements that map memory (software encoders, `videoconvert`,
//! muxers of raw video) read the frame's buffer in place; an element that
//! imports dma-buf fds (a V4L2 encoder in `dmabuf-import` mode) copies
//! into its own buffers instead.

mod buffer;
mod bus;
mod config;
mod encoder;
mod error;
mod lease;
mod picture;
mod rate;
mod sink;

/// The gstreamer-rs crates this module is built on, for callers that make
/// the `appsrc` [`FrameSink::new`] takes or reach into a pipeline.
pub use {gstreamer, gstreamer_app, gstreamer_video};

pub use bus::error_of;
pub use config::{SinkConfig, SinkStats};
pub use encoder::{candidates, find, GstVideoEncoder};
pub use error::GstEncodeError;
pub use sink::{FrameSink, SOURCE_NAME};
