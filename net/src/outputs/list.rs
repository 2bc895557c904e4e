//! [`Outputs`]: the outputs of one stream and its shared JPEG and H.264
//! encoders.

use zerocam_capture::{Frame, FrameSource};

use super::{Given, Output, OutputError, SharedEncoder, SharedJpeg, Want};

/// One output and its failures.
struct Entry {
    output: Box<dyn Output>,
    /// Steps that failed (logged at 1, 2, 4, 8...: a failing output cannot
    /// flood the log at the frame rate).
    errors: u64,
    /// Whether it said it wants this frame's H.264.
    wants: bool,
}

impl Entry {
    fn failed(&mut self, e: &OutputError) {
        self.errors += 1;
        if self.errors.is_power_of_two() {
            log::warn!("{e} ({} errors so far)", self.errors);
        }
    }
}

/// The outputs of one stream (see [the module](super)): each frame is
/// shown to those that take frames, and encoded once per codec, by the one
/// JPEG and the one H.264 encoder, for those that want it.
pub struct Outputs {
    entries: Vec<Entry>,
    video: Option<SharedEncoder>,
    stills: Option<SharedJpeg>,
}

impl std::fmt::Debug for Outputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outputs")
            .field("outputs", &self.entries.len())
            .field("video", &self.video)
            .field("stills", &self.stills)
            .finish()
    }
}

impl Outputs {
    /// No outputs yet; `video` encodes for those that take H.264 (`None`:
    /// none may).
    pub fn new(video: Option<SharedEncoder>) -> Outputs {
        Outputs {
            entries: Vec::new(),
            video,
            stills: None,
        }
    }

    /// `stills` encodes the JPEG of each frame for those that take JPEG
    /// (without it, none gets any).
    pub fn with_jpeg(mut self, stills: SharedJpeg) -> Outputs {
        self.stills = Some(stills);
        self
    }

