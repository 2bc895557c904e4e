//! [`GstSource`]: a GStreamer pipeline as a [`FrameSource`] (feature
//! `gstreamer`). The pipeline description gets an `appsink` appended; each
//! sample becomes a [`Frame`] like a camera's:
//! - a **dma-buf** buffer (one memory holding every plane; `v4l2src
//!   io-mode=dmabuf`, hardware decoders) is imported through the source's
//!   [`ImportCache`], keyed on the fd's inode and offset: a pool of B
//!   buffers costs B imports over any number of frames;
//! - a **system-memory** buffer (software decoders, `videotestsrc`) is
//!   wrapped read-only without a copy ([`Tensor::from_external`](zerocam_tensor::Tensor::from_external)) and
//!   counted in [`StreamStats::system_memory_frames`](crate::StreamStats::system_memory_frames).
//!
//! A frame holds its `GstBuffer` until it drops, so the pool cannot recycle a
//! buffer under a live tensor. Strides and plane offsets come from the
//! buffer's `GstVideoMeta` (else the caps). A pipeline that does not parse,
//! does not start, posts an error or ends is a typed [`GstError`] with the
//! element's own message.
//!
//! The other way, [`fd_memory`] (and [`dmabuf_memory`]) make a frame
//! buffer's fd a `GstDmaBufMemory` (or, for a memfd, a `GstFdMemory`) that
//! keeps a value (a frame's lease) alive until GStreamer frees it: what
//! zerocam-encode's `FrameSink` pushes.

mod caps;
mod error;
#[allow(unsafe_code)] // a mapped GstBuffer as `ExternalMemory`; dma-buf memory's fd, made and read
mod memory;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use gstreamer_video as gst_video;
use zerocam_cache::ImportCache;

pub use error::GstError;
pub use memory::{dmabuf_memory, fd_memory, FdMemoryKind};

use crate::frame::stats::{monotonic_now, Counters};
use crate::frame::{lock, FrameMeta, Placement, Requeue};
use crate::{CaptureError, Frame, FrameSource, Result, StreamFormat, StreamStats, Synthesized};

/// A frame layout and what it was worked out from: video meta (strides,
/// offsets) and the number of memories.
type LayoutKey = (LayoutSource, Arc<caps::FrameLayout>);

/// What a layout was worked out from: the video meta's strides and offsets,
/// and the number of memories.
type LayoutSource = (Option<(Vec<i32>, Vec<usize>)>, usize);

/// The name of the `appsink` appended to every pipeline.
const SINK: &str = "zerocam_sink";
/// How long `new` waits for the first frame (its caps are the stream format).
const FIRST_FRAME: Duration = Duration::from_secs(10);
/// Pool buffers the import cache keeps (a decoder's pool is rarely above 16).
const CACHE_CAPACITY: usize = 32;

/// The buffers frames hold, by frame index; the import cache; the counters.
#[derive(Debug)]
struct State {
    held: Vec<Option<gst::Buffer>>,
    cache: ImportCache,
    /// Two-dma-buf frames' compositions, per luma buffer.
    composed: std::collections::HashMap<zerocam_tensor::FdIdentity, crate::frame::tensor::Composed>,
    counters: Counters,
    system_memory_frames: u64,
}

impl Requeue for Mutex<State> {
    fn requeue(&self, index: usize) {
        if let Some(slot) = lock(self).held.get_mut(index) {
            *slot = None; // the pool may have the buffer back
        }
    }
}

/// A GStreamer pipeline as a frame source. See the module docs.
///
/// ```no_run
/// use std::time::Duration;
/// use zerocam_capture::{FrameSource, GstSource};
/// let mut src = GstSource::new("videotestsrc ! video/x-raw,format=NV12,width=640,height=480")?;
/// let frame = src.next_frame(Duration::from_secs(1))?;
/// assert_eq!(frame.tensor().shape(), &[720, 640]);
/// # Ok::<(), zerocam_capture::CaptureError>(())
/// ```
pub struct GstSource {
    pipeline: gst::Pipeline,
    sink: gst_app::AppSink,
    description: String,
    shared: Arc<Mutex<State>>,
    format: StreamFormat,
    caps: gst::Caps,
    /// The first sample, pulled by `new` to learn the format.
    first: Option<gst::Sample>,
    /// The last layout worked out, and what it was worked out from (video
    /// meta, memory count; with `caps`).
    layout: Option<LayoutKey>,
    /// Layouts worked out by `next_frame` (once per caps or meta change).
    layouts: u64,
    sequence: u32,
    path: PathBuf,
}

