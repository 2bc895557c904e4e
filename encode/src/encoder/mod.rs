//! The [`VideoEncoder`] every video encoder is, its [`EncoderConfig`], its
//! [`EncodeStats`], and [`EncoderChoice`]: which one to use.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use zerocam_capture::Frame;

use crate::{Codec, EncodeError, Packet};

mod open;
pub use open::{open_encoder, OpenedEncoder};

/// What to encode to: the codec and the rate control the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncoderConfig {
    /// The compressed format.
    pub codec: Codec,
    /// Target bit rate, bits per second (`None`: the encoder's default).
    pub bitrate: Option<u32>,
    /// Frames between keyframes (`None`: the encoder's default).
    pub gop: Option<u32>,
    /// The frame rate the stream is timed at, frames per second (a hint for
    /// rate control; packet times come from the frames' own timestamps).
    pub fps: u32,
}

impl EncoderConfig {
    /// `codec` at the encoder's default rate control, timed at 30 fps.
    pub fn new(codec: Codec) -> EncoderConfig {
        EncoderConfig {
            codec,
            bitrate: None,
            gop: None,
            fps: 30,
        }
    }
}

/// What an encoder has done, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncodeStats {
    /// Frames given to [`VideoEncoder::encode`].
    pub frames_in: u64,
    /// Packets returned.
    pub packets_out: u64,
    /// Compressed bytes returned.
    pub bytes_out: u64,
    /// Frame planes imported into the encoder (dma-buf imports; a buffer
    /// imported once and reused counts once).
    pub imports: u64,
    /// Frames the encoder could not take as they are and were copied
    /// (into its own buffers, or from dma-buf to system memory). Never
    /// silent: every encoder counts here.
    pub copied_frames: u64,
}

/// A video encoder: frames in, packets out.
pub trait VideoEncoder: Send {
    /// The codec it makes.
    fn codec(&self) -> Codec;
    /// What it is, for progress lines and logs (e.g. "OpenH264 (software)").
    fn describe(&self) -> String;
    /// Encodes `frame`, which it may hold (a hardware encoder keeps the
    /// frame's lease until it is done reading the buffer), and returns the
    /// packets that are ready (none, one or more: encoders lag).
    fn encode(&mut self, frame: Frame) -> Result<Vec<Packet>, EncodeError>;
    /// Encodes a frame the caller keeps (it goes on elsewhere, as to the
    /// sharing socket's clients): only an encoder that is done reading the
    /// frame when this returns can (the software ones); the others refuse
    /// with [`EncodeError::NeedsOwnedFrames`], this default.
    fn encode_borrowed(&mut self, frame: &Frame) -> Result<Vec<Packet>, EncodeError> {
        let _ = frame;
        Err(EncodeError::NeedsOwnedFrames {
            encoder: self.describe(),
        })
    }
    /// Asks for the next frame it encodes to be a keyframe, parameter sets
    /// and all, the stream going on (a viewer joined, or lost packets):
    /// `true` when the encoder takes the request, `false` when it cannot
    /// (the caller then opens a fresh encoder, whose first frame is one).
    /// This default cannot.
    fn request_keyframe(&mut self) -> bool {
        false
    }
    /// Drains: every packet still inside, then no more frames.
    fn finish(&mut self) -> Result<Vec<Packet>, EncodeError>;
    /// The counts so far.
    fn stats(&self) -> EncodeStats;
}

/// Which encoder: `auto`, `software`, a device node, or `gst:ELEMENT`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EncoderChoice {
    /// A hardware V4L2 memory-to-memory encoder of the codec when one is
    /// present, else GStreamer's (feature `gstreamer`), else software.
    #[default]
    Auto,
    /// The CPU encoder of the codec (OpenH264 for H.264, libjpeg-turbo for MJPEG).
    Software,
    /// This V4L2 memory-to-memory encoder node.
    Device(PathBuf),
    /// This GStreamer encoder element (`gst:x264enc`).
    Gst(String),
}

impl EncoderChoice {
    /// The choice for frames the caller keeps
    /// ([`VideoEncoder::encode_borrowed`]): `auto` is the software encoder
    /// (it would pick a hardware one first, which must keep the frames it
    /// imports), `software` stays; `None` for a device or a GStreamer
    /// element, which keep their frames.
    pub fn for_borrowed_frames(&self) -> Option<EncoderChoice> {
        match self {
            EncoderChoice::Auto | EncoderChoice::Software => Some(EncoderChoice::Software),
            EncoderChoice::Device(_) | EncoderChoice::Gst(_) => None,
        }
    }
}

impl fmt::Display for EncoderChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncoderChoice::Auto => f.write_str("auto"),
            EncoderChoice::Software => f.write_str("software"),
            EncoderChoice::Device(p) => write!(f, "{}", p.display()),
            EncoderChoice::Gst(e) => write!(f, "gst:{e}"),
        }
    }
}

/// An `--encoder` value that is none of the forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown encoder {0:?} (auto, software, /dev/videoN or gst:ELEMENT)")]
pub struct UnknownEncoder(pub String);

impl FromStr for EncoderChoice {
    type Err = UnknownEncoder;

    fn from_str(s: &str) -> Result<EncoderChoice, UnknownEncoder> {
        if s.eq_ignore_ascii_case("auto") {
            Ok(EncoderChoice::Auto)
        } else if s.eq_ignore_ascii_case("software") {
            Ok(EncoderChoice::Software)
        } else if let Some(e) = s.strip_prefix("gst:").filter(|e| !e.is_empty()) {
            Ok(EncoderChoice::Gst(e.to_string()))
        } else if s.starts_with('/') {
            Ok(EncoderChoice::Device(PathBuf::from(s)))
        } else {
            Err(UnknownEncoder(s.to_string()))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::EncoderChoice;

    #[test]
    fn borrowed_frames_go_to_software_or_nowhere() {
        let choice = |s: &str| s.parse::<EncoderChoice>().unwrap();
        let borrowed = |s: &str| choice(s).for_borrowed_frames();
        assert_eq!(borrowed("auto"), Some(EncoderChoice::Software));
        assert_eq!(borrowed("software"), Some(EncoderChoice::Software));
        assert_eq!(borrowed("/dev/video11"), None);
        assert_eq!(borrowed("gst:x264enc"), None);
    }
}
