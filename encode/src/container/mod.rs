//! Files from encoded packets: [`Mp4Writer`] (ISO BMFF through the `mp4`
//! crate) and [`StreamWriter`] (a codec's bare stream: `.h264`, `.hevc`,
//! `.mjpeg`, `.fwht`), both a
//! [`ContainerWriter`].
//!
//! - `nal`: Annex-B parsing (start codes, NAL unit types).
//! - `mp4file`: the MP4 writer: avcC from the first keyframe's SPS/PPS,
//!   samples timed from the packets' timestamps, sync samples flagged.
//! - `elementary`: the bare-stream writer.

mod elementary;
mod mp4file;
pub(crate) mod nal;

use std::path::{Path, PathBuf};

pub use elementary::StreamWriter;
pub use mp4file::{Mp4Writer, MP4_TIMESCALE};

use crate::{Codec, Packet};

/// A file being written from packets.
pub trait ContainerWriter: Send {
    /// Adds `packet` (packets before the first keyframe are dropped: a
    /// decoder could not start at them).
    ///
    /// # Errors
    /// [`ContainerError`] when the file cannot be written (the file is then
    /// still closed by [`finish`](Self::finish) up to the failure).
    fn write(&mut self, packet: &Packet) -> Result<(), ContainerError>;
    /// Ends the file (MP4: writes the index of every sample written so
    /// far) and flushes it; returns the file's size. A second call does
    /// nothing and returns the size again.
    ///
    /// # Errors
    /// [`ContainerError`] when the end cannot be written.
    fn finish(&mut self) -> Result<u64, ContainerError>;
    /// Bytes written to the file so far (buffered bytes included).
    fn bytes(&self) -> u64;
    /// Samples (packets) in the file so far.
    fn samples(&self) -> u64;
    /// The file.
    fn path(&self) -> &Path;
}

/// Writing a container failed; each variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContainerError {
    /// Creating, writing or flushing the file failed (a full disk is
    /// `ENOSPC` here).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The `mp4` crate refused (its I/O errors included).
    #[error("{path}: MP4: {source}")]
    Mp4 {
        /// The file.
        path: PathBuf,
        /// What it said.
        source: mp4::Error,
    },
    /// The first keyframe has no SPS or PPS to describe the stream with.
    #[error("{path}: keyframe {sequence} carries no {missing} (MP4 needs it for its avcC)")]
    NoParameterSets {
        /// The file.
        path: PathBuf,
        /// The keyframe's sequence number.
        sequence: u32,
        /// "SPS" or "PPS".
        missing: &'static str,
    },
    /// A codec the container does not hold.
    #[error("{path}: {container} files hold {holds}, not {codec}")]
    Codec {
        /// The file.
        path: PathBuf,
        /// "MP4", "Annex-B".
        container: &'static str,
        /// What it holds.
        holds: &'static str,
        /// The codec given.
        codec: Codec,
    },
    /// A size the container cannot describe.
    #[error("{path}: {width}x{height} is larger than MP4's 65535x65535")]
    Size {
        /// The file.
        path: PathBuf,
        /// Width.
        width: usize,
        /// Height.
        height: usize,
    },
    /// A packet written after [`ContainerWriter::finish`].
    #[error("{path}: the file is already finished")]
    Finished {
        /// The file.
        path: PathBuf,
    },
}

impl ContainerError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: &Path, source: std::io::Error) -> ContainerError {
        ContainerError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
