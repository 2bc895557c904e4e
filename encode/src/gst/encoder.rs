//! [`GstVideoEncoder`]: a GStreamer encoder element as a
//! [`VideoEncoder`](crate::VideoEncoder), fed through a [`FrameSink`], and
//! [`find`]: the first encoder element of a codec that is installed.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use gstreamer_video as gst_video;
use zerocam_capture::Frame;

use super::config::SinkConfig;
use super::sink::{FrameSink, SOURCE_NAME};
use super::{bus, rate, GstEncodeError};
use crate::encoder::EncoderConfig;
use crate::{Codec, EncodeError, EncodeStats, Packet, VideoEncoder};

/// The name of the encoder element in the pipeline.
const ENCODER_NAME: &str = "zerocam_enc";
/// The name of the `appsink` packets come out of.
const OUT_NAME: &str = "zerocam_out";
/// How long `finish` waits for the last packets.
const DRAIN: Duration = Duration::from_secs(30);
/// Frames in a row whose packet did not come within the wait, after which
/// the element is taken to hold frames (a lookahead): `encode` then stops
/// waiting, and packets leave with later frames.
const LATE_LIMIT: u32 = 5;

/// The encoder elements [`find`] tries for `codec`, best first (hardware
/// V4L2 and i.MX VPU encoders before software ones).
pub fn candidates(codec: Codec) -> &'static [&'static str] {
    match codec {
        Codec::H264 => &["v4l2h264enc", "vpuenc_h264", "x264enc", "openh264enc"],
        Codec::Hevc => &["v4l2h265enc", "vpuenc_hevc", "x265enc"],
        Codec::Mjpeg => &["jpegenc"],
        Codec::Fwht => &["v4l2fwhtenc"],
    }
}

/// The first of [`candidates`]`(codec)` whose plugin is installed; `None`
/// when none is (or GStreamer does not start).
pub fn find(codec: Codec) -> Option<String> {
    bus::init().ok()?;
    candidates(codec)
        .iter()
        .find(|name| gst::ElementFactory::find(name).is_some())
        .map(|name| (*name).to_owned())
}

/// The longest `encode` waits for a frame's own packet. A packet comes
/// within milliseconds, so the wait ends then; the bound is only reached
/// by an element that holds frames (found after [`LATE_LIMIT`] frames,
/// then no longer waited for) or one starting up on a loaded machine (a
/// frame interval was too short for x264enc's first 720p frames beside
/// two busy loops).
const OWN_WAIT: Duration = Duration::from_millis(500);

/// What goes after the encoder for `codec`: a parser that puts SPS/PPS
/// before every keyframe and caps for Annex-B access units.
fn tail(codec: Codec) -> &'static str {
    match codec {
        Codec::H264 => {
            "h264parse config-interval=-1 ! video/x-h264,stream-format=byte-stream,alignment=au"
        }
        Codec::Hevc => {
            "h265parse config-interval=-1 ! video/x-h265,stream-format=byte-stream,alignment=au"
        }
        Codec::Mjpeg => "image/jpeg",
        Codec::Fwht => "identity",
    }
}

/// A GStreamer encoder element between an `appsrc` (frames in, their own
/// buffers lent) and an `appsink` (Annex-B access units out).
pub struct GstVideoEncoder {
    sink: FrameSink,
    out: gst_app::AppSink,
    /// The encoder element (keyframe requests go to its source pad).
    enc: gst::Element,
    element: String,
    codec: Codec,
    /// Pushed frames' buffer times and sequence numbers, oldest first.
    pending: VecDeque<(u64, u32)>,
    /// How long `encode` waits for the frame's own packet (`None`: it does
    /// not, the element holds frames).
    own_wait: Option<Duration>,
    /// Frames in a row whose packet did not come within `own_wait`.
    late_in_a_row: u32,
    stats: EncodeStats,
}

impl std::fmt::Debug for GstVideoEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GstVideoEncoder")
            .field("element", &self.element)
            .field("codec", &self.codec)
            .field("stats", &self.stats)
            .finish()
    }
}