    /// Adds `output`. One that takes JPEG gets it only from a list made
    /// [`with_jpeg`](Self::with_jpeg) (without, it is logged once and gets
    /// none), one that takes H.264 only from a list with an encoder.
    pub fn push(&mut self, output: Box<dyn Output>) {
        let takes = output.takes();
        if takes.jpeg && self.stills.is_none() {
            log::warn!(
                "{}: takes JPEG, but its list has no JPEG encoder (Outputs::with_jpeg): it gets none",
                output.describe()
            );
        }
        if takes.h264 && self.video.is_none() {
            log::warn!(
                "{}: takes H.264, but its list has no encoder: it gets none",
                output.describe()
            );
        }
        self.entries.push(Entry {
            output,
            errors: 0,
            wants: false,
        });
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The shared H.264 encoder.
    pub fn video(&self) -> Option<&SharedEncoder> {
        self.video.as_ref()
    }

    /// Whether an output may keep a frame past [`frame_owned`](Self::frame_owned)
    /// (an H.264 encoder may hold it): a caller that goes on with the frame
    /// shares it only then, and otherwise lends it ([`frame`](Self::frame)).
    pub fn keeps_frames(&self) -> bool {
        self.video.is_some()
    }

    /// The shared JPEG encoder.
    pub fn stills(&self) -> Option<&SharedJpeg> {
        self.stills.as_ref()
    }

    /// Shows `frame` of `source` to the outputs; it goes on to the caller's
    /// next consumer after, so the encoder keeps nothing of it.
    pub fn frame(&mut self, frame: &Frame, source: &dyn FrameSource) {
        self.run(Given::Borrowed(frame), source);
    }

    /// As [`frame`](Self::frame), the outputs its last holders: the encoder
    /// may keep it (a hardware encoder imports the capture's dma-buf once,
    /// and the buffer goes back to the driver when it is done).
    pub fn frame_owned(&mut self, frame: Frame, source: &dyn FrameSource) {
        self.run(Given::Owned(frame), source);
    }

    fn run(&mut self, frame: Given<'_>, source: &dyn FrameSource) {
        for e in &mut self.entries {
            if e.output.takes().frames {
                if let Err(err) = e.output.frame(frame.frame(), source) {
                    e.failed(&err);
                }
            }
        }
        self.lend_jpeg(frame.frame());
        let Some(video) = self.video.as_mut() else {
            return;
        };
        let (mut any, mut present, mut keyframe) = (false, false, false);
        for e in &mut self.entries {
            let want = match e.output.takes().h264 {
                true => e.output.wants_h264(),
                false => Want::Off,
            };
            e.wants = matches!(want, Want::Next | Want::Keyframe);
            any |= e.wants;
            present |= want != Want::Off;
            keyframe |= want == Want::Keyframe;
        }
        if !present {
            video.close();
        }
        if !any {
            return;
        }
        if keyframe {
            video.request_keyframe();
        }
        let encoded = match video.encode(frame) {
            Ok(Some(encoded)) => encoded,
            Ok(None) => return,
            Err(err) => {
                let err = OutputError::Encode(err);
                for e in self.entries.iter_mut().filter(|e| e.wants) {
                    e.failed(&err);
                }
                return;
            }
        };
        for e in self.entries.iter_mut().filter(|e| e.wants) {
            if let Err(err) = e.output.h264(&encoded) {
                e.failed(&err);
            }
        }
    }

    /// The frame's JPEG, encoded once if any output wants it, lent to each
    /// that does.
    fn lend_jpeg(&mut self, frame: &Frame) {
        let Some(stills) = self.stills.as_mut() else {
            return;
        };
        let mut any = false;
        for e in &mut self.entries {
            e.wants = e.output.takes().jpeg && e.output.wants_jpeg();
            any |= e.wants;
        }
        if !any {
            return;
        }
        match stills.encode(frame) {
            Ok(still) => {
                for e in self.entries.iter_mut().filter(|e| e.wants) {
                    if let Err(err) = e.output.jpeg(&still) {
                        e.failed(&err);
                    }
                }
            }
            Err(err) => {
                let err = OutputError::Jpeg(err);
                for e in self.entries.iter_mut().filter(|e| e.wants) {
                    e.failed(&err);
                }
            }
        }
    }

    /// Ends the stream for every output (a recording's file index written),
    /// each failure logged and counted; the encoders closed.
    pub fn finish(&mut self) {
        for e in &mut self.entries {
            if let Err(err) = e.output.finish() {
                e.failed(&err);
            }
        }
        if let Some(video) = self.video.as_mut() {
            video.close();
        }
    }

    /// The first lines: what each output serves, and the encoders.
    pub fn describe(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.entries.iter().map(|e| e.output.describe()).collect();
        if let Some(j) = &self.stills {
            lines.push(format!(
                "jpeg: quality {}, one encoder for every output",
                j.quality()
            ));
        }
        if let Some(v) = &self.video {
            lines.push(format!(
                "h264: {}, one encoder for every output",
                v.describe()
            ));
        }
        lines
    }

    /// Each output's status line (with its failures), and the encoder's.
    pub fn status(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .entries
            .iter()
            .map(|e| format!("{}, failures {}", e.output.status(), e.errors))
            .collect();
        if let Some(j) = &self.stills {
            let s = j.stats();
            let per = s.encode.as_secs_f64() * 1e3 / s.frames.max(1) as f64;
            lines.push(format!(
                "jpeg: frames encoded {}, {per:.2} ms/frame, errors {}",
                s.frames, s.errors
            ));
        }
        if let Some(v) = &self.video {
            let s = v.stats();
            lines.push(format!(
                "h264: frames encoded {}, access units {} ({} keyframes), encoders opened {}, \
                 keyframe requests {}, errors {}",
                s.frames, s.packets, s.keyframes, s.opened, s.requested, s.errors
            ));
        }
        lines
    }
}
