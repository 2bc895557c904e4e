//! One shape for every way out of a capture.
//!
//! An [`Output`] says what it takes ([`Takes`]): the raw frames, shown to
//! it by reference (the live view's figures and snapshots, Zenoh's
//! camera_info), JPEG stills, H.264 access units, or any of them.
//! [`Outputs`] holds the list for one stream: it shows each frame to the
//! outputs that take frames, and runs the stream's one JPEG encoder
//! ([`SharedJpeg`]) and one H.264 encoder ([`SharedEncoder`]) for all that
//! take those. Each frame is encoded once per codec, whatever the number of
//! outputs, and only while one wants it; an output that needs a keyframe (a
//! new client, a gap) has the running encoder asked for one, not a new
//! encoder opened. An output that
//! fails is logged and counted on its own; the others and the capture go
//! on.

mod encoder;
mod jpeg;
mod list;
mod recording;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use zerocam_capture::{Frame, FrameSource};
use zerocam_encode::jpeg::JpegError;
use zerocam_encode::{EncodeError, Packet};

pub use encoder::{SharedEncoder, SharedEncoderStats};
pub use jpeg::{SharedJpeg, SharedJpegStats, Still};
pub use list::Outputs;
pub use recording::{Recording, RecordingStats};

/// What an output consumes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Takes {
    /// Raw frames, by reference ([`Output::frame`]).
    pub frames: bool,
    /// The stream's H.264 access units ([`Output::h264`]).
    pub h264: bool,
    /// The stream's JPEG of each frame it wants ([`Output::jpeg`]).
    pub jpeg: bool,
}

/// Whether an output wants the H.264 of the frame at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Nobody is there (no client, no subscriber): when no output wants
    /// anything, the encoder is closed.
    Off,
    /// Someone is there, but not this frame (a client reading slower than
    /// the camera): the encoder stays open.
    Skip,
    /// This frame's access units, going on from the last.
    Next,
    /// This frame's, and a keyframe as soon as the encoder can make one (a
    /// client came, or the output lost access units): asked of the encoder
    /// once, the output dropping what comes before it.
    Keyframe,
}

/// The access units of one frame, encoded once for every output that
/// wanted them.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// What the encoder gave back for this frame (none, one or more:
    /// encoders lag), shared: an output keeps what it needs without a copy.
    pub packets: Vec<Arc<Packet>>,
    /// Which encoder made them: a number that changes each time one is
    /// opened (its first access unit is a keyframe).
    pub encoder: u64,
    /// The frame's place in that encoder's input (0 its first). An output
    /// that skipped frames sees a jump: it has lost the references of what
    /// follows, and must wait for a keyframe.
    pub index: u64,
}

/// A frame handed to the outputs by reference (it goes on elsewhere, so
/// the encoder must keep nothing) or by value (the encoder may keep it: a
/// hardware encoder imports the capture's dma-buf).
// A frame moves once per frame; boxing it would allocate each frame.
#[allow(clippy::large_enum_variant)]
pub enum Given<'a> {
    /// The caller keeps it.
    Borrowed(&'a Frame),
    /// The outputs are its last holders.
    Owned(Frame),
}

impl Given<'_> {
    /// The frame.
    pub fn frame(&self) -> &Frame {
        match self {
            Given::Borrowed(f) => f,
            Given::Owned(f) => f,
        }
    }
}

/// What an output's step failed with.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The encoder.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// The JPEG encoder.
    #[error(transparent)]
    Jpeg(#[from] JpegError),
    /// Sending what it was given (a network peer gone, a queue refused).
    #[error("{output}: {reason}")]
    Send {
        /// The output, as its status line names it (`rtsp`, `zenoh`).
        output: &'static str,
        /// What went wrong.
        reason: String,
    },
}

/// A way out of a capture: a recording ([`Recording`]), the live view,
/// Zenoh, RTSP. Each says what it takes; [`Outputs`] calls it with
/// that.
pub trait Output: Send {
    /// What it consumes.
    fn takes(&self) -> Takes;

    /// The line announcing it (`RTSP at rtsp://127.0.0.1:8554/cam`).
    fn describe(&self) -> String;

    /// Its counters as a status line.
    fn status(&self) -> String;

    /// Shown each frame of `source`, by reference, when it takes frames.
    ///
    /// # Errors
    /// Its own failure: counted and logged by [`Outputs`], the next frame
    /// comes anyway.
    fn frame(&mut self, frame: &Frame, source: &dyn FrameSource) -> Result<(), OutputError> {
        let _ = (frame, source);
        Ok(())
    }

    /// Whether it wants this frame's JPEG, asked before each frame when it
    /// takes JPEG.
    fn wants_jpeg(&mut self) -> bool {
        false
    }

    /// The frame's JPEG, after it said it wants it: the same bytes every
    /// output that wanted them is lent.
    ///
    /// # Errors
    /// As [`frame`](Self::frame).
    fn jpeg(&mut self, still: &Still<'_>) -> Result<(), OutputError> {
        let _ = still;
        Ok(())
    }

    /// Whether it wants this frame's H.264, asked before each frame when it
    /// takes H.264.
    fn wants_h264(&mut self) -> Want {
        Want::Off
    }

    /// The frame's access units, after it said [`Want::Next`] or
    /// [`Want::Keyframe`].
    ///
    /// # Errors
    /// As [`frame`](Self::frame).
    fn h264(&mut self, encoded: &Encoded) -> Result<(), OutputError> {
        let _ = encoded;
        Ok(())
    }

    /// The stream ends: what it must close properly (a file's index) is
    /// closed now. Nothing by default.
    ///
    /// # Errors
    /// As [`frame`](Self::frame).
    fn finish(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}
