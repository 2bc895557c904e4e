//! [`ZenohPublisher`]: a capture's frames as ROS 2 topics on Zenoh.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zenoh::bytes::{Encoding, ZBytes};
use zenoh::pubsub::Publisher;
use zenoh::qos::CongestionControl;
use zenoh::{Session, Wait};
use zerocam_capture::frame::Clock;
use zerocam_capture::ros::{CameraInfo, CompressedImage, CompressedVideo, Header, Message, Time};
use zerocam_capture::zenoh_source::{open_session, Attachment, Role, ZenohError, ZenohOptions};
use zerocam_capture::{Frame, FrameSource, StreamFormat};
use zerocam_encode::encoder::EncoderConfig;
use zerocam_encode::jpeg::JpegEncoder;
use zerocam_encode::{Codec, EncoderChoice, Packet};

use super::PublishError;
use crate::outputs::{Encoded, Given, Output, OutputError, SharedEncoder, Still, Takes, Want};

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
    /// H.264 encoders opened by [`ZenohPublisher::publish`] and
    /// [`ZenohPublisher::publish_owned`] (one per run of matching
    /// subscriptions). As an [`Output`] of
    /// [`Outputs`](crate::outputs::Outputs) the publisher opens none: the
    /// stream's shared encoder counts its own.
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

/// The H.264 topic, and the encoder of [`ZenohPublisher::publish`] and
/// [`ZenohPublisher::publish_owned`]: opened when a subscriber comes (its
/// first access unit is a keyframe with the parameter sets), closed when
/// the last goes (no encode CPU while nobody watches).
struct Video {
    topic: Topic,
    encoder: SharedEncoder,
    /// Whether a subscriber matched at the last frame.
    matched: bool,
    /// After a run with no subscriber: access units wait for a keyframe.
    wait_keyframe: bool,
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
    /// The last frame's sequence and its stamp (wall time), computed once
    /// a frame: its camera_info and its JPEG carry the same one, as ROS's
    /// exact-time synchronisers need.
    stamped: Option<(u32, Time)>,
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
            Some(choice) => {
                let topic = Topic::new(&session, format!("{prefix}/h264"), CompressedVideo::TYPE)?;
                let config = EncoderConfig {
                    gop: Some(config.gop.max(1)),
                    ..EncoderConfig::new(Codec::H264)
                };
                Some(Video {
                    encoder: SharedEncoder::new(&topic.key, choice.clone(), config),
                    topic,
                    matched: false,
                    wait_keyframe: true,
                })
            }
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
            stamped: None,
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

    /// The H.264 encoder of [`publish`](Self::publish) in use (its
    /// description), or why there is none; `None`: no H.264 topic.
    pub fn h264_encoder(&self) -> Option<String> {
        Some(self.video.as_ref()?.encoder.describe())
    }

    /// The session (its id, or to declare more on it).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The counters so far.
    pub fn stats(&self) -> ZenohPublisherStats {
        ZenohPublisherStats {
            h264_opened: self.video.as_ref().map_or(0, |v| v.encoder.stats().opened),
            ..self.stats
        }
    }

