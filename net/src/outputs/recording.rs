//! [`Recording`]: a file of the stream's H.264 (MP4, or a bare `.h264`
//! stream), written from the shared encoder's access units: recording
//! beside RTSP and Zenoh encodes nothing more.

use std::path::{Path, PathBuf};

use zerocam_capture::{Frame, FrameSource};
use zerocam_encode::container::{ContainerError, ContainerWriter, Mp4Writer, StreamWriter};
use zerocam_encode::recorder::Container;
use zerocam_encode::{Codec, EncodeError};

use super::{Encoded, Output, OutputError, Takes, Want};

/// What a recording wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordingStats {
    /// Access units written.
    pub samples: u64,
    /// Bytes in the file so far.
    pub bytes: u64,
    /// Access units left out while waiting for a keyframe (the file's
    /// first, or after a gap).
    pub dropped: u64,
    /// Gaps in the encoder's output it was handed (frames it did not get,
    /// or a new encoder): each waits for a keyframe.
    pub gaps: u64,
}

/// The stream's H.264 into a file, as one output of [`Outputs`](super::Outputs).
/// It opens no encoder; it starts at a keyframe asked of the running one,
/// and after a gap waits for the next, so every access unit written
/// decodes. A write that fails (a full disk) closes the file up to what
/// was written and ends this output alone.
pub struct Recording {
    path: PathBuf,
    container: Container,
    fps: u32,
    size: Option<(usize, usize)>,
    file: Option<Box<dyn ContainerWriter>>,
    /// The last access units' (encoder, index).
    last: Option<(u64, u64)>,
    wait_keyframe: bool,
    asked: bool,
    /// Why it stopped (a write failed, or it was finished).
    ended: Option<String>,
    stats: RecordingStats,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("path", &self.path)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Recording {
    /// A recording into `path` (`.mp4` or `.h264`, created now, replacing a
    /// file there), timed at `fps` where the stream's timestamps say
    /// nothing (the last sample's duration).
    ///
    /// # Errors
    /// [`EncodeError::Extension`] for another extension,
    /// [`ContainerError::Codec`] for a container that does not hold H.264,
    /// [`EncodeError::Io`] when the file cannot be created.
    pub fn create(path: impl AsRef<Path>, fps: u32) -> Result<Recording, EncodeError> {
        let path = path.as_ref();
        let container = Container::of(path)?;
        if !container.holds(Codec::H264) {
            return Err(ContainerError::Codec {
                path: path.to_path_buf(),
                container: container.name(),
                holds: container.codec().name(),
                codec: Codec::H264,
            }
            .into());
        }
        std::fs::File::create(path).map_err(|source| EncodeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Recording {
            path: path.to_path_buf(),
            container,
            fps: fps.max(1),
            size: None,
            file: None,
            last: None,
            wait_keyframe: true,
            asked: false,
            ended: None,
            stats: RecordingStats::default(),
        })
    }

    /// The counters so far.
    pub fn stats(&self) -> RecordingStats {
        RecordingStats {
            bytes: self.file.as_ref().map_or(0, |f| f.bytes()),
            ..self.stats
        }
    }

    /// Ends the file (MP4: its index of every sample); later access units
    /// are not taken. Idempotent; also done when it is dropped.
    ///
    /// # Errors
    /// The file's end cannot be written (a full disk).
    pub fn finish(&mut self) -> Result<(), ContainerError> {
        self.ended.get_or_insert_with(|| "finished".into());
        match self.file.as_mut() {
            Some(file) => file.finish().map(|_| ()),
            None => Ok(()),
        }
    }

    /// The file's writer, made at the first keyframe (the frame's size
    /// known by then).
    fn writer(&mut self) -> Result<&mut Box<dyn ContainerWriter>, ContainerError> {
        if self.file.is_none() {
            let (w, h) = self.size.unwrap_or_default();
            let file: Box<dyn ContainerWriter> = match self.container {
                Container::Mp4 => {
                    Box::new(Mp4Writer::create(&self.path, Codec::H264, w, h, self.fps)?)
                }
                Container::Stream(_) => Box::new(StreamWriter::create(&self.path, Codec::H264)?),
            };
            log::info!("recording H.264 to {}", self.path.display());
            self.file = Some(file);
        }
        self.file.as_mut().ok_or(ContainerError::Finished {
            path: self.path.clone(),
        })
    }

    /// Closes the file after `error`; this output takes nothing more.
    fn fail(&mut self, error: &ContainerError) -> OutputError {
        log::error!("{}: {error}; closing the file", self.path.display());
        self.ended = Some(error.to_string());
        if let Some(file) = self.file.as_mut() {
            if let Err(e) = file.finish() {
                log::error!("{}: closing after the error: {e}", self.path.display());
            }
        }
        OutputError::Send {
            output: "record",
            reason: error.to_string(),
        }
    }
}

impl Output for Recording {
    /// Frames (their size, for the file's header) and H.264.
    fn takes(&self) -> Takes {
        Takes {
            frames: true,
            h264: true,
            jpeg: false,
        }
    }

    fn describe(&self) -> String {
        format!(
            "recording H.264 to {} ({})",
            self.path.display(),
            self.container.name()
        )
    }

    fn status(&self) -> String {
        let s = self.stats();
        let ended = match &self.ended {
            Some(why) => format!(", ended: {why}"),
            None => String::new(),
        };
        format!(
            "record: access units written {}, bytes {}, left out before a keyframe {}, \
             gaps {}{ended}",
            s.samples, s.bytes, s.dropped, s.gaps
        )
    }

    fn frame(&mut self, frame: &Frame, _source: &dyn FrameSource) -> Result<(), OutputError> {
        if self.size.is_none() {
            let t = frame.tensor();
            self.size = Some((t.width().unwrap_or(0), t.height().unwrap_or(0)));
        }
        Ok(())
    }

    fn wants_h264(&mut self) -> Want {
        if self.ended.is_some() {
            return Want::Off;
        }
        match self.wait_keyframe && !self.asked {
            true => {
                self.asked = true;
                Want::Keyframe
            }
            false => Want::Next,
        }
    }

    fn h264(&mut self, encoded: &Encoded) -> Result<(), OutputError> {
        let follows = self
            .last
            .is_some_and(|(e, i)| e == encoded.encoder && i + 1 == encoded.index);
        if self.last.is_some() && !follows && !self.wait_keyframe {
            self.stats.gaps += 1;
            self.wait_keyframe = true;
            self.asked = false;
        }
        self.last = Some((encoded.encoder, encoded.index));
        for packet in &encoded.packets {
            if self.wait_keyframe && !packet.keyframe {
                self.stats.dropped += 1;
                continue;
            }
            self.wait_keyframe = false;
            let written = self.writer().and_then(|file| file.write(packet));
            if let Err(e) = written {
                return Err(self.fail(&e));
            }
            self.stats.samples += 1;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), OutputError> {
        Recording::finish(self).map_err(|e| OutputError::Send {
            output: "record",
            reason: e.to_string(),
        })
    }
}

impl Drop for Recording {
    /// Finishes the file if [`finish`](Recording::finish) was not called
    /// (an error is logged).
    fn drop(&mut self) {
        if self.ended.is_none() {
            if let Err(e) = Recording::finish(self) {
                log::error!("{}: finishing on drop: {e}", self.path.display());
            }
        }
    }
}
