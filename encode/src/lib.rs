//! Frames out of zerocam: a captured [`Frame`](zerocam_capture::Frame)
//! becomes a JPEG, an H.264 (or FWHT, HEVC, MJPEG) stream, or a file.
//!
//! - [`jpeg`]: JPEG straight from the frame's YCbCr planes (libjpeg-turbo's
//!   planar compression; no RGB pass).
//! - [`encoder`]: the [`VideoEncoder`] every video encoder is, and
//!   [`EncoderChoice`] (`Auto` picks a hardware V4L2 memory-to-memory encoder
//!   when one is present and says why).
//! - [`m2m`]: a V4L2 memory-to-memory encoder fed the capture's own
//!   dma-bufs (zerocam-capture's `v4l2::m2m`), as a [`VideoEncoder`].
//! - [`software`]: H.264 on the CPU (OpenH264) where no hardware is.
//! - [`container`]: MP4 and Annex-B files from encoded packets.
//! - [`recorder`]: a [`Recorder`] that writes a file from frames.
//! - `gst` (feature `gstreamer`): GStreamer encoders and the sink side that
//!   pushes frames into any pipeline as dma-buf `GstBuffer`s.

#![deny(unsafe_code)]

pub mod codec;
pub mod container;
pub mod encoder;
pub mod error;
#[cfg(feature = "gstreamer")]
pub mod gst;
pub mod jpeg;
pub mod m2m;
pub mod output_kind;
pub mod recorder;
pub mod software;

pub use codec::{Codec, Packet};
pub use encoder::{EncodeStats, EncoderChoice, VideoEncoder};
pub use error::EncodeError;
pub use recorder::Recorder;
