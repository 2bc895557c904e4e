//! A pipeline's bus: its first error as a [`GstEncodeError`], and
//! parse errors named after the missing element.

use gstreamer as gst;
use gstreamer::prelude::*;

use super::GstEncodeError;

/// The error message `msg` as a [`GstEncodeError`] naming the element that
/// posted it: not-negotiated flows are [`GstEncodeError::NotNegotiated`],
/// others [`GstEncodeError::Element`]; `None` for other messages. For the
/// bus of a pipeline the caller runs ([`FrameSink::new`](super::FrameSink::new)).
pub fn error_of(msg: &gst::Message) -> Option<GstEncodeError> {
    let gst::MessageView::Error(e) = msg.view() else {
        return None;
    };
    let element = msg
        .src()
        .map_or_else(|| "pipeline".to_owned(), |s| s.name().to_string());
    let mut message = e.error().message().to_owned();
    // The debug detail's last line says what (its first, where in
    // GStreamer's sources): one line in all.
    let detail = e
        .debug()
        .and_then(|d| d.lines().last().map(str::trim).map(str::to_owned))
        .filter(|d| !d.is_empty());
    if let Some(detail) = detail {
        message = format!("{message} ({detail})");
    }
    let negotiation =
        e.error().matches(gst::CoreError::Negotiation) || message.contains("not-negotiated");
    Some(if negotiation {
        GstEncodeError::NotNegotiated { element, message }
    } else {
        GstEncodeError::Element { element, message }
    })
}

/// The first error waiting on `bus`, if any (other messages are left).
pub(crate) fn pending_error(bus: &gst::Bus) -> Option<GstEncodeError> {
    bus.pop_filtered(&[gst::MessageType::Error])
        .and_then(|m| error_of(&m))
}

/// `description` parsed, with its parse error typed.
pub(crate) fn parse(description: &str) -> Result<gst::Pipeline, GstEncodeError> {
    let parsed = gst::parse::launch(description).map_err(|e| {
        if e.matches(gst::ParseError::NoSuchElement) {
            GstEncodeError::MissingElement {
                element: quoted(e.message()).unwrap_or_else(|| e.message().to_owned()),
                pipeline: description.to_owned(),
            }
        } else {
            GstEncodeError::Parse {
                pipeline: description.to_owned(),
                message: e.message().to_owned(),
            }
        }
    })?;
    parsed
        .downcast::<gst::Pipeline>()
        .map_err(|_| GstEncodeError::Parse {
            pipeline: description.to_owned(),
            message: "not one pipeline".into(),
        })
}

/// The first `"..."` of `message` (GStreamer's `no element "foo"`).
fn quoted(message: &str) -> Option<String> {
    let (_, rest) = message.split_once('"')?;
    let (name, _) = rest.split_once('"')?;
    Some(name.to_owned())
}

/// Initialises GStreamer (once; later calls are cheap).
pub(crate) fn init() -> Result<(), GstEncodeError> {
    gst::init().map_err(|e| GstEncodeError::Init {
        message: e.message().to_owned(),
    })
}
