//! Frames into GStreamer: `FrameSink` and `GstVideoEncoder` on the host
//! with the pattern source and GStreamer's software elements.
