//! [`SoftwareH264`]: OpenH264 as a [`VideoEncoder`].

use std::time::Duration;

use openh264::encoder::{
    BitRate, Encoder, EncoderConfig as OhConfig, FrameRate, FrameType, IntraFramePeriod,
    RateControlMode, SpsPpsStrategy, UsageType, VuiConfig,
};
use openh264::{OpenH264API, Timestamp};
use zerocam_capture::Frame;
use zerocam_tensor::{ColorSpec, Matrix, Range};

use super::planes::{with_i420, Scratch};
use super::SoftwareError;
use crate::encoder::{EncodeStats, EncoderConfig, VideoEncoder};
use crate::{Codec, EncodeError, Packet};

/// Bits per pixel per frame of the default bit rate (0.1: about 2.8 Mbit/s
/// at 1280x720 and 30 fps, 6.2 Mbit/s at 1920x1080).
const DEFAULT_BITS_PER_PIXEL: f64 = 0.1;

/// H.264 on the CPU: Cisco's OpenH264 (Constrained Baseline, no B-frames,
/// so every frame comes out as it goes in: no lag, nothing to drain).
///
/// Input: NV12, NV16, YUYV, UYVY and GREY frames, turned into the I420
/// OpenH264 reads. The luma plane of NV12/NV16/GREY is read in place; the
/// chroma of NV12 (interleaved CbCr) is split into two planes, NV16's
/// averaged down to 4:2:0, and YUYV/UYVY are unpacked whole — into scratch
/// planes allocated once and reused, so a stream allocates nothing per
/// frame. Those splits are copies, and [`EncodeStats::copied_frames`] counts
/// every frame that needed one: with NV12 that is every frame (a CPU
/// encoder reads the planes anyway; only GREY goes through uncopied).
///
/// Rate control: [`EncoderConfig::bitrate`] (default: 0.1 bit per pixel
/// per frame at [`EncoderConfig::fps`]) with OpenH264's bit-rate mode, no
/// skipped frames; a keyframe (IDR, with SPS and PPS before it) every
/// [`EncoderConfig::gop`] frames (default: two seconds' worth). One encoding
/// thread (the caller's).
pub struct SoftwareH264 {
    encoder: Encoder,
    width: usize,
    height: usize,
    bitrate: u32,
    gop: u32,
    scratch: Scratch,
    stats: EncodeStats,
}

impl std::fmt::Debug for SoftwareH264 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SoftwareH264")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("bitrate", &self.bitrate)
            .field("gop", &self.gop)
            .field("stats", &self.stats)
            .finish()
    }
}

/// The VUI that tells a player how to read the frame's YCbCr.
fn vui(color: ColorSpec) -> VuiConfig {
    let v = match color.matrix {
        Matrix::Bt601 => VuiConfig::bt601(),
        Matrix::Bt709 => VuiConfig::bt709(),
    };
    v.full_range(color.range == Range::Full)
}

impl SoftwareH264 {
    /// An encoder of `config` for frames like `first` (its size and colour
    /// spec; every later frame must have its size).
    ///
    /// # Errors
    /// [`EncodeError::Unsupported`] for a codec other than H.264,
    /// [`SoftwareError::Size`] for odd sizes or beyond 3840x2160,
    /// [`SoftwareError::Format`] for a format it cannot read,
    /// [`SoftwareError::OpenH264`] when OpenH264 refuses the parameters.
    pub fn open(config: &EncoderConfig, first: &Frame) -> Result<SoftwareH264, EncodeError> {
        let t = first.tensor();
        let (w, h) = (t.width().unwrap_or(0), t.height().unwrap_or(0));
        if let Some(f) = t.format() {
            use zerocam_tensor::PixelFormat as P;
            if !matches!(f, P::Nv12 | P::Nv16 | P::Yuyv | P::Uyvy | P::Grey) {
                return Err(SoftwareError::Format {
                    format: f.name().to_string(),
                }
                .into());
            }
        }
        SoftwareH264::with_size(config, w, h, first.color_spec())
    }

    /// An encoder of `config` for `width`x`height` frames whose YCbCr reads
    /// as `color` (written into the stream's VUI).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn with_size(
        config: &EncoderConfig,
        width: usize,
        height: usize,
        color: ColorSpec,
    ) -> Result<SoftwareH264, EncodeError> {
        if config.codec != Codec::H264 {
            return Err(EncodeError::Unsupported {
                encoder: "OpenH264 (software)".into(),
                codec: config.codec,
            });
        }
        let (big, small) = (width.max(height), width.min(height));
        if width == 0
            || height == 0
            || !width.is_multiple_of(2)
            || !height.is_multiple_of(2)
            || big > 3840
            || small > 2160
        {
            return Err(SoftwareError::Size { width, height }.into());
        }
        let fps = config.fps.max(1);
        let bitrate = config.bitrate.unwrap_or_else(|| {
            let bits = width as f64 * height as f64 * f64::from(fps) * DEFAULT_BITS_PER_PIXEL;
            bits.min(f64::from(u32::MAX)) as u32
        });
        let gop = config.gop.unwrap_or(fps.saturating_mul(2)).max(1);
        let oh = OhConfig::new()
            .bitrate(BitRate::from_bps(bitrate))
            .rate_control_mode(RateControlMode::Bitrate)
            .max_frame_rate(FrameRate::from_hz(fps as f32))
            .skip_frames(false)
            .usage_type(UsageType::CameraVideoRealTime)
            .sps_pps_strategy(SpsPpsStrategy::ConstantId)
            .intra_frame_period(IntraFramePeriod::from_num_frames(gop))
            .num_threads(1)
            .vui(vui(color));
        let encoder = Encoder::with_api_config(OpenH264API::from_source(), oh).map_err(|e| {
            SoftwareError::OpenH264 {
                during: "initialize".into(),
                message: e.to_string(),
            }
        })?;
        log::debug!("OpenH264: {width}x{height}, {bitrate} bit/s, keyframe every {gop} frames");
        Ok(SoftwareH264 {
            encoder,
            width,
            height,
            bitrate,
            gop,
            scratch: Scratch::default(),
            stats: EncodeStats::default(),
        })
    }

    /// The bit rate it encodes at, bits per second.
    pub fn bitrate(&self) -> u32 {
        self.bitrate
    }

    /// Frames between keyframes.
    pub fn gop(&self) -> u32 {
        self.gop
    }
}

