//! A V4L2 memory-to-memory encoder as a [`VideoEncoder`]:
//! zerocam-capture's [`M2mEncoder`],
//! which queues the frames' own dma-bufs (each capture buffer imported once)
//! and holds each frame until the encoder is done reading it, or copies them
//! (counted, logged) where it cannot.

use std::path::{Path, PathBuf};

use zerocam_capture::v4l2::m2m::{self, M2mConfig, M2mEncoder};
use zerocam_capture::{FourCc, Frame};

use crate::encoder::{EncodeStats, EncoderConfig, VideoEncoder};
use crate::{Codec, EncodeError, Packet};

/// The memory-to-memory encoder failed (zerocam-capture's error: each
/// variant names the device node, and ioctl failures the call and errno).
pub use zerocam_capture::v4l2::m2m::M2mError;

/// A V4L2 M2M encoder node as a [`VideoEncoder`].
#[derive(Debug)]
pub struct M2mVideoEncoder {
    inner: M2mEncoder,
    codec: Codec,
}

/// The capture-side configuration of `config`: its codec, bit rate and GOP.
pub fn m2m_config(config: &EncoderConfig) -> M2mConfig {
    let mut c = M2mConfig::new(FourCc(config.codec.fourcc()));
    c.bitrate = config.bitrate;
    c.gop = config.gop;
    c
}

impl M2mVideoEncoder {
    /// Opens the encoder at `path` for frames like `first_frame` (which is
    /// not encoded: pass it to [`encode`](VideoEncoder::encode)).
    ///
    /// # Errors
    /// [`M2mError`] (as [`EncodeError::M2m`]): not an M2M node, no such
    /// codec, a format refused (naming both), ioctl failures.
    pub fn open(
        path: &Path,
        config: &EncoderConfig,
        first_frame: &Frame,
    ) -> Result<M2mVideoEncoder, EncodeError> {
        M2mVideoEncoder::open_with(path, config.codec, m2m_config(config), first_frame)
    }

    /// [`open`](Self::open) with the M2M settings spelled out (buffer
    /// counts, forced copy).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with(
        path: &Path,
        codec: Codec,
        config: M2mConfig,
        first_frame: &Frame,
    ) -> Result<M2mVideoEncoder, EncodeError> {
        let inner = M2mEncoder::open(path, config, first_frame)?;
        Ok(M2mVideoEncoder { inner, codec })
    }

    /// The encoder underneath (bit rate and GOP changes, drain counts).
    pub fn inner_mut(&mut self) -> &mut M2mEncoder {
        &mut self.inner
    }

    /// The encoder underneath.
    pub fn inner(&self) -> &M2mEncoder {
        &self.inner
    }
}

/// The first memory-to-memory encoder node of `codec` (its coded format on
/// CAPTURE, a raw format on OUTPUT), if any.
pub fn find(codec: Codec) -> Option<PathBuf> {
    m2m::find_encoders(FourCc(codec.fourcc()))
        .into_iter()
        .next()
}

impl VideoEncoder for M2mVideoEncoder {
    fn codec(&self) -> Codec {
        self.codec
    }

    fn describe(&self) -> String {
        format!(
            "{} on {} ({}, V4L2 M2M, frames by {:?})",
            self.codec,
            self.inner.path().display(),
            self.inner.driver(),
            self.inner.memory()
        )
    }

    fn encode(&mut self, frame: Frame) -> Result<Vec<Packet>, EncodeError> {
        Ok(self.inner.encode(frame)?)
    }

    /// The driver's `V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME`, where it has it.
    fn request_keyframe(&mut self) -> bool {
        match self.inner.request_keyframe() {
            Ok(taken) => taken,
            Err(e) => {
                log::warn!(
                    "{}: a keyframe request failed: {e}",
                    self.inner.path().display()
                );
                false
            }
        }
    }

    fn finish(&mut self) -> Result<Vec<Packet>, EncodeError> {
        Ok(self.inner.drain()?)
    }

    fn stats(&self) -> EncodeStats {
        let s = self.inner.stats();
        EncodeStats {
            frames_in: s.frames_in,
            packets_out: s.packets_out,
            bytes_out: s.bytes_out,
            imports: s.imports,
            copied_frames: s.copied_frames,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_carries_codec_rate_and_gop() {
        let mut e = EncoderConfig::new(Codec::H264);
        e.bitrate = Some(2_000_000);
        e.gop = Some(30);
        let c = m2m_config(&e);
        assert_eq!(c.codec, FourCc(*b"H264"));
        assert_eq!(
            (c.bitrate, c.gop, c.force_copy),
            (Some(2_000_000), Some(30), false)
        );
    }

    #[test]
    fn a_missing_node_is_a_typed_error_naming_it() {
        // No frame is needed to fail on the node: find answers None or a path.
        let _ = find(Codec::Fwht);
        let err = zerocam_capture::v4l2::m2m::is_m2m(Path::new("/dev/zerocam-no-such-node"));
        assert!(!err);
    }
}
