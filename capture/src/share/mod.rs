//! Frame sharing between processes over a Unix stream socket: a publisher
//! lends the frames of any [`FrameSource`](crate::FrameSource) to subscriber
//! processes, sending each buffer's read-only fds once (`SCM_RIGHTS`) and then
//! only its index; subscribers import each buffer once through their
//! [`ImportCache`](zerocam_cache::ImportCache). docs/sharing.md describes the
//! protocol.

mod publisher;
#[allow(unsafe_code)] // the fds SCM_RIGHTS installs are owned at the edge
mod socket;
mod subscriber;
mod wire;

pub use publisher::{
    take_systemd_socket, ClientStats, PublishError, Publisher, PublisherConfig, PublisherStats,
};
pub use subscriber::{BufferProblem, Disconnect, SubscribeError, Subscriber, SubscriberConfig};
pub use wire::{GoodbyeReason, WireError};
