//! [`ZenohPublisher`]: a capture's frames as ROS 2 topics on Zenoh.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use zenoh::bytes::{Encoding, ZBytes};
use zenoh::pubsub::Publisher;
use zenoh::qos::CongestionControl;
use zenoh::{Session, Wait};
use zerocam_capture::frame::Clock;
use zerocam_capture::ros::{CameraInfo, CompressedImage, CompressedVideo, Header, Message, Time};
use zerocam_capture::zenoh_source::{open_session, Attachment, Role, ZenohError, ZenohOptions};
use zerocam_capture::{Frame, StreamFormat};
use zerocam_encode::encoder::{open_encoder, EncoderConfig};
use zerocam_encode::jpeg::JpegEncoder;
use zerocam_encode::{Codec, EncoderChoice, Packet, VideoEncoder};

use super::PublishError;

/// How to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZenohPublisherConfig {
    /// The session.
    pub options: ZenohOptions,
    /// The key prefix (`rt/camera`: the DDS name of the ROS topic `/camera`,
    /// as `zenoh-bridge-dds` keys it; docs/network.md).
    pub prefix: String,
    /// The messages' `frame_id`.
    pub frame_id: String,
    /// JPEG quality, 1–100.
    pub jpeg_quality: u8,
    /// The H.264 encoder of `PREFIX/h264` (`None`: no H.264 topic). Frames
    /// given by reference ([`ZenohPublisher::publish`]) need one that
    /// keeps nothing (software); frames given by value
    /// ([`ZenohPublisher::publish_owned`]) go to any, a hardware encoder
    /// importing the capture's dma-bufs.
    pub h264: Option<EncoderChoice>,
    /// Frames between H.264 keyframes (a late subscriber waits at most this
    /// long for a picture); each new subscription also starts a new stream
    /// at a keyframe.
    pub gop: u32,
}

impl ZenohPublisherConfig {
    /// Under `rt/camera`, frame `camera`, JPEG quality 85, zerocam's default
    /// session (listening on loopback only).
    pub fn new() -> ZenohPublisherConfig {
        ZenohPublisherConfig {
            options: ZenohOptions::default(),
            prefix: "rt/camera".into(),
            frame_id: "camera".into(),
            jpeg_quality: 85,
            h264: Some(EncoderChoice::Auto),
            gop: 30,
        }
    }
}

impl Default for ZenohPublisherConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// What a publisher did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZenohPublisherStats {
    /// Frames given to [`ZenohPublisher::publish`].
    pub frames: u64,
    /// JPEG samples sent (one per frame while a subscriber matched).
    pub jpeg: u64,
    /// Frames not encoded because no subscriber matched the JPEG topic.
    pub idle: u64,
    /// `camera_info` samples sent.
    pub camera_info: u64,
    /// H.264 access units sent.
    pub h264: u64,
    /// Of those, keyframes.
    pub h264_keyframes: u64,
    /// H.264 encoders opened (one per run of matching subscriptions).
    pub h264_opened: u64,
    /// Time spent encoding JPEG.
    pub encode: Duration,
}

/// One topic: its publisher, its key and its sample count.
struct Topic {
    publisher: Publisher<'static>,
    key: String,
    number: u64,
}

impl Topic {
    fn new(session: &Session, key: String, type_name: &str) -> Result<Topic, ZenohError> {
        let encoding = Encoding::APPLICATION_CDR.with_schema(type_name);
        let publisher = session
            .declare_publisher(key.clone())
            .encoding(encoding)
            .congestion_control(CongestionControl::Drop)
            .express(true)
            .wait()
            .map_err(|e| ZenohError::Key {
                key: key.clone(),
                reason: e.to_string(),
            })?;
        Ok(Topic {
            publisher,
            key,
            number: 0,
        })
    }

    /// Whether a subscriber matches (an error reads as "yes": better an
    /// encode for nobody than a frame lost for someone).
    fn matching(&self) -> bool {
        self.publisher
            .matching_status()
            .wait()
            .map_or(true, |s| s.matching())
    }

    fn put(&mut self, payload: Vec<u8>, instance: u32, sequence: u32) -> Result<(), PublishError> {
        let attachment = Attachment {
            instance,
            sequence,
            number: self.number,
        };
        self.number += 1;
        self.publisher
            .put(ZBytes::from(payload))
            .attachment(ZBytes::from(attachment.to_bytes().to_vec()))
            .wait()
            .map_err(|e| PublishError::Put {
                key: self.key.clone(),
                reason: e.to_string(),
            })
    }
}

/// The H.264 topic's encoder: opened when a subscriber comes (its first
/// access unit is a keyframe with the parameter sets), dropped when the last
/// goes (no encode CPU while nobody watches).
struct Video {
    topic: Topic,
    choice: EncoderChoice,
    config: EncoderConfig,
    encoder: Option<Box<dyn VideoEncoder>>,
    /// Why no encoder could be opened (then none is tried again).
    unavailable: Option<String>,
}

