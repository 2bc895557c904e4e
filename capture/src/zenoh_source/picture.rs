//! How a topic's samples become pictures: JPEG `CompressedImage`s decoded
//! straight into an RGB buffer (libjpeg-turbo), H.264 `CompressedVideo`
//! access units decoded (OpenH264) and laid into an NV12 buffer.

use openh264::formats::YUVSource;
use zenoh::sample::Sample;

use super::ZenohError;
use crate::ros::{CompressedImage, CompressedVideo, Message, Time};

/// The largest picture side taken (a sender's header saying more is refused).
const MAX_SIDE: usize = 16384;

/// What a topic carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `sensor_msgs/msg/CompressedImage`, JPEG.
    Jpeg,
    /// `foxglove_msgs/msg/CompressedVideo`, H.264.
    H264,
}

impl Kind {
    /// The kind of a topic from its first sample: the Zenoh encoding's
    /// schema when the sender set one (zerocam does: the ROS type), else
    /// whichever message the payload reads as.
    pub fn of(key: &str, sample: &Sample, payload: &[u8]) -> Result<Kind, ZenohError> {
        // `application/cdr;foxglove_msgs/msg/CompressedVideo`: the id and
        // the schema, as Zenoh prints an encoding.
        let schema = sample.encoding().to_string();
        if schema.contains("CompressedVideo") {
            return Ok(Kind::H264);
        }
        if schema.contains("CompressedImage") {
            return Ok(Kind::Jpeg);
        }
        match CompressedImage::decode(payload) {
            Ok(_) => Ok(Kind::Jpeg),
            Err(image) => match CompressedVideo::decode(payload) {
                Ok(_) => Ok(Kind::H264),
                Err(_) => Err(ZenohError::Malformed {
                    key: key.to_owned(),
                    source: image,
                }),
            },
        }
    }
}

/// A sample's stamp and coded bytes, checked for its kind.
pub(super) struct Unit<'a> {
    /// The capture stamp.
    pub stamp: Time,
    /// The JPEG, or the H.264 access unit.
    pub data: &'a [u8],
}

impl<'a> Unit<'a> {
    /// Reads a `kind` payload.
    pub fn read(kind: Kind, key: &str, payload: &'a [u8]) -> Result<Unit<'a>, ZenohError> {
        let malformed = |source| ZenohError::Malformed {
            key: key.to_owned(),
            source,
        };
        let (stamp, data, format, want) = match kind {
            Kind::Jpeg => {
                let m = CompressedImage::decode(payload).map_err(malformed)?;
                (m.header.stamp, m.data, m.format, "jpeg")
            }
            Kind::H264 => {
                let m = CompressedVideo::decode(payload).map_err(malformed)?;
                (m.timestamp, m.data, m.format, "h264")
            }
        };
        if !format.to_ascii_lowercase().contains(want) {
            return Err(ZenohError::Format {
                key: key.to_owned(),
                format: format.to_owned(),
            });
        }
        Ok(Unit { stamp, data })
    }
}

/// A JPEG's size from its header.
pub(super) fn jpeg_size(key: &str, jpeg: &[u8]) -> Result<(u32, u32), ZenohError> {
    let header = turbojpeg::read_header(jpeg).map_err(|e| decode_error(key, &e.to_string()))?;
    checked_size(key, header.width, header.height)
}

/// A picture size within bounds.
fn checked_size(key: &str, w: usize, h: usize) -> Result<(u32, u32), ZenohError> {
    let side = |v: usize| {
        u32::try_from(v)
            .ok()
            .filter(|&v| v > 0 && v as usize <= MAX_SIDE)
    };
    match (side(w), side(h)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(decode_error(key, &format!("a {w}x{h} picture"))),
    }
}

/// A decoder's refusal.
pub(super) fn decode_error(key: &str, reason: &str) -> ZenohError {
    ZenohError::Decode {
        key: key.to_owned(),
        reason: reason.to_owned(),
    }
}

/// An H.264 decoder and the picture it last made.
pub(super) struct H264 {
    decoder: openh264::decoder::Decoder,
}

impl H264 {
    /// A new decoder.
    pub fn new(key: &str) -> Result<H264, ZenohError> {
        let decoder =
            openh264::decoder::Decoder::new().map_err(|e| decode_error(key, &e.to_string()))?;
        Ok(H264 { decoder })
    }

    /// Decodes an access unit: `None` when it gave no picture (parameter
    /// sets alone, or the decoder waiting for a keyframe).
    pub fn decode<'d>(
        &'d mut self,
        key: &str,
        unit: &[u8],
    ) -> Result<Option<Picture<'d>>, ZenohError> {
        let yuv = self
            .decoder
            .decode(unit)
            .map_err(|e| decode_error(key, &e.to_string()))?;
        let Some(yuv) = yuv else {
            return Ok(None);
        };
        let (w, h) = yuv.dimensions();
        let (width, height) = checked_size(key, w, h)?;
        Ok(Some(Picture { yuv, width, height }))
    }
}

/// A decoded H.264 picture (I420, in the decoder's memory).
pub(super) struct Picture<'d> {
    yuv: openh264::decoder::DecodedYUV<'d>,
    /// Its width.
    pub width: u32,
    /// Its height.
    pub height: u32,
}

impl Picture<'_> {
    /// Lays the picture into an NV12 buffer of `pitch`-byte rows: Y, then
    /// Cb and Cr interleaved (the one copy decoding a stream needs: the
    /// decoder's own buffers are reused for the next picture).
    pub fn write_nv12(&self, dst: &mut [u8], pitch: usize) {
        let (w, h) = (self.width as usize, self.height as usize);
        let (ys, us, vs) = self.yuv.strides();
        let (y, u, v) = (self.yuv.y(), self.yuv.u(), self.yuv.v());
        for (row, out) in dst.chunks_mut(pitch).take(h).enumerate() {
            out[..w].copy_from_slice(&y[row * ys..][..w]);
        }
        let chroma = &mut dst[pitch * h..];
        for (row, out) in chroma.chunks_mut(pitch).take(h / 2).enumerate() {
            let (u, v) = (&u[row * us..][..w / 2], &v[row * vs..][..w / 2]);
            for (pair, (cb, cr)) in out[..w].chunks_exact_mut(2).zip(u.iter().zip(v)) {
                pair[0] = *cb;
                pair[1] = *cr;
            }
        }
    }
}
