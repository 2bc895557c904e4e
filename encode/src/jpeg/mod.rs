//! JPEG straight from a frame's YCbCr planes (libjpeg-turbo), no RGB pass.

/// JPEG compression failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JpegError {}