impl GstVideoEncoder {
    /// Starts `appsrc ! ELEMENT ! parser ! appsink` for frames like `first`
    /// (not encoded): `element` is a factory name, with properties if wanted
    /// (`"x264enc speed-preset=ultrafast"`); `config`'s bit rate and GOP are
    /// set on the properties the element has for them.
    ///
    /// # Errors
    /// [`GstEncodeError::MissingElement`] (no such element or parser),
    /// [`GstEncodeError::Parse`], [`GstEncodeError::UnsupportedFrame`],
    /// [`GstEncodeError::StateChange`] or an element's error.
    pub fn open(
        element: &str,
        config: &EncoderConfig,
        first: &Frame,
    ) -> Result<GstVideoEncoder, GstEncodeError> {
        let codec = config.codec;
        let description = format!(
            "{element} name={ENCODER_NAME} ! {} ! appsink name={OUT_NAME} sync=false",
            tail(codec)
        );
        let sink_config = SinkConfig {
            fps: config.fps,
            ..SinkConfig::default()
        };
        // Elements are set up before PLAYING: parse here, start in the sink.
        bus::init()?;
        let full = format!("appsrc name={SOURCE_NAME} ! {description}");
        let pipeline = bus::parse(&full)?;
        let missing = |what: &str| GstEncodeError::Parse {
            pipeline: full.clone(),
            message: format!("no element named {what}"),
        };
        let enc = pipeline
            .by_name(ENCODER_NAME)
            .ok_or_else(|| missing(ENCODER_NAME))?;
        rate::rate_control(&enc, config);
        let out = pipeline
            .by_name(OUT_NAME)
            .and_then(|e| e.downcast::<gst_app::AppSink>().ok())
            .ok_or_else(|| missing(OUT_NAME))?;
        // Packets are pulled after every frame; a bounded sink makes a
        // stalled consumer stall the encoder, not grow memory.
        out.set_max_buffers(64);
        out.set_drop(false);
        let sink = FrameSink::with_pipeline(pipeline, first, sink_config, full)?;
        let name = element.split_whitespace().next().unwrap_or(element);
        log::info!("GStreamer encoder {name} for {codec}");
        Ok(GstVideoEncoder {
            sink,
            out,
            enc,
            element: name.to_owned(),
            codec,
            pending: VecDeque::new(),
            own_wait: Some(OWN_WAIT),
            late_in_a_row: 0,
            stats: EncodeStats::default(),
        })
    }

    /// The frame sink the encoder is fed through (its counts: lent, copied,
    /// dropped, outstanding).
    pub fn sink(&self) -> &FrameSink {
        &self.sink
    }