impl std::fmt::Debug for GstSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GstSource")
            .field("pipeline", &self.description)
            .field("format", &self.format)
            .finish()
    }
}

impl GstSource {
    /// Starts `description` with an `appsink` appended and waits (up to 10 s)
    /// for its first frame, whose caps give the [`StreamFormat`].
    ///
    /// # Errors
    /// [`GstError::Parse`] (bad syntax, no such element), [`GstError::NotPlaying`],
    /// [`GstError::Element`] (an element's error on the bus), [`GstError::Eos`]
    /// before any frame, [`GstError::UnsupportedCaps`], [`CaptureError::Timeout`].
    pub fn new(description: &str) -> Result<GstSource> {
        GstSource::with_setup(description, |_| Ok(()))
    }

    /// As [`new`](GstSource::new), with `setup` run on the parsed pipeline
    /// before it starts: set properties, connect an `appsrc`'s callbacks.
    ///
    /// # Errors
    /// As [`new`](GstSource::new), and `setup`'s error.
    pub fn with_setup(
        description: &str,
        setup: impl FnOnce(&gst::Pipeline) -> std::result::Result<(), GstError>,
    ) -> Result<GstSource> {
        gst::init().map_err(|e| GstError::Init {
            message: e.message().to_owned(),
        })?;
        let full = format!("{description} ! appsink name={SINK} sync=false");
        let parsed = gst::parse::launch(&full).map_err(|e| GstError::Parse {
            pipeline: description.to_owned(),
            message: e.message().to_owned(),
        })?;
        let not_a_pipeline = || GstError::Parse {
            pipeline: description.to_owned(),
            message: "not one pipeline".into(),
        };
        let pipeline = parsed
            .downcast::<gst::Pipeline>()
            .map_err(|_| not_a_pipeline())?;
        let sink = pipeline
            .by_name(SINK)
            .and_then(|e| e.downcast::<gst_app::AppSink>().ok())
            .ok_or_else(not_a_pipeline)?;
        // Back-pressure, not drops: a live source drops on its own; a
        // decoder or a file must not lose frames to a slow consumer.
        sink.set_max_buffers(2);
        sink.set_drop(false);
        // What zerocam takes, in system memory or as dma-bufs: a pipeline
        // that leaves the format open negotiates one of these.
        sink.set_caps(Some(&caps::sink_caps()));
        let path = PathBuf::from(format!("gst:{description}"));
        let mut source = GstSource {
            pipeline,
            sink,
            description: description.to_owned(),
            shared: Arc::new(Mutex::new(State {
                held: Vec::new(),
                cache: ImportCache::new(CACHE_CAPACITY),
                composed: Default::default(),
                counters: Counters::default(),
                system_memory_frames: 0,
            })),
            format: StreamFormat {
                format: crate::CAPTURE_FORMATS[0],
                width: 0,
                height: 0,
                planes: Vec::new(),
                color: Default::default(),
            },
            caps: gst::Caps::new_empty(),
            first: None,
            layout: None,
            layouts: 0,
            sequence: 0,
            path,
        };
        setup(&source.pipeline)?;
        if source.pipeline.set_state(gst::State::Playing).is_err() {
            return Err(source
                .bus_error()
                .unwrap_or_else(|| GstError::NotPlaying {
                    pipeline: description.to_owned(),
                    message: "the state change to PLAYING failed".into(),
                })
                .into());
        }
        let first = source.pull(FIRST_FRAME)?;
        let caps = first.caps_owned().unwrap_or_else(gst::Caps::new_empty);
        source.format = layout_of(&first, &caps)?.format;
        source.caps = caps;
        source.first = Some(first);
        Ok(source)
    }

    /// The pipeline description (without the appended sink).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The running pipeline, to reach its elements (`by_name`) — set a
    /// property, seek, change caps. zerocam's `appsink` is `zerocam_sink`.
    pub fn pipeline(&self) -> &gst::Pipeline {
        &self.pipeline
    }

