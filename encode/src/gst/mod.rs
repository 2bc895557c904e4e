//! GStreamer encoders and the sink side (feature `gstreamer`).
//!
//! - [`FrameSink`]: an `appsrc` that takes [`Frame`](zerocam_capture::Frame)s
//!   into any pipeline (`FrameSink::launch("x264enc ! mp4mux ! filesink
//!   location=x.mp4", &first)`, or over an `appsrc` the caller made). Each
//!   buffer of the frame (one for NV12, two for NV12M) becomes one
//!   `GstMemory` over the frame's own bytes, no bytes copied: a dma-buf as
//!   `GstDmaBufMemory` over a dup of its fd (what dma-buf importers such as
//!   `v4l2h264enc output-io-mode=dmabuf-import` take as it is), a memfd as
//!   `GstFdMemory`, heap memory (no fd) as its CPU map wrapped; with a
//!   `GstVideoMeta` carrying the planes' offsets and strides, under plain
//!   `video/x-raw` caps. Every memory holds a share of the frame: the frame
//!   goes back to its source when GStreamer frees the last of them.
//!   [`SinkConfig::copy`] copies instead (counted), for sources with fewer
//!   buffers than the pipeline holds.
//! - [`GstVideoEncoder`]: `appsrc ! ELEMENT ! parser ! appsink` as a
//!   [`VideoEncoder`](crate::VideoEncoder): Annex-B access units, SPS/PPS
//!   before every keyframe.
//! - [`find`]: the first installed encoder element of a codec.
//!
//! The fd memories are made by [`zerocam_capture::gst::fd_memory`] (this
//! crate has no unsafe code; gstreamer-rs makes fd memory only through
//! `unsafe` calls): the frame's lease is attached to the memory itself and
//! ends when GStreamer frees it. Elements that map the memory (software
//! encoders, `videoconvert`, muxers) read it through GStreamer's own map of
//! the fd, which for a dma-buf brackets the access with
//! `DMA_BUF_IOCTL_SYNC`. See docs/encoding.md, "How a frame enters
//! GStreamer".

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
pub use {gstreamer, gstreamer_allocators, gstreamer_app, gstreamer_video};

pub use bus::error_of;
pub use config::{SinkConfig, SinkStats};
pub use encoder::{candidates, find, GstVideoEncoder};
pub use error::GstEncodeError;
pub use sink::{FrameSink, SOURCE_NAME};