    /// The packets the appsink has, waiting up to `wait` for the first.
    fn pull(&mut self, wait: Duration) -> Result<Vec<Packet>, GstEncodeError> {
        let mut packets = Vec::new();
        let mut timeout =
            gst::ClockTime::from_nseconds(u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX));
        while let Some(sample) = self.out.try_pull_sample(timeout) {
            timeout = gst::ClockTime::ZERO;
            if let Some(p) = self.packet(&sample)? {
                packets.push(p);
            }
        }
        Ok(packets)
    }

    fn packet(&mut self, sample: &gst::Sample) -> Result<Option<Packet>, GstEncodeError> {
        let Some(buffer) = sample.buffer() else {
            return Ok(None);
        };
        let map = buffer.map_readable().map_err(|_| GstEncodeError::Element {
            element: OUT_NAME.into(),
            message: "an encoded buffer could not be mapped".into(),
        })?;
        // On the running time frames were pushed at: encoders may shift
        // buffer times (x264enc starts its segment 1000 hours in, for DTS).
        let pts = buffer.pts().map_or(0, |t| {
            sample
                .segment()
                .and_then(|s| s.downcast_ref::<gst::ClockTime>())
                .and_then(|s| s.to_running_time(t))
                .unwrap_or(t)
                .nseconds()
        });
        // The source frame: the one pushed at this buffer time (encoders
        // without B-frames emit in order; older entries are done).
        let mut sequence = None;
        while let Some(&(t, s)) = self.pending.front() {
            if t > pts {
                break;
            }
            self.pending.pop_front();
            if t == pts {
                sequence = Some(s);
                break;
            }
        }
        let base = self.sink.base().unwrap_or_default();
        let packet = Packet {
            data: map.as_slice().to_vec(),
            pts: base + Duration::from_nanos(pts),
            keyframe: !buffer.flags().contains(gst::BufferFlags::DELTA_UNIT),
            sequence: sequence.unwrap_or_default(),
        };
        self.stats.packets_out += 1;
        self.stats.bytes_out += packet.data.len() as u64;
        Ok(Some(packet))
    }

    /// Waits for the packet of the frame pushed at `pts` (nanoseconds) and
    /// returns what came meanwhile: the element encodes on its own thread,
    /// so a packet is never there right after the push, and without the
    /// wait each frame's packet would leave with the next frame, a frame
    /// interval late. Once [`LATE_LIMIT`] frames in a row did not come in
    /// time, the element holds frames (a lookahead) and this stops waiting.
    fn pull_own(&mut self, pts: u64) -> Result<Vec<Packet>, GstEncodeError> {
        let mut packets = self.pull(Duration::ZERO)?;
        let Some(wait) = self.own_wait else {
            return Ok(packets);
        };
        let deadline = Instant::now() + wait;
        // The frame just pushed is the newest entry until its packet (or a
        // later one) takes it off: no scan of the queue.
        let out = |pending: &VecDeque<(u64, u32)>| pending.back().is_none_or(|&(t, _)| t != pts);
        while !out(&self.pending) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            packets.extend(self.pull(left)?);
        }
        if out(&self.pending) {
            self.late_in_a_row = 0;
        } else {
            self.late_in_a_row += 1;
            if self.late_in_a_row >= LATE_LIMIT {
                log::info!(
                    "{}: {LATE_LIMIT} frames in a row not encoded within {wait:?}: it holds \
                     frames, so packets leave with later frames",
                    self.element
                );
                self.own_wait = None;
            }
        }
        Ok(packets)
    }

    /// The encoder's counts with the sink's.
    fn counts(&self) -> EncodeStats {
        let s = self.sink.stats();
        EncodeStats {
            imports: s.memories_lent,
            copied_frames: s.copied,
            ..self.stats
        }
    }
}

impl VideoEncoder for GstVideoEncoder {
    fn codec(&self) -> Codec {
        self.codec
    }

    fn describe(&self) -> String {
        format!("{} (GStreamer)", self.element)
    }

    fn encode(&mut self, frame: Frame) -> Result<Vec<Packet>, EncodeError> {
        let sequence = frame.sequence();
        let base = self.sink.base().unwrap_or(frame.timestamp());
        let pts = frame.timestamp().saturating_sub(base);
        self.stats.frames_in += 1;
        self.sink.push(frame)?;
        let pts = u64::try_from(pts.as_nanos()).unwrap_or(u64::MAX);
        self.pending.push_back((pts, sequence));
        Ok(self.pull_own(pts)?)
    }

    /// An upstream force-key-unit event, all headers, on the element's
    /// source pad: GStreamer's encoders (`GstVideoEncoder`'s) make the next
    /// frame they take a keyframe, and the parser after them puts the
    /// parameter sets before it. `false` when the element does not handle
    /// the event.
    fn request_keyframe(&mut self) -> bool {
        let Some(pad) = self.enc.static_pad("src") else {
            return false;
        };
        let event = gst_video::UpstreamForceKeyUnitEvent::builder()
            .all_headers(true)
            .build();
        let taken = pad.send_event(event);
        if !taken {
            log::info!("{}: a keyframe request not handled", self.element);
        }
        taken
    }

    fn finish(&mut self) -> Result<Vec<Packet>, EncodeError> {
        self.sink.end_of_stream()?;
        let started = Instant::now();
        let mut packets = Vec::new();
        while !self.out.is_eos() && started.elapsed() < DRAIN {
            packets.extend(self.pull(Duration::from_millis(100))?);
            if let Some(e) = self.sink.take_bus_error() {
                return Err(e.into());
            }
        }
        packets.extend(self.pull(Duration::ZERO)?);
        if !self.out.is_eos() {
            return Err(GstEncodeError::EosTimeout {
                pipeline: self.sink.description().to_owned(),
                waited: DRAIN,
            }
            .into());
        }
        self.sink.stop();
        Ok(packets)
    }

    fn stats(&self) -> EncodeStats {
        self.counts()
    }
}
