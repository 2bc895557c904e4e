//! # zerocam-net
//!
//! Frames to other machines, over transports that already exist, while
//! processes on the board keep zerocam's local zero-copy sharing.
//!
//! - `zenoh` (feature `zenoh`): a camera's topics on Zenoh as ROS 2
//!   messages in CDR: `PREFIX/jpeg` (`sensor_msgs/msg/CompressedImage`) and
//!   `PREFIX/camera_info` (`sensor_msgs/msg/CameraInfo`), the JPEG encoded
//!   only while someone subscribes. The receiving side is zerocam-capture's
//!   `zenoh:KEY` source; the messages are
//!   [`zerocam_capture::ros`]'s.

#![deny(unsafe_code)]

#[cfg(feature = "zenoh")]
pub mod zenoh;
