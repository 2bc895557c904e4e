//! [`Recorder`]: frames in, a file out. The file name's extension picks the
//! container (`output`: `.mp4`, or a codec's bare stream: `.h264`, `.hevc`,
//! `.mjpeg`, `.fwht`), the first frame opens the encoder
//! ([`open_encoder`]: hardware when present,
//! else software), and [`Recorder::finish`] drains the encoder and closes
//! the file. On an error (a full disk, an encoder that went away) the file
//! is closed at once, so that it plays up to the failure.

mod output;
mod stats;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::path::{Path, PathBuf};

use zerocam_capture::Frame;

pub use output::{Container, KNOWN_EXTENSIONS};
pub use stats::RecorderStats;

use crate::container::{ContainerError, ContainerWriter, Mp4Writer, StreamWriter};
use crate::encoder::{open_encoder, EncoderChoice, EncoderConfig, VideoEncoder};
use crate::{Codec, EncodeError};

/// What to record with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecorderConfig {
    /// The codec; `None`: the one the container holds
    /// ([`Container::codec`]: H.264 for `.mp4`, FWHT for `.fwht`).
    pub codec: Option<Codec>,
    /// Which encoder.
    pub encoder: EncoderChoice,
    /// Target bit rate, bits per second (`None`: the encoder's default).
    pub bitrate: Option<u32>,
    /// Frames between keyframes (`None`: the encoder's default).
    pub gop: Option<u32>,
    /// The rate the stream is timed at, for rate control (frame times in
    /// the file are the frames' own timestamps).
    pub fps: u32,
}

impl Default for RecorderConfig {
    /// The container's codec, `auto` encoder, its default rate control, 30 fps.
    fn default() -> RecorderConfig {
        RecorderConfig {
            codec: None,
            encoder: EncoderChoice::Auto,
            bitrate: None,
            gop: None,
            fps: 30,
        }
    }
}

/// The encoder and the file, once the first frame came.
struct Open {
    encoder: Box<dyn VideoEncoder>,
    file: Box<dyn ContainerWriter>,
}

/// Writes frames into a video file.
///
/// ```no_run
/// # use zerocam_capture::{FrameSource, PatternConfig, PatternSource};
/// # use zerocam_encode::recorder::{Recorder, RecorderConfig};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut source = PatternSource::new(PatternConfig::new("NV12".parse()?, 640, 480))?;
/// let mut rec = Recorder::create("clip.mp4", RecorderConfig::default())?;
/// for _ in 0..60 {
///     rec.write(source.next_frame(std::time::Duration::from_secs(1))?)?;
/// }
/// let stats = rec.finish()?;
/// println!("{} frames, {} bytes, {}", stats.frames, stats.bytes, rec.describe());
/// # Ok(()) }
/// ```
pub struct Recorder {
    path: PathBuf,
    container: Container,
    config: RecorderConfig,
    open: Option<Open>,
    why: Option<String>,
    frames: u64,
    closed: Option<RecorderStats>,
    /// Closing after an error failed too (the file has no index): what
    /// [`finish`](Recorder::finish) returns.
    close_error: Option<EncodeError>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path)
            .field("container", &self.container)
            .field("config", &self.config)
            .field("encoder", &self.why)
            .field("frames", &self.frames)
            .finish()
    }
}

