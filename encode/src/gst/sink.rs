//! [`FrameSink`]: frames into a GStreamer pipeline through an `appsrc`.

use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use zerocam_capture::Frame;

use super::buffer;
use super::config::{SinkConfig, SinkStats};
use super::lease::Leases;
use super::picture::Picture;
use super::{bus, GstEncodeError};

/// The name of the `appsrc` [`FrameSink::launch`] puts first.
pub const SOURCE_NAME: &str = "zerocam_src";

/// An `appsrc` that takes zerocam [`Frame`]s: each frame's buffers become the
/// memories of a `GstBuffer` without a copy (dma-bufs as `GstDmaBufMemory`),
/// and the frame goes back to its source when GStreamer frees the buffer.
/// See the [module docs](super).
///
/// A pipeline holds as many frames as it holds buffers: `x264enc` keeps tens
/// for its lookahead unless `tune=zerolatency`, more than a camera has
/// buffers; there, [`SinkConfig::copy`].
///
/// ```no_run
/// use zerocam_capture::{FrameSource, PatternConfig, PatternSource, CAPTURE_FORMATS};
/// use zerocam_encode::gst::FrameSink;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut src = PatternSource::new(PatternConfig::new(CAPTURE_FORMATS[0], 640, 480))?;
/// let first = src.next_frame(std::time::Duration::from_secs(1))?;
/// let pipeline = "x264enc tune=zerolatency ! mp4mux ! filesink location=x.mp4";
/// let mut sink = FrameSink::launch(pipeline, &first)?;
/// sink.push(first)?;
/// sink.finish()?;
/// # Ok(()) }
/// ```
pub struct FrameSink {
    appsrc: gst_app::AppSrc,
    /// The pipeline, when the sink made it (and so runs and stops it).
    owned: Option<gst::Pipeline>,
    bus: Option<gst::Bus>,
    description: String,
    config: SinkConfig,
    picture: Picture,
    /// The first frame's timestamp: buffer time 0.
    base: Option<Duration>,
    stats: SinkStats,
    leases: Leases,
    /// The last pushed buffer's size: what one queued frame is.
    frame_bytes: u64,
    ended: bool,
}

impl std::fmt::Debug for FrameSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameSink")
            .field("pipeline", &self.description)
            .field("picture", &self.picture)
            .field("stats", &self.stats())
            .finish()
    }
}

impl FrameSink {
    /// Starts `appsrc name=zerocam_src ! DESCRIPTION` for frames like
    /// `first` (which is not pushed), with the default [`SinkConfig`].
    ///
    /// # Errors
    /// [`GstEncodeError::MissingElement`], [`GstEncodeError::Parse`],
    /// [`GstEncodeError::UnsupportedFrame`] (a format GStreamer has no raw
    /// caps for), [`GstEncodeError::StateChange`] or an element's error.
    pub fn launch(description: &str, first: &Frame) -> Result<FrameSink, GstEncodeError> {
        FrameSink::launch_with(description, first, SinkConfig::default())
    }

    /// As [`launch`](FrameSink::launch), with `config`.
    ///
    /// # Errors
    /// As [`launch`](FrameSink::launch).
    pub fn launch_with(
        description: &str,
        first: &Frame,
        config: SinkConfig,
    ) -> Result<FrameSink, GstEncodeError> {
        bus::init()?;
        let full = format!("appsrc name={SOURCE_NAME} ! {description}");
        let pipeline = bus::parse(&full)?;
        FrameSink::with_pipeline(pipeline, first, config, full)
    }

    /// The sink over `pipeline`'s appsrc named [`SOURCE_NAME`], started.
    pub(crate) fn with_pipeline(
        pipeline: gst::Pipeline,
        first: &Frame,
        config: SinkConfig,
        description: String,
    ) -> Result<FrameSink, GstEncodeError> {
        let appsrc = pipeline
            .by_name(SOURCE_NAME)
            .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
            .ok_or_else(|| GstEncodeError::Parse {
                pipeline: description.clone(),
                message: format!("no appsrc named {SOURCE_NAME}"),
            })?;
        let mut sink = FrameSink::configure(appsrc, first, config, description)?;
        sink.bus = pipeline.bus();
        sink.owned = Some(pipeline);
        sink.start()?;
        Ok(sink)
    }

