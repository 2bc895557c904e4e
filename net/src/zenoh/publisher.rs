//! [`ZenohPublisher`]: a capture's frames as ROS 2 topics on Zenoh.

use std::time::{Duration, Instant, SystemTime};

use zenoh::bytes::{Encoding, ZBytes};
use zenoh::pubsub::Publisher;
use zenoh::qos::CongestionControl;
use zenoh::{Session, Wait};
use zerocam_capture::ros::{CameraInfo, CompressedImage, Header, Message, Time};
use zerocam_capture::zenoh_source::{open_session, Attachment, Role, ZenohError, ZenohOptions};
use zerocam_capture::{Frame, StreamFormat};
use zerocam_encode::jpeg::JpegEncoder;

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

/// Publishes frames as ROS 2 messages on Zenoh (see [the module](super)).
pub struct ZenohPublisher {
    // Declared before the session: the publishers go first.
    jpeg: Topic,
    info: Topic,
    session: Session,
    encoder: JpegEncoder,
    frame_id: String,
    instance: u32,
    stats: ZenohPublisherStats,
    /// The offset from `CLOCK_MONOTONIC` (frame timestamps) to the system
    /// clock, read once.
    to_system: Option<Duration>,
}

impl std::fmt::Debug for ZenohPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZenohPublisher")
            .field("jpeg", &self.jpeg.key)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// `CLOCK_REALTIME - CLOCK_MONOTONIC`, read now.
fn monotonic_to_system() -> Option<Duration> {
    let mono = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    let mono = Duration::new(
        u64::try_from(mono.tv_sec()).ok()?,
        u32::try_from(mono.tv_nsec()).ok()?,
    );
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?;
    now.checked_sub(mono)
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
        let instance = std::process::id()
            ^ SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
        Ok(ZenohPublisher {
            jpeg,
            info,
            session,
            encoder,
            frame_id: config.frame_id.clone(),
            instance,
            stats: ZenohPublisherStats::default(),
            to_system: monotonic_to_system(),
        })
    }

    /// The keys published, e.g. `rt/camera/jpeg, rt/camera/camera_info`.
    pub fn keys(&self) -> String {
        format!("{}, {}", self.jpeg.key, self.info.key)
    }

    /// The session (its id, or to declare more on it).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The counters so far.
    pub fn stats(&self) -> ZenohPublisherStats {
        self.stats
    }

    /// The capture time of `frame` on the system clock.
    fn stamp(&self, frame: &Frame) -> Time {
        let t = match self.to_system {
            Some(offset) => frame.timestamp() + offset,
            None => SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default(),
        };
        Time::from_duration(t)
    }

    /// Publishes `frame` on every topic a subscriber matches; encodes the
    /// JPEG only when one matches its topic.
    ///
    /// # Errors
    /// [`PublishError::Jpeg`] when the frame does not encode,
    /// [`PublishError::Put`] when Zenoh refuses a sample.
    pub fn publish(&mut self, frame: &Frame, format: &StreamFormat) -> Result<(), PublishError> {
        self.stats.frames += 1;
        let header = Header {
            stamp: self.stamp(frame),
            frame_id: &self.frame_id,
        };
        let sequence = frame.sequence();
        if self.info.matching() {
            let info = CameraInfo::uncalibrated(header, format.width, format.height);
            self.info.put(info.encode(), self.instance, sequence)?;
            self.stats.camera_info += 1;
        }
        if !self.jpeg.matching() {
            self.stats.idle += 1;
            return Ok(());
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
        Ok(())
    }
}