    /// How many times `next_frame` worked a frame layout out (from caps and
    /// video meta): once per stream and per caps or meta change, not per
    /// frame. For the tests that check it.
    #[doc(hidden)]
    pub fn __layouts_worked_out(&self) -> u64 {
        self.layouts
    }

    /// The first error an element posted on the bus, if any.
    fn bus_error(&self) -> Option<GstError> {
        let bus = self.pipeline.bus()?;
        while let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
            if let gst::MessageView::Error(e) = msg.view() {
                let element = msg
                    .src()
                    .map_or_else(|| "pipeline".to_owned(), |s| s.name().to_string());
                let mut message = e.error().message().to_owned();
                // The debug detail's last line says what (its first says
                // where in GStreamer's sources): one line in all.
                let detail = e
                    .debug()
                    .and_then(|d| d.lines().last().map(str::trim).map(str::to_owned));
                if let Some(detail) = detail.filter(|d| !d.is_empty()) {
                    message = format!("{message} ({detail})");
                }
                return Some(GstError::Element { element, message });
            }
        }
        None
    }

    /// The next sample, or why there is none.
    fn pull(&mut self, timeout: Duration) -> Result<gst::Sample> {
        if let Some(e) = self.bus_error() {
            return Err(e.into());
        }
        let wait =
            gst::ClockTime::from_nseconds(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
        match self.sink.try_pull_sample(wait) {
            Some(sample) => Ok(sample),
            None => {
                if let Some(e) = self.bus_error() {
                    return Err(e.into());
                }
                if self.sink.is_eos() {
                    return Err(GstError::Eos {
                        pipeline: self.description.clone(),
                    }
                    .into());
                }
                Err(CaptureError::Timeout {
                    path: self.path.clone(),
                    timeout,
                })
            }
        }
    }
}

impl GstSource {
    /// The frame tensor of `buffer`: its dma-buf(s) through the import cache,
    /// or its system memory wrapped.
    fn tensor_of(
        &self,
        st: &mut State,
        buffer: &gst::Buffer,
        layout: &caps::FrameLayout,
    ) -> Result<zerocam_tensor::Tensor<u8>> {
        let n = buffer.n_memory();
        let first = (n >= 1)
            .then(|| memory::dma_buf(buffer.peek_memory(0)))
            .flatten();
        match (n, first) {
            (1, Some((fd, offset, maxsize))) => {
                memory::import_dma_buf(&self.path, &mut st.cache, fd, offset, maxsize, layout.image)
            }
            (2, Some(_)) if layout.format.format.pixel.plane_count() == 2 => {
                // The planes' offsets in the buffer, as the layout has them
                // (from the video meta, else the caps).
                let image = &layout.image;
                let offsets = [
                    image.start_offset,
                    image.start_offset + image.plane_offset.unwrap_or(0),
                ];
                let stride = layout.format.planes.first().map_or(0, |p| p.bytes_per_line);
                memory::import_two_dma_bufs(
                    &self.path,
                    &mut st.cache,
                    &mut st.composed,
                    buffer,
                    &layout.format,
                    stride,
                    &offsets,
                )
            }
            _ => {
                st.system_memory_frames += 1;
                memory::wrap_system(&self.path, buffer.clone(), layout.image)
            }
        }
    }
}

/// The frame layout of `sample` (with `caps`): from its caps and video meta,
/// two memory planes when its buffer is two dma-bufs.
fn layout_of(sample: &gst::Sample, caps: &gst::Caps) -> Result<caps::FrameLayout> {
    let meta = meta_of(sample);
    let mut layout = caps::frame_layout(caps, meta.as_ref().map(|(s, o)| (&s[..], &o[..])))?;
    let two_dma_bufs = sample
        .buffer()
        .is_some_and(|b| b.n_memory() == 2 && memory::dma_buf(b.peek_memory(0)).is_some());
    if two_dma_bufs {
        caps::split_planes(&mut layout);
    }
    Ok(layout)
}

