//! GStreamer encoders and the sink side (feature `gstreamer`).

/// A GStreamer encoder or sink failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GstEncodeError {}
