//! [`SoftwareMjpeg`]: Motion JPEG on the CPU, a JPEG per frame
//! (libjpeg-turbo from the frame's YCbCr planes, [`crate::jpeg`]).

use zerocam_capture::Frame;
use zerocam_tensor::PixelFormat;

use crate::encoder::{EncodeStats, EncoderConfig, VideoEncoder};
use crate::jpeg::{JpegEncoder, DEFAULT_QUALITY};
use crate::{Codec, EncodeError, Packet};

/// Motion JPEG: every frame its own JPEG (a keyframe), at quality 85; the
/// config's bit rate and GOP do not apply. The compressor and its buffers
/// are kept between frames. Formats whose chroma libjpeg-turbo cannot read
/// in place (NV12, NV16 interleaved; YUYV, UYVY packed) are split into its
/// planes first, and counted in [`EncodeStats::copied_frames`].
#[derive(Debug)]
pub struct SoftwareMjpeg {
    jpeg: JpegEncoder,
    stats: EncodeStats,
}

impl SoftwareMjpeg {
    /// An MJPEG encoder for `config` (its codec must be MJPEG).
    ///
    /// # Errors
    /// [`EncodeError::Unsupported`] for another codec, the JPEG
    /// compressor's errors.
    pub fn open(config: &EncoderConfig) -> Result<SoftwareMjpeg, EncodeError> {
        if config.codec != Codec::Mjpeg {
            return Err(EncodeError::Unsupported {
                encoder: "libjpeg-turbo (software MJPEG)".into(),
                codec: config.codec,
            });
        }
        Ok(SoftwareMjpeg {
            jpeg: JpegEncoder::new(DEFAULT_QUALITY)?,
            stats: EncodeStats::default(),
        })
    }
}

impl VideoEncoder for SoftwareMjpeg {
    fn codec(&self) -> Codec {
        Codec::Mjpeg
    }

    fn describe(&self) -> String {
        format!(
            "libjpeg-turbo (software MJPEG, quality {})",
            self.jpeg.quality()
        )
    }

    fn encode(&mut self, frame: Frame) -> Result<Vec<Packet>, EncodeError> {
        let split = !matches!(
            frame.tensor().format(),
            Some(PixelFormat::Rgb | PixelFormat::Bgr | PixelFormat::Grey)
        );
        let data = self.jpeg.encode(&frame)?.to_vec();
        self.stats.frames_in += 1;
        self.stats.copied_frames += u64::from(split);
        self.stats.packets_out += 1;
        self.stats.bytes_out += data.len() as u64;
        Ok(vec![Packet {
            data,
            pts: frame.timestamp(),
            keyframe: true,
            sequence: frame.sequence(),
        }])
    }

    /// Every JPEG stands alone: each frame is a keyframe already.
    fn request_keyframe(&mut self) -> bool {
        true
    }

    fn finish(&mut self) -> Result<Vec<Packet>, EncodeError> {
        Ok(Vec::new())
    }

    fn stats(&self) -> EncodeStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use zerocam_capture::{FrameSource, PatternConfig, PatternSource};

    use super::*;

    #[test]
    fn every_frame_is_a_jpeg_keyframe_with_its_timestamp() {
        let mut s =
            PatternSource::new(PatternConfig::new("NV12".parse().unwrap(), 64, 48)).unwrap();
        let mut e = SoftwareMjpeg::open(&EncoderConfig::new(Codec::Mjpeg)).unwrap();
        let f = s.next_frame(Duration::from_secs(1)).unwrap();
        let ts = f.timestamp();
        let p = e.encode(f).unwrap();
        assert_eq!(p.len(), 1);
        assert!(p[0].keyframe && p[0].pts == ts && p[0].data.starts_with(&[0xff, 0xd8]));
        assert_eq!(e.stats().copied_frames, 1);
        assert!(SoftwareMjpeg::open(&EncoderConfig::new(Codec::H264)).is_err());
    }
}
