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

// The decoders and the receiver, for the fuzz targets' entry points
// (`crate::fuzzing`, feature `fuzzing`) and their regression tests.
#[cfg(any(feature = "fuzzing", test))]
pub(crate) use {
    socket::{ReceiveError, Receiver},
    wire::{decode_header, ClientMessage, ServerMessage, HEADER_LEN, MAX_MESSAGE},
};
// The fuzzing tests' seeds are real messages.
#[cfg(test)]
pub(crate) use wire::{FrameMessage, PlaneSpan, WireFormat};

pub use publisher::{
    take_systemd_socket, ClientStats, PublishError, Publisher, PublisherConfig, PublisherStats,
};
pub use subscriber::{BufferProblem, Disconnect, SubscribeError, Subscriber, SubscriberConfig};
pub use wire::{GoodbyeReason, WireError};
