//! [`GstError`]: what a GStreamer pipeline can do wrong, with the element's
//! own words.

/// A GStreamer pipeline's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GstError {
    /// GStreamer itself could not start (`gst_init`).
    #[error("GStreamer could not start: {message}")]
    Init {
        /// GStreamer's message.
        message: String,
    },
    /// The description does not parse, or names an element that does not exist.
    #[error("pipeline `{pipeline}` does not parse: {message}")]
    Parse {
        /// The description given.
        pipeline: String,
        /// GStreamer's message (e.g. `no element "foo"`).
        message: String,
    },
    /// The pipeline did not reach PLAYING.
    #[error("pipeline `{pipeline}` did not start: {message}")]
    NotPlaying {
        /// The description given.
        pipeline: String,
        /// Why, from the bus when an element said so.
        message: String,
    },
    /// An element posted an error on the bus.
    #[error("{element}: {message}")]
    Element {
        /// The element's name (`videotestsrc0`, `v4l2src0`).
        element: String,
        /// Its message (the debug detail appended when there is one).
        message: String,
    },
    /// The pipeline reached its end (EOS): no more frames.
    #[error("pipeline `{pipeline}` reached its end (EOS)")]
    Eos {
        /// The description given.
        pipeline: String,
    },
    /// Caps zerocam cannot take as frames.
    #[error("caps `{caps}` are not a frame zerocam takes: {reason}")]
    UnsupportedCaps {
        /// The caps, as GStreamer prints them.
        caps: String,
        /// What is wrong (the format, the planes' layout).
        reason: String,
    },
}
