//! A camera on Zenoh: [`ZenohPublisher`] publishes each frame it is given
//! as ROS 2 messages under a key prefix (`rt/camera` by default: the DDS name
//! ROS 2 gives the topic `/camera`, as `zenoh-bridge-dds` keys it;
//! docs/network.md says how each bridge maps it):
//!
//! | key | message | when |
//! |---|---|---|
//! | `PREFIX/jpeg` | `sensor_msgs/msg/CompressedImage`, format `jpeg` | while a subscriber matches: the frame encoded once, whatever the number of subscribers |
//! | `PREFIX/h264` | `foxglove_msgs/msg/CompressedVideo`, format `h264` (Annex B) | while a subscriber matches: an encoder is opened when the first comes (the stream starts at a keyframe with its parameter sets) and closed when the last goes; a keyframe every `gop` frames for later subscribers |
//! | `PREFIX/camera_info` | `sensor_msgs/msg/CameraInfo` | while a subscriber matches: the size only (zerocam has no calibration yet: `K` is all zero, ROS's mark of an uncalibrated camera) |
//!
//! Every message is stamped with the frame's capture time on the system
//! clock (ROS's clock) and carries zerocam's 16-byte
//! [`Attachment`](zerocam_capture::zenoh_source::Attachment) (publisher
//! instance, capture sequence, sample number). Samples are sent with
//! congestion control `Drop`: a stalled subscriber loses frames, counted on
//! its side, rather than queueing them (Zenoh may still hold a `put` up to
//! its drop wait, 1 ms, or 50 ms for a fragmented sample: docs/network.md).

mod publisher;

pub use publisher::{ZenohPublisher, ZenohPublisherConfig, ZenohPublisherStats};
pub use zerocam_capture::zenoh_source::{ZenohError, ZenohOptions};

/// What publishing can fail with.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The session or a topic.
    #[error(transparent)]
    Zenoh(#[from] ZenohError),
    /// The JPEG encoder.
    #[error(transparent)]
    Jpeg(#[from] zerocam_encode::jpeg::JpegError),
    /// The H.264 encoder (it is closed; the next frame opens a new one).
    #[error(transparent)]
    Encode(zerocam_encode::EncodeError),
    /// A sample could not be sent.
    #[error("cannot publish on Zenoh key `{key}`: {reason}")]
    Put {
        /// The key.
        key: String,
        /// Zenoh's reason.
        reason: String,
    },
}
