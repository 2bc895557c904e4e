//! [`GstEncodeError`]: what GStreamer's side of encoding can refuse.

use std::time::Duration;

/// A GStreamer encoder or sink failed; each variant names the element or
/// pipeline and what GStreamer said.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GstEncodeError {
    /// GStreamer itself could not start.
    #[error("GStreamer could not be initialised: {message}")]
    Init {
        /// GStreamer's message.
        message: String,
    },
    /// The pipeline names an element no installed plugin has.
    #[error("no GStreamer element {element:?} (in {pipeline:?}): is its plugin installed?")]
    MissingElement {
        /// The element factory name.
        element: String,
        /// The pipeline description.
        pipeline: String,
    },
    /// The pipeline description does not parse, or is not one pipeline
    /// with a sink zerocam can feed.
    #[error("pipeline {pipeline:?}: {message}")]
    Parse {
        /// The pipeline description.
        pipeline: String,
        /// What is wrong with it.
        message: String,
    },
    /// The frame cannot be described to GStreamer.
    #[error("a {format} frame of shape {shape:?} cannot go into GStreamer: {reason}")]
    UnsupportedFrame {
        /// The frame's pixel format ("array" for a non-image tensor).
        format: String,
        /// The frame tensor's shape.
        shape: Vec<usize>,
        /// Why.
        reason: String,
    },
    /// A frame's planes could not be read.
    #[error("frame {sequence}: its planes could not be mapped: {source}")]
    Map {
        /// The frame's sequence number.
        sequence: u32,
        /// What zerocam-tensor said.
        source: zerocam_tensor::Error,
    },
    /// Downstream elements could not agree on a format with the frames.
    #[error("{element}: not negotiated: {message}")]
    NotNegotiated {
        /// The element that posted the error.
        element: String,
        /// Its message and debug detail.
        message: String,
    },
    /// An element posted an error on the bus.
    #[error("{element}: {message}")]
    Element {
        /// The element that posted the error.
        element: String,
        /// Its message and debug detail.
        message: String,
    },
    /// The pipeline refused a state change.
    #[error("pipeline {pipeline:?} did not go to {state}")]
    StateChange {
        /// The pipeline description.
        pipeline: String,
        /// The state asked for.
        state: String,
    },
    /// The queue into the pipeline stayed full: the frame was dropped (its
    /// lease returned) and counted in [`SinkStats::dropped`](super::SinkStats::dropped).
    #[error("the pipeline is not keeping up: {queued} buffers still queued after {waited:?}; frame {sequence} dropped")]
    NotKeepingUp {
        /// The dropped frame's sequence number.
        sequence: u32,
        /// Buffers queued in the appsrc.
        queued: u64,
        /// How long the push waited for room.
        waited: Duration,
    },
    /// The pipeline did not finish (EOS) in time.
    #[error("pipeline {pipeline:?} did not reach end-of-stream within {waited:?}")]
    EosTimeout {
        /// The pipeline description.
        pipeline: String,
        /// How long it was waited for.
        waited: Duration,
    },
    /// A frame was pushed after the end of the stream.
    #[error("the sink has ended: no more frames after end-of-stream or an error")]
    Ended,
}