impl VideoEncoder for SoftwareH264 {
    fn codec(&self) -> Codec {
        Codec::H264
    }

    fn describe(&self) -> String {
        format!(
            "OpenH264 (software, {}x{}, {} kbit/s, keyframe every {} frames)",
            self.width,
            self.height,
            self.bitrate / 1000,
            self.gop
        )
    }

    fn encode(&mut self, frame: Frame) -> Result<Vec<Packet>, EncodeError> {
        self.encode_borrowed(&frame)
    }

    /// OpenH264 reads the frame's planes (converted to I420 where they are
    /// not) before this returns: it keeps nothing.
    fn encode_borrowed(&mut self, frame: &Frame) -> Result<Vec<Packet>, EncodeError> {
        let t = frame.tensor();
        let (w, h) = (t.width().unwrap_or(0), t.height().unwrap_or(0));
        if (w, h) != (self.width, self.height) {
            return Err(SoftwareError::SizeChanged {
                sequence: frame.sequence(),
                width: w,
                height: h,
                stream_width: self.width,
                stream_height: self.height,
            }
            .into());
        }
        let pts: Duration = frame.timestamp();
        let millis = u64::try_from(pts.as_millis()).unwrap_or(u64::MAX);
        let encoder = &mut self.encoder;
        let (out, copied) = with_i420(t, w, h, &mut self.scratch, |src| {
            encoder
                .encode_at(src, Timestamp::from_millis(millis))
                .map(|bits| (bits.frame_type(), bits.to_vec()))
        })?;
        let (kind, data) = out.map_err(|e| SoftwareError::OpenH264 {
            during: format!("encode frame {}", frame.sequence()),
            message: e.to_string(),
        })?;
        self.stats.frames_in += 1;
        if copied {
            self.stats.copied_frames += 1;
        }
        if matches!(kind, FrameType::Skip | FrameType::Invalid) || data.is_empty() {
            log::debug!("OpenH264 skipped frame {}", frame.sequence());
            return Ok(Vec::new());
        }
        self.stats.packets_out += 1;
        self.stats.bytes_out += data.len() as u64;
        Ok(vec![Packet {
            data,
            pts,
            keyframe: kind == FrameType::IDR,
            sequence: frame.sequence(),
        }])
    }

    /// OpenH264's `ForceIntraFrame`: the next frame is an IDR, its SPS and
    /// PPS before it.
    fn request_keyframe(&mut self) -> bool {
        self.encoder.force_intra_frame();
        true
    }

    fn finish(&mut self) -> Result<Vec<Packet>, EncodeError> {
        // No B-frames, no lookahead: every frame came out when it went in.
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
    use crate::container::nal::{kind, units, PPS, SPS};

    /// IDR slice's `nal_unit_type`.
    const IDR: u8 = 5;

    /// A keyframe on request: the frame after the request is an IDR with
    /// its SPS and PPS, mid-GOP, and the GOP goes on after it.
    #[test]
    fn a_requested_keyframe_is_the_next_frame() {
        let mut s =
            PatternSource::new(PatternConfig::new("NV12".parse().unwrap(), 64, 48)).unwrap();
        let mut next = || s.next_frame(Duration::from_secs(1)).unwrap();
        let first = next();
        let mut config = EncoderConfig::new(Codec::H264);
        config.gop = Some(100);
        let mut e = SoftwareH264::open(&config, &first).unwrap();
        let mut keys = vec![e.encode(first).unwrap()[0].keyframe];
        for i in 1..12 {
            if i == 6 {
                assert!(e.request_keyframe());
            }
            let p = e.encode(next()).unwrap();
            assert_eq!(p.len(), 1);
            if i == 6 {
                let types: Vec<u8> = units(&p[0].data).map(kind).collect();
                assert!(
                    [SPS, PPS, IDR].iter().all(|t| types.contains(t)),
                    "{types:?}"
                );
            }
            keys.push(p[0].keyframe);
        }
        let at: Vec<usize> = (0..keys.len()).filter(|&i| keys[i]).collect();
        assert_eq!(at, [0, 6]);
    }
}