/// Publishes frames as ROS 2 messages on Zenoh (see [the module](super)).
pub struct ZenohPublisher {
    // Declared before the session: the publishers go first.
    jpeg: Topic,
    info: Topic,
    video: Option<Video>,
    session: Session,
    encoder: JpegEncoder,
    frame_id: String,
    instance: u32,
    stats: ZenohPublisherStats,
}

impl std::fmt::Debug for ZenohPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZenohPublisher")
            .field("jpeg", &self.jpeg.key)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// A capture time (`CLOCK_MONOTONIC`) on the system clock. The offset
/// between the two is read for each stamp (two vDSO reads), so a step of
/// the system clock (NTP, a board's RTC set late) shows in the next stamp,
/// not never. Before the epoch: the system clock now.
fn stamp(monotonic: Duration) -> Time {
    let now = Clock::Realtime.now();
    Time::from_duration(match now.checked_sub(Clock::Monotonic.now()) {
        Some(offset) => monotonic + offset,
        None => now,
    })
}

/// A number for this publisher's samples that a restarted one (same pid
/// after a reboot, same moment) does not repeat: from the OS's random seed
/// of the standard library's hasher.
fn random_instance() -> u32 {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish() as u32
}

impl ZenohPublisher {
    /// Opens a session and declares the topics under `config.prefix`.
    ///
    /// # Errors
    /// [`PublishError::Zenoh`]: the config, the session (an endpoint that
    /// cannot be bound), a key Zenoh refuses; [`PublishError::Jpeg`] for a
    /// quality outside 1–100.
    pub fn new(config: &ZenohPublisherConfig) -> Result<ZenohPublisher, PublishError> {
        let encoder = JpegEncoder::new(config.jpeg_quality)?;
        let session = open_session(&config.options, Role::Publisher)?;
        let prefix = config.prefix.trim_end_matches('/');
        let jpeg = Topic::new(&session, format!("{prefix}/jpeg"), CompressedImage::TYPE)?;
        let info = Topic::new(&session, format!("{prefix}/camera_info"), CameraInfo::TYPE)?;
        let video = match &config.h264 {
            Some(choice) => Some(Video {
                topic: Topic::new(&session, format!("{prefix}/h264"), CompressedVideo::TYPE)?,
                choice: choice.clone(),
                config: EncoderConfig {
                    gop: Some(config.gop.max(1)),
                    ..EncoderConfig::new(Codec::H264)
                },
                encoder: None,
                unavailable: None,
            }),
            None => None,
        };
        let instance = random_instance();
        Ok(ZenohPublisher {
            jpeg,
            info,
            video,
            session,
            encoder,
            frame_id: config.frame_id.clone(),
            instance,
            stats: ZenohPublisherStats::default(),
        })
    }

    /// The keys published, e.g. `rt/camera/jpeg, rt/camera/camera_info`.
    pub fn keys(&self) -> String {
        let mut keys = format!("{}, {}", self.jpeg.key, self.info.key);
        if let Some(v) = &self.video {
            keys += &format!(", {}", v.topic.key);
        }
        keys
    }

    /// The H.264 encoder in use (its description), or why there is none.
    pub fn h264_encoder(&self) -> Option<String> {
        let v = self.video.as_ref()?;
        match (&v.encoder, &v.unavailable) {
            (Some(e), _) => Some(e.describe()),
            (None, Some(why)) => Some(format!("unavailable: {why}")),
            (None, None) => Some("opened when a subscriber comes".into()),
        }
    }

    /// The session (its id, or to declare more on it).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The counters so far.
    pub fn stats(&self) -> ZenohPublisherStats {
        self.stats
    }

    /// Publishes `frame` on every topic a subscriber matches; encodes only
    /// for topics one matches. The frame stays the caller's: H.264 needs an
    /// encoder that keeps nothing ([`VideoEncoder::encode_borrowed`]), so
    /// [`EncoderChoice::Auto`] means the software encoder here (a hardware
    /// one takes frames by value: [`publish_owned`](Self::publish_owned)).
    ///
    /// Every topic is tried: one that fails does not starve the others.
    ///
    /// # Errors
    /// The first failure: [`PublishError::Jpeg`] when the frame does not
    /// encode, [`PublishError::Put`] when Zenoh refuses a sample,
    /// [`PublishError::Encode`] from the H.264 encoder.
    pub fn publish(&mut self, frame: &Frame, format: &StreamFormat) -> Result<(), PublishError> {
        let stills = self.publish_stills(frame, format);
        let video = match self.video_packets(frame, true, |e, f| e.encode_borrowed(f)) {
            Some(packets) => packets.and_then(|p| self.put_packets(p)),
            None => Ok(()),
        };
        stills.and(video)
    }

