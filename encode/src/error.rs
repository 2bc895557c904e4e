//! [`EncodeError`]: everything encoding or writing a file can refuse.

use std::path::PathBuf;

/// An encoder or a recorder failed; each variant names what and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// JPEG compression failed.
    #[error(transparent)]
    Jpeg(#[from] crate::jpeg::JpegError),
    /// The software H.264 encoder failed.
    #[error(transparent)]
    Software(#[from] crate::software::SoftwareError),
    /// The V4L2 memory-to-memory encoder failed.
    #[error(transparent)]
    M2m(#[from] crate::m2m::M2mError),
    /// Writing the container failed.
    #[error(transparent)]
    Container(#[from] crate::container::ContainerError),
    /// A GStreamer encoder or sink failed.
    #[cfg(feature = "gstreamer")]
    #[error(transparent)]
    Gst(#[from] crate::gst::GstEncodeError),
    /// The codec isn't one this encoder makes.
    #[error("{encoder} does not encode {codec}")]
    Unsupported {
        /// The encoder, as it describes itself.
        encoder: String,
        /// The codec asked for.
        codec: crate::Codec,
    },
    /// [`VideoEncoder::encode_borrowed`](crate::VideoEncoder::encode_borrowed)
    /// asked of an encoder that keeps the frames it reads (a hardware
    /// encoder holds the buffer until it is done with it).
    #[error("{encoder} keeps the frames it encodes: it takes them by value, not borrowed")]
    NeedsOwnedFrames {
        /// The encoder, as it describes itself.
        encoder: String,
    },
    /// An output file name whose extension zerocam doesn't write.
    #[error("{path}: zerocam does not write {ext:?} files (it writes {known})")]
    Extension {
        /// The output path.
        path: PathBuf,
        /// Its extension ("" when none).
        ext: String,
        /// The extensions it does write.
        known: &'static str,
    },
    /// Creating or writing the output file failed.
    #[error("{path}: {source}")]
    Io {
        /// The output path.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}
