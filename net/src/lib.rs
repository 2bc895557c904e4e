//! # zerocam-net
//!
//! Frames off the process, over transports that already exist, while
//! processes on the board keep zerocam's local zero-copy sharing.
//!
//! - [`outputs`]: one shape for every way out ([`outputs::Output`]), and
//!   the list of one stream's outputs with its one H.264 encoder
//!   ([`outputs::Outputs`]): each frame encoded once, whatever the number
//!   of outputs.
//! - [`view`]: a live view in the browser: MJPEG over HTTP, a page that
//!   draws a model's boxes over the picture by frame sequence, the
//!   stream's figures, a snapshot.
//! - `zenoh` (feature `zenoh`): a camera's topics on Zenoh as ROS 2
//!   messages in CDR: `PREFIX/jpeg` (`sensor_msgs/msg/CompressedImage`) and
//!   `PREFIX/camera_info` (`sensor_msgs/msg/CameraInfo`), the JPEG encoded
//!   only while someone subscribes. The receiving side is zerocam-capture's
//!   `zenoh:KEY` source; the messages are
//!   [`zerocam_capture::ros`]'s.
//! - `rtsp` (feature `gstreamer`): H.264 from zerocam's encoders over RTSP
//!   (GStreamer's RTSP server, one media all clients share), encoded only
//!   while a client plays, each new client starting at a keyframe.

#![deny(unsafe_code)]

pub mod outputs;
pub mod view;

#[cfg(feature = "gstreamer")]
pub mod rtsp;

#[cfg(feature = "zenoh")]
pub mod zenoh;