    /// As [`publish`](Self::publish), with the frame handed over: the
    /// H.264 encoder may keep it (a hardware encoder holds the capture's
    /// buffer until it is done, importing its dma-buf once).
    ///
    /// # Errors
    /// As [`publish`](Self::publish).
    pub fn publish_owned(
        &mut self,
        frame: Frame,
        format: &StreamFormat,
    ) -> Result<(), PublishError> {
        let stills = self.publish_stills(&frame, format);
        let mut frame = Some(frame);
        let packets = self.video_packets(&mut frame, false, |e, f| match f.take() {
            Some(f) => e.encode(f),
            None => Ok(Vec::new()),
        });
        let video = match packets {
            Some(packets) => packets.and_then(|p| self.put_packets(p)),
            None => Ok(()),
        };
        stills.and(video)
    }

    /// JPEG and camera_info.
    fn publish_stills(&mut self, frame: &Frame, format: &StreamFormat) -> Result<(), PublishError> {
        self.stats.frames += 1;
        let header = Header {
            stamp: stamp(frame.timestamp()),
            frame_id: &self.frame_id,
        };
        let sequence = frame.sequence();
        let mut info = Ok(());
        if self.info.matching() {
            let msg = CameraInfo::uncalibrated(header, format.width, format.height);
            info = self.info.put(msg.encode(), self.instance, sequence);
            self.stats.camera_info += u64::from(info.is_ok());
        }
        if !self.jpeg.matching() {
            self.stats.idle += 1;
            return info;
        }
        let started = Instant::now();
        let data = self.encoder.encode(frame)?;
        self.stats.encode += started.elapsed();
        let msg = CompressedImage {
            header,
            format: "jpeg",
            data,
        };
        let mut payload = Vec::with_capacity(data.len() + 64);
        msg.encode_into(&mut payload);
        self.jpeg.put(payload, self.instance, sequence)?;
        self.stats.jpeg += 1;
        info
    }

    /// The H.264 packets of `frame` (`None`: no H.264 topic, nobody
    /// subscribed, or no encoder), opening the encoder when a subscriber
    /// came and dropping it when the last went.
    fn video_packets<F>(
        &mut self,
        frame: F,
        borrowed: bool,
        encode: impl FnOnce(
            &mut dyn VideoEncoder,
            F,
        ) -> Result<Vec<Packet>, zerocam_encode::EncodeError>,
    ) -> Option<Result<Vec<Packet>, PublishError>>
    where
        F: FrameRef,
    {
        let video = self.video.as_mut()?;
        if !video.topic.matching() {
            if video.encoder.take().is_some() {
                log::info!("{}: no subscriber left, encoder closed", video.topic.key);
            }
            return None;
        }
        if video.unavailable.is_some() {
            return None;
        }
        if video.encoder.is_none() {
            // Borrowed frames go to an encoder that keeps none: `auto`
            // would pick a hardware one first, which must keep them.
            // (a device or element stays: it refuses borrowed frames with
            // a typed error, and is then not tried again).
            let borrowed_choice = borrowed
                .then(|| video.choice.for_borrowed_frames())
                .flatten();
            let choice = borrowed_choice.as_ref().unwrap_or(&video.choice);
            match open_encoder(choice, &video.config, frame.frame()?) {
                Ok((e, why)) => {
                    log::info!("{}: {why}", video.topic.key);
                    video.encoder = Some(e);
                    self.stats.h264_opened += 1;
                }
                Err(e) => {
                    log::warn!("{}: no H.264 encoder: {e}", video.topic.key);
                    video.unavailable = Some(e.to_string());
                    return None;
                }
            }
        }
        let encoder = video.encoder.as_deref_mut()?;
        Some(encode(encoder, frame).map_err(|e| {
            // The next frame starts a fresh encoder; one that cannot take
            // borrowed frames never will, so it is not opened again.
            video.encoder = None;
            if matches!(e, zerocam_encode::EncodeError::NeedsOwnedFrames { .. }) {
                log::warn!("{}: no H.264: {e}", video.topic.key);
                video.unavailable = Some(e.to_string());
            }
            PublishError::Encode(e)
        }))
    }

    /// Sends H.264 access units as `CompressedVideo`.
    fn put_packets(&mut self, packets: Vec<Packet>) -> Result<(), PublishError> {
        let Some(video) = self.video.as_mut() else {
            return Ok(());
        };
        for p in packets {
            let msg = CompressedVideo {
                timestamp: stamp(p.pts),
                frame_id: &self.frame_id,
                data: &p.data,
                format: "h264",
            };
            video.topic.put(msg.encode(), self.instance, p.sequence)?;
            self.stats.h264 += 1;
            self.stats.h264_keyframes += u64::from(p.keyframe);
        }
        Ok(())
    }
}

/// A frame by reference or by value (in an `Option` it can be taken from),
/// so one code path opens encoders for both.
trait FrameRef {
    fn frame(&self) -> Option<&Frame>;
}

impl FrameRef for &Frame {
    fn frame(&self) -> Option<&Frame> {
        Some(self)
    }
}

impl FrameRef for &mut Option<Frame> {
    fn frame(&self) -> Option<&Frame> {
        self.as_ref()
    }
}
