//! [`AnnexBWriter`]: the raw H.264 byte stream (`.h264`), packets back to back.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{ContainerError, ContainerWriter};
use crate::{Codec, Packet};

/// An Annex-B file: the packets' bytes as they came (start codes, SPS and
/// PPS in-band before every keyframe), from the first keyframe on. It has
/// no timestamps: players time it at a rate of their choosing (`ffplay
/// -framerate`), so keep MP4 where timing matters. A file cut short by an
/// error plays up to its last whole packet.
#[derive(Debug)]
pub struct AnnexBWriter {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    started: bool,
    samples: u64,
    bytes: u64,
}

impl AnnexBWriter {
    /// Creates `path` (replacing a file there) for `codec` packets.
    ///
    /// # Errors
    /// [`ContainerError::Codec`] for a codec that is not an Annex-B stream
    /// (MJPEG, FWHT), [`ContainerError::Io`] when the file cannot be created.
    pub fn create(path: &Path, codec: Codec) -> Result<AnnexBWriter, ContainerError> {
        if !matches!(codec, Codec::H264 | Codec::Hevc) {
            return Err(ContainerError::Codec {
                path: path.to_path_buf(),
                container: "Annex-B",
                holds: "H.264 or HEVC",
                codec,
            });
        }
        let file = File::create(path).map_err(|e| ContainerError::io(path, e))?;
        Ok(AnnexBWriter {
            path: path.to_path_buf(),
            file: Some(BufWriter::new(file)),
            started: false,
            samples: 0,
            bytes: 0,
        })
    }
}

impl ContainerWriter for AnnexBWriter {
    fn write(&mut self, packet: &Packet) -> Result<(), ContainerError> {
        let Some(file) = self.file.as_mut() else {
            return Err(ContainerError::Finished {
                path: self.path.clone(),
            });
        };
        self.started |= packet.keyframe;
        if !self.started {
            return Ok(());
        }
        file.write_all(&packet.data)
            .map_err(|e| ContainerError::io(&self.path, e))?;
        self.samples += 1;
        self.bytes += packet.data.len() as u64;
        Ok(())
    }

    fn finish(&mut self) -> Result<u64, ContainerError> {
        if let Some(mut file) = self.file.take() {
            file.flush()
                .map_err(|e| ContainerError::io(&self.path, e))?;
        }
        Ok(self.bytes)
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn samples(&self) -> u64 {
        self.samples
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
