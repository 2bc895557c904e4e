//! [`open_encoder`]: the encoder an [`EncoderChoice`] names, opened for a
//! stream's first frame, and why it was the one.

use zerocam_capture::Frame;

use super::{EncoderChoice, EncoderConfig, VideoEncoder};
use crate::m2m::{self, M2mVideoEncoder};
use crate::software::{SoftwareH264, SoftwareMjpeg};
use crate::{Codec, EncodeError};

/// An opened encoder and the sentence saying which it is and why
/// ("no hardware H.264 encoder: OpenH264 in software").
pub type OpenedEncoder = (Box<dyn VideoEncoder>, String);

/// Opens the encoder `choice` names for `config`, set up for frames like
/// `first` (its size, format and colour spec):
///
/// - `Auto`: a hardware V4L2 memory-to-memory encoder of the codec when one
///   is present, else (feature `gstreamer`) a GStreamer encoder element,
///   else the software one.
/// - `Device(path)`: that memory-to-memory encoder node.
/// - `Gst(element)`: that GStreamer element (feature `gstreamer`).
/// - `Software`: OpenH264 for H.264, a JPEG per frame (libjpeg-turbo) for
///   MJPEG.
///
/// Without the `gstreamer` feature, `Gst` is refused with
/// [`EncodeError::Unsupported`] naming the element. An encoder that `Auto`
/// finds but cannot open for `first` (a format it does not take) is passed
/// over for the next, and the sentence says why.
///
/// # Errors
/// [`EncodeError::Unsupported`] when the chosen encoder does not make the
/// codec (software HEVC or FWHT) or is not in this build; the
/// encoder's own errors when it cannot be set up for `first`.
pub fn open_encoder(
    choice: &EncoderChoice,
    config: &EncoderConfig,
    first: &Frame,
) -> Result<OpenedEncoder, EncodeError> {
    match choice {
        EncoderChoice::Software => {
            let e = software(config, first)?;
            let why = format!("{} (asked for)", e.describe());
            Ok((e, why))
        }
        EncoderChoice::Device(path) => {
            let e = M2mVideoEncoder::open(path, config, first)?;
            let why = format!("{} (asked for)", e.describe());
            Ok((Box::new(e), why))
        }
        EncoderChoice::Gst(element) => gst(element, config, first),
        EncoderChoice::Auto => {
            let passed_over = match m2m::find(config.codec) {
                Some(path) => match M2mVideoEncoder::open(&path, config, first) {
                    Ok(e) => {
                        let why = format!(
                            "{}: the first hardware {} encoder found",
                            e.describe(),
                            config.codec
                        );
                        log::info!("encoder: {why}");
                        return Ok((Box::new(e), why));
                    }
                    Err(err) => {
                        log::warn!("{}: {err}; encoding in software", path.display());
                        format!("the hardware encoder {} refused: {err}", path.display())
                    }
                },
                None => format!("no hardware {} encoder found", config.codec),
            };
            #[cfg(feature = "gstreamer")]
            let passed_over = match crate::gst::find(config.codec) {
                Some(element) => match gst(&element, config, first) {
                    Ok((e, _)) => {
                        let why = format!("{}: {passed_over}", e.describe());
                        log::info!("encoder: {why}");
                        return Ok((e, why));
                    }
                    Err(err) => {
                        log::warn!("GStreamer {element}: {err}; encoding in software");
                        format!("{passed_over}; GStreamer's {element} refused: {err}")
                    }
                },
                None => format!("{passed_over}, nor a GStreamer one"),
            };
            let e = software(config, first)?;
            let why = format!("{}: {passed_over}", e.describe());
            log::info!("encoder: {why}");
            Ok((e, why))
        }
    }
}

/// The GStreamer encoder `element` (feature `gstreamer`).
#[cfg(feature = "gstreamer")]
fn gst(element: &str, config: &EncoderConfig, first: &Frame) -> Result<OpenedEncoder, EncodeError> {
    let e = crate::gst::GstVideoEncoder::open(element, config, first)?;
    let why = format!("{} (asked for)", e.describe());
    Ok((Box::new(e), why))
}

/// Without the `gstreamer` feature: refused, naming the element.
#[cfg(not(feature = "gstreamer"))]
fn gst(
    element: &str,
    config: &EncoderConfig,
    _first: &Frame,
) -> Result<OpenedEncoder, EncodeError> {
    Err(EncodeError::Unsupported {
        encoder: format!("GStreamer's {element} (zerocam built without the gstreamer feature)"),
        codec: config.codec,
    })
}

/// The CPU encoder of `config.codec`.
fn software(config: &EncoderConfig, first: &Frame) -> Result<Box<dyn VideoEncoder>, EncodeError> {
    match config.codec {
        Codec::H264 => Ok(Box::new(SoftwareH264::open(config, first)?)),
        Codec::Mjpeg => Ok(Box::new(SoftwareMjpeg::open(config)?)),
        codec => Err(EncodeError::Unsupported {
            encoder: "the software encoders (OpenH264, libjpeg-turbo: H.264 and MJPEG)".into(),
            codec,
        }),
    }
}
