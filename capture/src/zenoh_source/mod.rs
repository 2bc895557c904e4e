//! Frames from another machine over Zenoh: `zenoh:KEY` wherever a source is
//! accepted. `ZenohSource` (feature `zenoh`) subscribes to a
//! `sensor_msgs/msg/CompressedImage` topic (what `zerocam serve --zenoh`
//! publishes, or any ROS 2 camera through `zenoh-bridge-ros2dds` or
//! `rmw_zenoh`'s keys), decodes each JPEG into an RGB frame of its own
//! memfd buffers, and counts what was lost, late or malformed.
//!
//! [`ZenohOptions`] is how a session is configured, here and in the
//! publisher (zerocam-net): zerocam's own defaults keep everything on this
//! machine (no multicast scouting, no gossip, loopback endpoints only) until
//! the user's endpoints or Zenoh config file say otherwise.

mod attachment;
mod options;

pub use attachment::Attachment;
pub use options::{Role, ZenohOptions, ZenohSpec, ZenohSpecError, DEFAULT_ENDPOINT, MAX_MESSAGE};

#[cfg(feature = "zenoh")]
mod error;
#[cfg(feature = "zenoh")]
mod picture;
#[cfg(feature = "zenoh")]
mod session;
#[cfg(feature = "zenoh")]
mod source;

#[cfg(feature = "zenoh")]
pub use error::ZenohError;
#[cfg(feature = "zenoh")]
pub use session::open_session;
#[cfg(feature = "zenoh")]
pub use source::{ZenohSource, ZenohSourceConfig, MAX_PIXELS};
/// The Zenoh crate the session and source speak (feature `zenoh`).
#[cfg(feature = "zenoh")]
pub use zenoh;
