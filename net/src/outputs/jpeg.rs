//! [`SharedJpeg`]: a stream's one JPEG encoder, each frame encoded once
//! for every output that wants its JPEG (the live view's stream, Zenoh's
//! `PREFIX/jpeg`), and only while one does.

use std::time::{Duration, Instant};

use zerocam_capture::Frame;
use zerocam_encode::jpeg::{JpegEncoder, JpegError};

/// One frame's JPEG, lent to each output that wanted it in turn (no copy
/// between them; an output that keeps it copies what it keeps).
#[derive(Debug, Clone, Copy)]
pub struct Still<'a> {
    /// The JPEG's bytes.
    pub data: &'a [u8],
    /// Its frame's sequence number.
    pub sequence: u32,
    /// Its frame's capture time (the source's clock).
    pub timestamp: Duration,
}

/// What the JPEG encoder did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharedJpegStats {
    /// Frames encoded (each once, whatever the number of outputs).
    pub frames: u64,
    /// Time spent encoding them.
    pub encode: Duration,
    /// Frames that did not encode.
    pub errors: u64,
}

/// One JPEG encoder for every output of a stream that takes JPEG.
pub struct SharedJpeg {
    encoder: JpegEncoder,
    stats: SharedJpegStats,
}

impl std::fmt::Debug for SharedJpeg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedJpeg")
            .field("quality", &self.encoder.quality())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl SharedJpeg {
    /// An encoder at `quality` (1 to 100).
    ///
    /// # Errors
    /// [`JpegError`] for a quality out of range, or a handle libjpeg-turbo
    /// cannot make.
    pub fn new(quality: u8) -> Result<SharedJpeg, JpegError> {
        Ok(SharedJpeg {
            encoder: JpegEncoder::new(quality)?,
            stats: SharedJpegStats::default(),
        })
    }

    /// Its quality.
    pub fn quality(&self) -> u8 {
        self.encoder.quality()
    }

    /// The counters so far.
    pub fn stats(&self) -> SharedJpegStats {
        self.stats
    }

    /// `frame` as a JPEG, counted.
    ///
    /// # Errors
    /// The frame does not encode (a format libjpeg-turbo cannot take).
    pub fn encode(&mut self, frame: &Frame) -> Result<Still<'_>, JpegError> {
        let started = Instant::now();
        match self.encoder.encode(frame) {
            Ok(data) => {
                self.stats.frames += 1;
                self.stats.encode += started.elapsed();
                Ok(Still {
                    data,
                    sequence: frame.sequence(),
                    timestamp: frame.timestamp(),
                })
            }
            Err(e) => {
                self.stats.errors += 1;
                Err(e)
            }
        }
    }
}