    /// A sink over an `appsrc` the caller made and runs (in its own
    /// pipeline): its caps, format and queue are set here for frames like
    /// `first`. The pipeline's bus stays the caller's: type its error
    /// messages with [`error_of`](super::error_of). [`finish`](FrameSink::finish)
    /// only sends end-of-stream; frames come back as the caller's pipeline
    /// frees them (all of them when it goes to NULL).
    ///
    /// # Errors
    /// [`GstEncodeError::UnsupportedFrame`].
    pub fn new(appsrc: gst_app::AppSrc, first: &Frame) -> Result<FrameSink, GstEncodeError> {
        FrameSink::new_with(appsrc, first, SinkConfig::default())
    }

    /// As [`new`](FrameSink::new), with `config`.
    ///
    /// # Errors
    /// As [`new`](FrameSink::new).
    pub fn new_with(
        appsrc: gst_app::AppSrc,
        first: &Frame,
        config: SinkConfig,
    ) -> Result<FrameSink, GstEncodeError> {
        bus::init()?;
        let name = appsrc.name().to_string();
        FrameSink::configure(appsrc, first, config, name)
    }

    fn configure(
        appsrc: gst_app::AppSrc,
        first: &Frame,
        config: SinkConfig,
        description: String,
    ) -> Result<FrameSink, GstEncodeError> {
        let picture = Picture::of(first)?;
        appsrc.set_caps(Some(&picture.caps(config.fps)?));
        appsrc.set_format(gst::Format::Time);
        appsrc.set_stream_type(gst_app::AppStreamType::Stream);
        // The queue is bounded by `push` (it waits for room, then drops);
        // appsrc's own limit is left unbounded so that it never blocks.
        appsrc.set_block(false);
        appsrc.set_max_bytes(0);
        log::info!(
            "frames into GStreamer: {description} ({} {}x{} at {} fps)",
            picture.format,
            picture.width,
            picture.height,
            config.fps
        );
        Ok(FrameSink {
            appsrc,
            owned: None,
            bus: None,
            description,
            config,
            picture,
            base: None,
            stats: SinkStats::default(),
            leases: Leases::default(),
            frame_bytes: 1,
            ended: false,
        })
    }

    fn start(&mut self) -> Result<(), GstEncodeError> {
        let Some(pipeline) = &self.owned else {
            return Ok(());
        };
        if pipeline.set_state(gst::State::Playing).is_err() {
            return Err(self.bus_error().unwrap_or(GstEncodeError::StateChange {
                pipeline: self.description.clone(),
                state: "PLAYING".into(),
            }));
        }
        Ok(())
    }

    /// The pipeline, when the sink made it ([`launch`](FrameSink::launch)).
    pub fn pipeline(&self) -> Option<&gst::Pipeline> {
        self.owned.as_ref()
    }

    /// The `appsrc` frames enter through.
    pub fn appsrc(&self) -> &gst_app::AppSrc {
        &self.appsrc
    }

    /// The first pushed frame's timestamp (buffer time 0), once one was pushed.
    pub fn base(&self) -> Option<Duration> {
        self.base
    }

    /// The counts so far.
    pub fn stats(&self) -> SinkStats {
        SinkStats {
            outstanding: self.leases.outstanding(),
            ..self.stats
        }
    }

    /// The pipeline description (or the caller's appsrc's name).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The first error on the bus, if any (the sink is over after one).
    pub(crate) fn take_bus_error(&mut self) -> Option<GstEncodeError> {
        self.bus_error()
    }

    /// Stops a pipeline the sink made (NULL: every buffer it held is freed).
    pub(crate) fn stop(&mut self) {
        self.ended = true;
        let Some(p) = &self.owned else {
            return;
        };
        let _ = p.set_state(gst::State::Null);
        // Stopped, GStreamer should hold no frame; an element may still keep
        // a buffer until it is disposed (an appsink's last sample) or leak
        // one (v4l2videoenc after a failed pool activation, GStreamer 1.26).
        let taken = self.leases.take_back();
        if taken > 0 {
            self.stats.taken_back += taken;
            log::warn!(
                "{}: GStreamer still held {taken} frame(s) after stopping (an element kept or \
                 leaked its buffers); their leases are taken back",
                self.description
            );
        }
    }

    /// The first error on the bus, if any (and the sink is over).
    fn bus_error(&mut self) -> Option<GstEncodeError> {
        let e = self.bus.as_ref().and_then(bus::pending_error)?;
        self.ended = true;
        Some(e)
    }

