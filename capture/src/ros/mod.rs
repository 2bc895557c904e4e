//! ROS 2 messages in CDR, the payloads of zerocam's Zenoh topics: what the
//! publisher (zerocam-net) writes and the `zenoh:` source reads, and what
//! ROS 2 tools (through `zenoh-bridge-ros2dds` or `rmw_zenoh`), Foxglove and
//! `rosbags` read without zerocam.
//!
//! ```
//! use zerocam_capture::ros::{CompressedImage, Header, Message, Time};
//!
//! let jpeg = [0xff, 0xd8, 0xff, 0xd9];
//! let msg = CompressedImage {
//!     header: Header { stamp: Time { sec: 1, nanosec: 5 }, frame_id: "camera" },
//!     format: "jpeg",
//!     data: &jpeg,
//! };
//! let mut buf = Vec::new();
//! msg.encode_into(&mut buf); // reused frame after frame
//! assert_eq!(&buf[..4], &[0, 1, 0, 0]); // little-endian plain CDR
//! assert_eq!(CompressedImage::decode(&buf)?, msg); // `data` borrows from `buf`
//! # Ok::<(), zerocam_capture::ros::CdrError>(())
//! ```

pub mod cdr;
mod msg;
#[cfg(test)]
mod tests;

pub use cdr::CdrError;
pub use msg::{
    CameraInfo, CompressedImage, CompressedVideo, Header, Image, Message, RegionOfInterest, Time,
};
