//! [`ViewError`]: why the view could not start.

use std::net::SocketAddr;

/// Why a [`ViewServer`](super::ViewServer) could not start, or a post failed.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The address could not be bound (in use, not this machine's, or a
    /// privileged port).
    #[error("the view cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The token is empty or holds characters a URL or header would mangle.
    #[error(
        "the view's token must be 1 to 128 characters of [A-Za-z0-9._~-], got {len} characters"
    )]
    BadToken {
        /// Its length.
        len: usize,
    },
    /// A thread could not be started.
    #[error("the view cannot start its thread: {0}")]
    Thread(std::io::Error),
    /// Posting detections failed (connecting, sending or the reply).
    #[error("posting detections to {addr}: {reason}")]
    Post {
        /// Where to.
        addr: String,
        /// What went wrong.
        reason: String,
    },
}