    /// Pushes `frame`: its buffers lent to GStreamer (or copied, counted, when
    /// [`SinkConfig::copy`] is set or the layout needs it), timed from the
    /// first pushed frame's timestamp. Waits up to [`SinkConfig::wait`] for
    /// room in the queue.
    ///
    /// # Errors
    /// An element's error on the bus ([`GstEncodeError::NotNegotiated`],
    /// [`GstEncodeError::Element`]); [`GstEncodeError::NotKeepingUp`] (the
    /// frame was dropped and counted; later pushes may succeed);
    /// [`GstEncodeError::Ended`] after end-of-stream or an error.
    pub fn push(&mut self, frame: Frame) -> Result<(), GstEncodeError> {
        if let Some(e) = self.bus_error() {
            return Err(e);
        }
        if self.ended {
            return Err(GstEncodeError::Ended);
        }
        self.wait_for_room(frame.sequence())?;
        let timestamp = frame.timestamp();
        let base = *self.base.get_or_insert(timestamp);
        let sequence = frame.sequence();
        let made = buffer::make(frame, self.picture, self.config.copy, &mut self.leases)?;
        let mut buffer = made.buffer;
        self.frame_bytes = buffer.size() as u64;
        if let Some(b) = buffer.get_mut() {
            let pts = timestamp.saturating_sub(base);
            b.set_pts(gst::ClockTime::from_nseconds(
                u64::try_from(pts.as_nanos()).unwrap_or(u64::MAX),
            ));
            b.set_offset(u64::from(sequence));
        }
        if made.copied {
            self.stats.copied += 1;
            log::debug!("frame {sequence} copied into system memory for GStreamer");
        } else {
            self.stats.lent += 1;
            let m = made.memories;
            self.stats.memories_lent += m.total() as u64;
            self.stats.dmabuf_memories += m.dmabuf as u64;
            self.stats.fd_memories += m.fd as u64;
            self.stats.mapped_memories += m.mapped as u64;
        }
        match self.appsrc.push_buffer(buffer) {
            Ok(_) => {
                self.stats.pushed += 1;
                Ok(())
            }
            Err(flow) => {
                self.ended = true;
                Err(self.bus_error().unwrap_or(GstEncodeError::Element {
                    element: self.appsrc.name().to_string(),
                    message: format!("push refused: {flow:?}"),
                }))
            }
        }
    }

    /// Waits until the appsrc queues fewer than `max_queued` frames (its
    /// queued bytes over the last frame's size).
    fn wait_for_room(&mut self, sequence: u32) -> Result<(), GstEncodeError> {
        let started = Instant::now();
        loop {
            let bytes = self.appsrc.current_level_bytes();
            let queued = bytes.div_ceil(self.frame_bytes.max(1));
            if queued < u64::from(self.config.max_queued.max(1)) {
                return Ok(());
            }
            if let Some(e) = self.bus_error() {
                return Err(e);
            }
            if started.elapsed() >= self.config.wait {
                self.stats.dropped += 1;
                log::warn!(
                    "{}: not keeping up ({queued} frames queued); frame {sequence} dropped",
                    self.description
                );
                return Err(GstEncodeError::NotKeepingUp {
                    sequence,
                    queued,
                    waited: started.elapsed(),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Ends the stream (EOS) without waiting: for a sink whose pipeline the
    /// caller runs, or whose end an `appsink` reports.
    ///
    /// # Errors
    /// An element's error on the bus.
    pub fn end_of_stream(&mut self) -> Result<(), GstEncodeError> {
        if let Some(e) = self.bus_error() {
            return Err(e);
        }
        if !self.ended {
            self.ended = true;
            // A refusal means the stream is already over (flushing, EOS).
            let _ = self.appsrc.end_of_stream();
        }
        Ok(())
    }

    /// Ends the stream and, for a pipeline the sink made, waits for
    /// end-of-stream to reach its sinks (a muxer finishes its file), then
    /// stops it: every frame lease is back when it returns.
    ///
    /// # Errors
    /// An element's error on the bus; [`GstEncodeError::EosTimeout`].
    pub fn finish(&mut self) -> Result<SinkStats, GstEncodeError> {
        self.end_of_stream()?;
        let Some(pipeline) = self.owned.clone() else {
            return Ok(self.stats());
        };
        let waited = self.config.eos_wait;
        let result = match &self.bus {
            Some(bus) => {
                let timeout = gst::ClockTime::from_nseconds(
                    u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX),
                );
                match bus
                    .timed_pop_filtered(timeout, &[gst::MessageType::Eos, gst::MessageType::Error])
                {
                    Some(msg) => bus::error_of(&msg).map_or(Ok(()), Err),
                    None => Err(GstEncodeError::EosTimeout {
                        pipeline: self.description.clone(),
                        waited,
                    }),
                }
            }
            None => Ok(()),
        };
        // NULL frees every buffer the pipeline still holds.
        drop(pipeline);
        self.stop();
        result.map(|()| self.stats())
    }
}

impl Drop for FrameSink {
    fn drop(&mut self) {
        self.stop();
    }
}
