//! One capture, many ways out: `serve`'s outputs besides the socket (the
//! live view, Zenoh, RTSP, a recording) as one list, zerocam-net's `Outputs`, with the
//! one JPEG and one H.264 encoder they share; and the source whose every
//! frame is shown to them before it goes on (to the Unix socket's
//! publisher, or to its drop).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use zerocam_capture::{Frame, FrameSource, Result as CaptureResult, SharedPlane};
use zerocam_capture::{StreamFormat, StreamStats};
use zerocam_encode::encoder::EncoderConfig;
use zerocam_encode::{Codec, EncoderChoice};
use zerocam_net::outputs::{Outputs, Recording, SharedEncoder, SharedJpeg};

use crate::serve::ServeOptions;
use crate::CliError;

/// What `--record` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordServe {
    /// The file (`.mp4` or `.h264`).
    pub path: PathBuf,
    /// Frames between keyframes (`--gop`), where no other output sets it.
    pub gop: u32,
}

/// Frame rate a recording is timed at where the stream's timestamps say
/// nothing (its last sample's duration).
const RECORD_FPS: u32 = 30;

/// The outputs, shared by the tapped source and `serve`'s status lines.
pub type SharedOutputs = Arc<Mutex<Outputs>>;

/// A lock whatever a panicked holder left.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The outputs `options` asks for.
///
/// # Errors
/// Each output's own (an address that cannot be bound, a feature not
/// built); [`CliError::Usage`] for `--h264` and `--rtsp-encoder` naming
/// two different encoders (one serves both).
pub fn build(options: &ServeOptions) -> Result<Outputs, CliError> {
    let mut outputs = Outputs::new(shared_encoder(options)?);
    if let Some(quality) = jpeg_quality(options)? {
        outputs = outputs.with_jpeg(SharedJpeg::new(quality)?);
    }
    if let Some(z) = &options.zenoh {
        outputs.push(crate::zenoh::publisher(z)?);
    }
    if let Some(v) = &options.http {
        outputs.push(Box::new(crate::view::ViewSide::new(v)?));
    }
    if let Some(r) = &options.rtsp {
        outputs.push(crate::rtsp::server(r)?);
    }
    if let Some(r) = &options.record {
        let recording = Recording::create(&r.path, RECORD_FPS)
            .map_err(|e| CliError::Usage(format!("--record: {e}")))?;
        outputs.push(Box::new(recording));
    }
    Ok(outputs)
}

/// The quality of the stream's one JPEG encoder, for the view and Zenoh's
/// `PREFIX/jpeg` (`None`: neither is asked for).
fn jpeg_quality(options: &ServeOptions) -> Result<Option<u8>, CliError> {
    let view = options.http.as_ref().map(|v| v.quality);
    let zenoh = options.zenoh.as_ref().map(|z| z.quality);
    match (view, zenoh) {
        (Some(v), Some(z)) if v != z => Err(CliError::Usage(format!(
            "JPEG quality {v} for the view and {z} for Zenoh: one JPEG encoder serves both; \
             give one quality"
        ))),
        (v, z) => Ok(v.or(z)),
    }
}

/// The stream's one H.264 encoder, for Zenoh's `PREFIX/h264`, RTSP and
/// the recording (`None`: none is asked for).
fn shared_encoder(options: &ServeOptions) -> Result<Option<SharedEncoder>, CliError> {
    let zenoh = options.zenoh.as_ref().and_then(|z| z.h264.clone());
    let rtsp = options.rtsp.as_ref().map(|r| r.encoder.clone());
    let choice = match (zenoh, rtsp) {
        (None, None) if options.record.is_none() => return Ok(None),
        (None, None) => EncoderChoice::Auto,
        (Some(c), None) | (None, Some(c)) => c,
        (Some(EncoderChoice::Auto), Some(c)) | (Some(c), Some(EncoderChoice::Auto)) => c,
        (Some(z), Some(r)) if z == r => z,
        (Some(z), Some(r)) => {
            return Err(CliError::Usage(format!(
                "--h264 {z} and --rtsp-encoder {r}: one H.264 encoder serves Zenoh and RTSP; \
                 name one (or the same for both)"
            )))
        }
    };
    let gop = options
        .rtsp
        .as_ref()
        .map(|r| r.gop)
        .or(options.zenoh.as_ref().map(|z| z.gop))
        .or(options.record.as_ref().map(|r| r.gop))
        .unwrap_or(30);
    let config = EncoderConfig {
        gop: Some(gop.max(1)),
        ..EncoderConfig::new(Codec::H264)
    };
    Ok(Some(SharedEncoder::new("h264", choice, config)))
}

/// A source whose every frame goes to the outputs and on (to the socket's
/// publisher), shared ([`Frame::share`]): the outputs hold it as long as
/// they need (a hardware encoder importing its dma-buf), the publisher
/// lends it to its clients, and the buffer goes back to the driver when
/// the last of them is done. No copy, and any encoder.
pub struct Tapped<S> {
    inner: S,
    outputs: SharedOutputs,
}

impl<S: FrameSource> Tapped<S> {
    /// `inner`'s frames, each shown to `outputs` first.
    pub fn new(inner: S, outputs: SharedOutputs) -> Tapped<S> {
        Tapped { inner, outputs }
    }
}

impl<S: FrameSource> FrameSource for Tapped<S> {
    /// Shared only where an output may keep the frame (an H.264 encoder):
    /// sharing allocates its joint holder, which a frame lent by reference
    /// does not need.
    fn next_frame(&mut self, timeout: Duration) -> CaptureResult<Frame> {
        let frame = self.inner.next_frame(timeout)?;
        let mut outputs = lock(&self.outputs);
        if !outputs.keeps_frames() {
            outputs.frame(&frame, &self.inner);
            return Ok(frame);
        }
        let (theirs, socket) = frame.share();
        outputs.frame_owned(theirs, &self.inner);
        Ok(socket)
    }

    fn stream_format(&self) -> &StreamFormat {
        self.inner.stream_format()
    }

    fn stats(&self) -> StreamStats {
        self.inner.stats()
    }

    fn name(&self) -> &Path {
        self.inner.name()
    }

    fn read_only_planes(&self, index: usize) -> CaptureResult<Vec<SharedPlane>> {
        self.inner.read_only_planes(index)
    }

    fn clock(&self) -> zerocam_capture::frame::Clock {
        self.inner.clock()
    }
}