impl Recorder {
    /// A recorder into `path`, whose extension picks the container
    /// ([`Container::of`]; [`Container::codec`] is the one codec it holds).
    /// The file is created now (empty until the first frame, which
    /// opens the encoder); an extension or codec it cannot write is refused
    /// before anything is created.
    ///
    /// # Errors
    /// [`EncodeError::Extension`] for another extension,
    /// [`ContainerError::Codec`] for a codec the container does not hold,
    /// [`EncodeError::Io`] when the file cannot be created.
    pub fn create(path: impl AsRef<Path>, config: RecorderConfig) -> Result<Recorder, EncodeError> {
        let path = path.as_ref();
        let container = Container::of(path)?;
        let codec = config.codec.unwrap_or(container.codec());
        if !container.holds(codec) {
            return Err(ContainerError::Codec {
                path: path.to_path_buf(),
                container: container.name(),
                holds: container.codec().name(),
                codec,
            }
            .into());
        }
        let config = RecorderConfig {
            codec: Some(codec),
            ..config
        };
        File::create(path).map_err(|source| EncodeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Recorder {
            path: path.to_path_buf(),
            container,
            config,
            open: None,
            why: None,
            frames: 0,
            closed: None,
            close_error: None,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The codec it records (the one asked for, else the container's).
    pub fn codec(&self) -> Codec {
        self.config.codec.unwrap_or(self.container.codec())
    }

    /// Which encoder records and why it was chosen (before the first frame:
    /// what will choose).
    pub fn describe(&self) -> String {
        match &self.why {
            Some(why) => why.clone(),
            None => format!(
                "{} encoder {}: chosen at the first frame",
                self.codec(),
                self.config.encoder
            ),
        }
    }

    /// Encodes `frame` into the file. The encoder holds the frame (its
    /// buffer stays out of the source's queue) until it is done reading.
    ///
    /// # Errors
    /// The encoder's errors (the first frame's: it cannot be opened for it)
    /// and the file's ([`ContainerError::Io`]: a full disk is `ENOSPC`). The
    /// file is then finished at once, up to the last packet written, and
    /// every later `write` fails with [`ContainerError::Finished`].
    pub fn write(&mut self, frame: Frame) -> Result<(), EncodeError> {
        if self.closed.is_some() {
            return Err(ContainerError::Finished {
                path: self.path.clone(),
            }
            .into());
        }
        if self.open.is_none() {
            match self.open_for(&frame) {
                Ok(open) => self.open = Some(open),
                Err(e) => return Err(self.fail(e)),
            }
        }
        let Some(open) = self.open.as_mut() else {
            return Ok(());
        };
        self.frames += 1;
        let packets = match open.encoder.encode(frame) {
            Ok(p) => p,
            Err(e) => return Err(self.fail(e)),
        };
        for p in &packets {
            if let Err(e) = open.file.write(p) {
                return Err(self.fail(e.into()));
            }
        }
        Ok(())
    }

    /// The encoder and the file for a stream like `first`.
    fn open_for(&mut self, first: &Frame) -> Result<Open, EncodeError> {
        let config = EncoderConfig {
            codec: self.codec(),
            bitrate: self.config.bitrate,
            gop: self.config.gop,
            fps: self.config.fps.max(1),
        };
        let (encoder, why) = open_encoder(&self.config.encoder, &config, first)?;
        let t = first.tensor();
        let (w, h) = (t.width().unwrap_or(0), t.height().unwrap_or(0));
        let file: Box<dyn ContainerWriter> = match self.container {
            Container::Mp4 => Box::new(Mp4Writer::create(
                &self.path,
                config.codec,
                w,
                h,
                config.fps,
            )?),
            Container::Stream(_) => Box::new(StreamWriter::create(&self.path, config.codec)?),
        };
        log::info!(
            "recording {} to {}: {why}",
            self.container.name(),
            self.path.display()
        );
        self.why = Some(why);
        Ok(Open { encoder, file })
    }

    /// Closes the file after `error` (an encoder that failed is not
    /// drained), logging what closing says; returns `error`.
    fn fail(&mut self, error: EncodeError) -> EncodeError {
        log::error!("{}: {error}; closing the file", self.path.display());
        if let Err(e) = self.close(false) {
            log::error!("{}: closing after the error: {e}", self.path.display());
            self.close_error = Some(e);
        }
        error
    }

    /// Drains the encoder (when `drain`), finishes the file and records the
    /// final counts.
    fn close(&mut self, drain: bool) -> Result<RecorderStats, EncodeError> {
        if let Some(s) = &self.closed {
            return Ok(s.clone());
        }
        let mut result = Ok(());
        if let Some(open) = self.open.as_mut() {
            if drain {
                match open.encoder.finish() {
                    Ok(packets) => {
                        for p in &packets {
                            if let Err(e) = open.file.write(p) {
                                result = Err(e.into());
                                break;
                            }
                        }
                    }
                    Err(e) => result = Err(e),
                }
            }
            if let Err(e) = open.file.finish() {
                result = result.and(Err(e.into()));
            }
        } else if self.frames == 0 {
            // Nothing came: no empty file that no player opens is left.
            if let Err(e) = std::fs::remove_file(&self.path) {
                log::debug!("{}: removing the empty file: {e}", self.path.display());
            }
        }
        let stats = RecorderStats {
            finished: true,
            ..self.stats()
        };
        self.closed = Some(stats.clone());
        // The encoder goes now, with any frames it still held (an encoder
        // that failed mid-stream may hold some): they go back to the source,
        // which captures on while this recorder lives.
        self.open = None;
        result.map(|()| stats)
    }

    /// Drains the encoder and closes the file; returns the final counts.
    /// After an error closed the file, returns the counts then — or, once,
    /// the error closing it met (the file then has no index). Idempotent.
    ///
    /// # Errors
    /// The encoder's drain and the file's end (MP4: its `moov` index, which
    /// a full disk refuses with `ENOSPC` as [`ContainerError::Io`]).
    pub fn finish(&mut self) -> Result<RecorderStats, EncodeError> {
        if let Some(e) = self.close_error.take() {
            return Err(e);
        }
        self.close(true)
    }

    /// The counts so far.
    pub fn stats(&self) -> RecorderStats {
        if let Some(s) = &self.closed {
            return s.clone();
        }
        let (encoder, samples, bytes) =
            self.open.as_ref().map_or((Default::default(), 0, 0), |o| {
                (o.encoder.stats(), o.file.samples(), o.file.bytes())
            });
        RecorderStats {
            frames: self.frames,
            samples,
            bytes,
            encoder,
            finished: self.closed.is_some(),
        }
    }
}

impl Drop for Recorder {
    /// Finishes the file if [`finish`](Recorder::finish) was not called
    /// (errors are logged).
    fn drop(&mut self) {
        if self.closed.is_none() {
            if let Err(e) = self.close(true) {
                log::error!("{}: finishing on drop: {e}", self.path.display());
            }
        }
    }
}
