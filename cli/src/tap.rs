//! One capture, many ways out: a source whose every frame is shown to the
//! live view, published on Zenoh and encoded for RTSP clients before it
//! goes on (to the Unix socket's publisher, or to its drop).

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use zerocam_capture::{Frame, FrameSource, Result as CaptureResult, SharedPlane};
use zerocam_capture::{StreamFormat, StreamStats};

use crate::rtsp::SharedRtsp;
use crate::view::SharedView;
use crate::zenoh::SharedZenoh;

/// The ways out besides the socket.
#[derive(Clone, Default)]
pub struct Taps {
    /// `--zenoh`.
    pub zenoh: Option<SharedZenoh>,
    /// `--http`.
    pub view: Option<SharedView>,
    /// `--rtsp`.
    pub rtsp: Option<SharedRtsp>,
}

/// A lock whatever a panicked holder left.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Taps {
    /// Whether there is any.
    pub fn is_empty(&self) -> bool {
        self.zenoh.is_none() && self.view.is_none() && self.rtsp.is_none()
    }

    /// Shows `frame` of `source` to each, by reference.
    pub fn frame(&self, frame: &Frame, source: &dyn FrameSource) {
        if let Some(v) = &self.view {
            lock(v).frame(frame, source);
        }
        if let Some(z) = &self.zenoh {
            lock(z).publish(frame, source.stream_format());
        }
        if let Some(r) = &self.rtsp {
            lock(r).frame(frame, source);
        }
    }

    /// Shows `frame` to each, handing it over to the last consumer (its
    /// H.264 encoder may keep it: a hardware encoder imports the capture's
    /// dma-buf): Zenoh when it is there (then RTSP sees it by reference
    /// first, and was opened with a software encoder), else RTSP.
    pub fn frame_owned(&self, frame: Frame, source: &dyn FrameSource) {
        if let Some(v) = &self.view {
            lock(v).frame(&frame, source);
        }
        match (&self.zenoh, &self.rtsp) {
            (Some(z), rtsp) => {
                if let Some(r) = rtsp {
                    lock(r).frame(&frame, source);
                }
                lock(z).publish_owned(frame, source.stream_format());
            }
            (None, Some(r)) => lock(r).frame_owned(frame, source),
            (None, None) => {}
        }
    }

    /// The first lines: what each serves.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(v) = &self.view {
            lines.push(lock(v).describe());
        }
        if let Some(z) = &self.zenoh {
            lines.push(lock(z).describe());
        }
        if let Some(r) = &self.rtsp {
            lines.push(lock(r).describe());
        }
        lines
    }

    /// Each one's status line.
    pub fn status(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(v) = &self.view {
            lines.push(lock(v).status());
        }
        if let Some(z) = &self.zenoh {
            lines.push(lock(z).status());
        }
        if let Some(r) = &self.rtsp {
            lines.push(lock(r).status());
        }
        lines
    }
}

/// A source whose every frame goes through the taps before it goes on.
pub struct Tapped<S> {
    inner: S,
    taps: Taps,
}

impl<S: FrameSource> Tapped<S> {
    /// `inner`'s frames, each shown to `taps` first.
    pub fn new(inner: S, taps: Taps) -> Tapped<S> {
        Tapped { inner, taps }
    }
}

impl<S: FrameSource> FrameSource for Tapped<S> {
    fn next_frame(&mut self, timeout: Duration) -> CaptureResult<Frame> {
        let frame = self.inner.next_frame(timeout)?;
        self.taps.frame(&frame, &self.inner);
        Ok(frame)
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