    /// Publishes `frame` on every topic a subscriber matches; encodes only
    /// for topics one matches. The frame stays the caller's: H.264 needs an
    /// encoder that keeps nothing ([`VideoEncoder::encode_borrowed`](zerocam_encode::VideoEncoder::encode_borrowed)), so
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
        stills.and(self.publish_video(Given::Borrowed(frame)))
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
        stills.and(self.publish_video(Given::Owned(frame)))
    }

    /// `frame` through the publisher's own H.264 encoder, what
    /// [`Outputs`](crate::outputs::Outputs) does for its outputs with the
    /// stream's.
    fn publish_video(&mut self, frame: Given<'_>) -> Result<(), PublishError> {
        let want = self.video_want();
        let Some(video) = self.video.as_mut() else {
            return Ok(());
        };
        match want {
            Want::Off => {
                video.encoder.close();
                return Ok(());
            }
            Want::Skip => return Ok(()),
            Want::Keyframe => video.encoder.request_keyframe(),
            Want::Next => {}
        }
        match video.encoder.encode(frame) {
            Ok(Some(encoded)) => self.put_packets(&encoded.packets),
            Ok(None) => Ok(()),
            Err(e) => Err(PublishError::Encode(e)),
        }
    }

    /// Whether the H.264 topic wants this frame: a keyframe when its first
    /// subscriber came.
    fn video_want(&mut self) -> Want {
        let Some(video) = self.video.as_mut() else {
            return Want::Off;
        };
        let matching = video.topic.matching();
        let came = matching && !video.matched;
        video.matched = matching;
        match (matching, came) {
            (false, _) => {
                video.wait_keyframe = true;
                Want::Off
            }
            (true, true) => Want::Keyframe,
            (true, false) => Want::Next,
        }
    }

    /// JPEG (its own encoder's) and camera_info.
    fn publish_stills(&mut self, frame: &Frame, format: &StreamFormat) -> Result<(), PublishError> {
        let info = self.publish_info(frame, format);
        if !self.jpeg_wanted() {
            return info;
        }
        let started = Instant::now();
        let data = self.encoder.encode(frame)?;
        self.stats.encode += started.elapsed();
        let sequence = frame.sequence();
        let time = stamp_of(&mut self.stamped, sequence, frame.timestamp());
        let jpeg = put_jpeg(
            &mut self.jpeg,
            &self.frame_id,
            self.instance,
            data,
            time,
            sequence,
        );
        self.stats.jpeg += u64::from(jpeg.is_ok());
        jpeg.and(info)
    }

    /// Counts `frame`, and sends its camera_info where a subscriber wants it.
    fn publish_info(&mut self, frame: &Frame, format: &StreamFormat) -> Result<(), PublishError> {
        self.stats.frames += 1;
        let time = stamp_of(&mut self.stamped, frame.sequence(), frame.timestamp());
        if !self.info.matching() {
            return Ok(());
        }
        let header = Header {
            stamp: time,
            frame_id: &self.frame_id,
        };
        let msg = CameraInfo::uncalibrated(header, format.width, format.height);
        let info = self.info.put(msg.encode(), self.instance, frame.sequence());
        self.stats.camera_info += u64::from(info.is_ok());
        info
    }

    /// Whether a subscriber wants the JPEG topic (a frame not encoded for it
    /// counted when none does).
    fn jpeg_wanted(&mut self) -> bool {
        let matching = self.jpeg.matching();
        self.stats.idle += u64::from(!matching);
        matching
    }

    /// Sends H.264 access units as `CompressedVideo`, from a keyframe on
    /// after a run with no subscriber.
    fn put_packets(&mut self, packets: &[Arc<Packet>]) -> Result<(), PublishError> {
        let Some(video) = self.video.as_mut() else {
            return Ok(());
        };
        for p in packets {
            if video.wait_keyframe && !p.keyframe {
                continue;
            }
            video.wait_keyframe = false;
            let msg = CompressedVideo {
                timestamp: stamp_of(&mut self.stamped, p.sequence, p.pts),
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

/// Frame `sequence`'s stamp: the one `stamped` holds for it, else
/// `timestamp` as wall time, then held for the frame's other messages.
fn stamp_of(stamped: &mut Option<(u32, Time)>, sequence: u32, timestamp: Duration) -> Time {
    match *stamped {
        Some((s, time)) if s == sequence => time,
        _ => {
            let time = stamp(timestamp);
            *stamped = Some((sequence, time));
            time
        }
    }
}

/// Sends `data` (a JPEG of frame `sequence`, stamped `time`) on `topic` as
/// a `CompressedImage`.
fn put_jpeg(
    topic: &mut Topic,
    frame_id: &str,
    instance: u32,
    data: &[u8],
    time: Time,
    sequence: u32,
) -> Result<(), PublishError> {
    let msg = CompressedImage {
        header: Header {
            stamp: time,
            frame_id,
        },
        format: "jpeg",
        data,
    };
    let mut payload = Vec::with_capacity(data.len() + 64);
    msg.encode_into(&mut payload);
    topic.put(payload, instance, sequence)
}

/// The publisher as one output of a stream: it takes frames (camera_info),
/// the stream's JPEG while a subscriber matches `PREFIX/jpeg` and, with an
/// H.264 topic, H.264 while a subscriber matches it.
impl Output for ZenohPublisher {
    fn takes(&self) -> Takes {
        Takes {
            frames: true,
            h264: self.video.is_some(),
            jpeg: true,
        }
    }

    fn describe(&self) -> String {
        format!("publishing on Zenoh: {}", self.keys())
    }

    /// Its counters (the JPEG's encode time is the stream's encoder's
    /// line).
    fn status(&self) -> String {
        let s = self.stats();
        format!(
            "zenoh: frames {}, jpeg sent {}, not encoded (no subscriber) {}, \
             camera_info sent {}, h264 sent {} ({} keyframes)",
            s.frames, s.jpeg, s.idle, s.camera_info, s.h264, s.h264_keyframes
        )
    }

    fn frame(&mut self, frame: &Frame, source: &dyn FrameSource) -> Result<(), OutputError> {
        self.publish_info(frame, source.stream_format())
            .map_err(|e| OutputError::Send {
                output: "zenoh",
                reason: e.to_string(),
            })
    }

    fn wants_jpeg(&mut self) -> bool {
        self.jpeg_wanted()
    }

    fn jpeg(&mut self, still: &Still<'_>) -> Result<(), OutputError> {
        let time = stamp_of(&mut self.stamped, still.sequence, still.timestamp);
        put_jpeg(
            &mut self.jpeg,
            &self.frame_id,
            self.instance,
            still.data,
            time,
            still.sequence,
        )
        .map(|()| self.stats.jpeg += 1)
        .map_err(|e| OutputError::Send {
            output: "zenoh",
            reason: e.to_string(),
        })
    }

    fn wants_h264(&mut self) -> Want {
        self.video_want()
    }

    fn h264(&mut self, encoded: &Encoded) -> Result<(), OutputError> {
        self.put_packets(&encoded.packets)
            .map_err(|e| OutputError::Send {
                output: "zenoh",
                reason: e.to_string(),
            })
    }
}
