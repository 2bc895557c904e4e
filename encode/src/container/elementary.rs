//! [`StreamWriter`]: a codec's bare stream, packets back to back: Annex-B
//! H.264 (`.h264`) or HEVC (`.hevc`), Motion JPEG (`.mjpeg`: JPEGs one after
//! another, as ffmpeg's `mjpeg` demuxer and `curl`-style viewers read them),
//! FWHT (`.fwht`: the kernel's vicodec reads it back).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{ContainerError, ContainerWriter};
use crate::{Codec, Packet};

/// A bare stream file: the packets' bytes as they came (H.264/HEVC: start
/// codes, SPS and PPS in-band before every keyframe, from the first
/// keyframe on; MJPEG and FWHT: from the first packet, whose frame stands
/// alone). It has no timestamps: players time it at a rate of their
/// choosing (`ffplay -framerate`), so keep MP4 where timing matters. A file
/// cut short by an error plays up to its last whole packet.
#[derive(Debug)]
pub struct StreamWriter {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    started: bool,
    samples: u64,
    bytes: u64,
}

impl StreamWriter {
    /// Creates `path` (replacing a file there) for `codec` packets.
    ///
    /// # Errors
    /// [`ContainerError::Io`] when the file cannot be created.
    pub fn create(path: &Path, codec: Codec) -> Result<StreamWriter, ContainerError> {
        let file = File::create(path).map_err(|e| ContainerError::io(path, e))?;
        Ok(StreamWriter {
            path: path.to_path_buf(),
            file: Some(BufWriter::new(file)),
            // Only H.264 and HEVC have frames that need an earlier one
            // before the first keyframe; a JPEG or FWHT stream's first
            // frame is whole (vicodec's encoder starts with an I-frame and
            // flags none of its buffers KEYFRAME).
            started: !matches!(codec, Codec::H264 | Codec::Hevc),
            samples: 0,
            bytes: 0,
        })
    }
}

impl ContainerWriter for StreamWriter {
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
