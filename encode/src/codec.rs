//! What an encoder makes: a [`Codec`] and its [`Packet`]s.

use std::fmt;
use std::str::FromStr;

/// A compressed video format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// H.264 / AVC, Annex-B byte stream (start codes).
    H264,
    /// H.265 / HEVC, Annex-B byte stream.
    Hevc,
    /// Motion JPEG: one JPEG per frame.
    Mjpeg,
    /// The kernel's FWHT (vicodec's test codec).
    Fwht,
}

impl Codec {
    /// Every codec, in the order `--codec` lists them.
    pub const ALL: [Codec; 4] = [Codec::H264, Codec::Hevc, Codec::Mjpeg, Codec::Fwht];

    /// The name `--codec` and Python's `codec=` take.
    pub fn name(self) -> &'static str {
        match self {
            Codec::H264 => "h264",
            Codec::Hevc => "hevc",
            Codec::Mjpeg => "mjpeg",
            Codec::Fwht => "fwht",
        }
    }

    /// The V4L2 pixel format of the encoder's CAPTURE (compressed) queue.
    pub fn fourcc(self) -> [u8; 4] {
        match self {
            Codec::H264 => *b"H264",
            Codec::Hevc => *b"HEVC",
            Codec::Mjpeg => *b"MJPG",
            Codec::Fwht => *b"FWHT",
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A codec name that isn't one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown codec {0:?} (known: h264, hevc, mjpeg, fwht)")]
pub struct UnknownCodec(pub String);

impl FromStr for Codec {
    type Err = UnknownCodec;

    fn from_str(s: &str) -> Result<Codec, UnknownCodec> {
        Codec::ALL
            .into_iter()
            .find(|c| {
                c.name().eq_ignore_ascii_case(s)
                    || (s.eq_ignore_ascii_case("h265") && *c == Codec::Hevc)
            })
            .ok_or_else(|| UnknownCodec(s.to_string()))
    }
}

/// One encoded frame (or, for H.264/HEVC, one access unit): the same type
/// zerocam-capture's V4L2 memory-to-memory encoder returns.
pub use zerocam_capture::v4l2::m2m::Packet;