/// Whether `sample`'s buffer has the video meta and memory count `key` holds.
fn layout_key_matches(key: &LayoutSource, sample: &gst::Sample) -> bool {
    let Some(buffer) = sample.buffer() else {
        return false;
    };
    let meta = buffer.meta::<gst_video::VideoMeta>();
    let meta_same = match (&key.0, &meta) {
        (None, None) => true,
        (Some((stride, offset)), Some(m)) => m.stride() == &stride[..] && m.offset() == &offset[..],
        _ => false,
    };
    meta_same && key.1 == buffer.n_memory()
}

/// The strides and plane offsets of `sample`'s buffer's video meta, if it has one.
fn meta_of(sample: &gst::Sample) -> Option<(Vec<i32>, Vec<usize>)> {
    let meta = sample.buffer()?.meta::<gst_video::VideoMeta>()?;
    Some((meta.stride().to_vec(), meta.offset().to_vec()))
}

impl FrameSource for GstSource {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        let sample = match self.first.take() {
            Some(s) => s,
            None => self.pull(timeout)?,
        };
        let ready = Instant::now();
        // A reference to the sample's caps, not a copy (`CapsRef::to_owned`
        // would copy them, and every frame would look like new caps).
        let caps = sample.caps_owned().unwrap_or_else(gst::Caps::new_empty);
        // The layout is worked out again only when what it depends on changed
        // (a stream's samples share their caps; a pool's buffers their meta),
        // compared in place: nothing is allocated for a frame like the last.
        let same = self.layout.as_ref().is_some_and(|(key, _)| {
            caps.as_ptr() == self.caps.as_ptr() && layout_key_matches(key, &sample)
        });
        let layout = match (&self.layout, same) {
            (Some((_, l)), true) => Arc::clone(l), // no allocation per frame
            _ => {
                let l = Arc::new(layout_of(&sample, &caps)?);
                self.layouts += 1;
                let key = (
                    meta_of(&sample),
                    sample.buffer().map_or(0, |b| b.n_memory()),
                );
                self.layout = Some((key, Arc::clone(&l)));
                l
            }
        };
        // Samples of one stream share one caps object: compared by pointer,
        // field by field only when the object changed.
        if caps.as_ptr() != self.caps.as_ptr() {
            if caps != self.caps {
                // New caps, new pool: its buffers are new files, imported anew.
                self.format = layout.format.clone();
            }
            self.caps = caps;
        }
        let buffer = sample.buffer_owned().ok_or_else(|| GstError::Element {
            element: SINK.into(),
            message: "a sample without a buffer".into(),
        })?;
        // The buffer's PTS is on the pipeline's running time, not the
        // monotonic clock frames are stamped on: stamped when pulled.
        let timestamp = monotonic_now();
        let bytes_used = buffer.size();
        let shared = Arc::clone(&self.shared);
        let mut guard = lock(&shared);
        let st = &mut *guard;
        let tensor = self.tensor_of(st, &buffer, &layout)?;
        let index = match st.held.iter().position(Option::is_none) {
            Some(i) => {
                st.held[i] = Some(buffer);
                i
            }
            None => {
                st.held.push(Some(buffer));
                st.held.len() - 1
            }
        };
        st.counters.frames += 1;
        drop(guard);
        let sequence = self.sequence;
        self.sequence = self.sequence.wrapping_add(1);
        let meta = FrameMeta {
            sequence,
            timestamp,
            bytes_used,
            synthesized: Synthesized {
                sequence: true,
                timestamp: true,
                bytes_used: false,
            },
            placement: Placement::default(),
        };
        let color = self.format.color;
        Ok(Frame::new(shared, index, tensor, color, meta, ready))
    }

    fn stream_format(&self) -> &StreamFormat {
        &self.format
    }

    fn stats(&self) -> StreamStats {
        let st = lock(&self.shared);
        let planes = self.format.planes.len();
        let cache = st.cache.stats();
        let buffers = cache.live / planes.max(1);
        let mut stats = StreamStats::new(st.counters, buffers, planes, cache);
        stats.system_memory_frames = st.system_memory_frames;
        stats
    }

    fn name(&self) -> &Path {
        &self.path
    }
}

impl Drop for GstSource {
    fn drop(&mut self) {
        // NULL frees every element's resources (fds, threads, pools); frames
        // still alive keep their own buffers.
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}
