//! What a [`Publisher`](super::Publisher) is told ([`PublisherConfig`]) and
//! what it counts ([`PublisherStats`]).

use std::path::PathBuf;
use std::time::Duration;

use super::ClientStats;

/// How a [`Publisher`](super::Publisher) listens and lends.
#[derive(Debug, Clone)]
pub struct PublisherConfig {
    /// The socket path (a stale socket file there is replaced; a live one is
    /// an error).
    pub socket: PathBuf,
    /// The socket file's mode (default `0o660`: owner and group).
    pub mode: u32,
    /// User ids allowed besides the publisher's own (and root's).
    pub allow_uids: Vec<u32>,
    /// Group ids whose members are allowed.
    pub allow_gids: Vec<u32>,
    /// How long a client may hold a frame (default 2 s); then the frame is
    /// taken back and its late release ignored.
    pub lease: Duration,
    /// The most frames one client holds at once (default 2; a client may ask
    /// for fewer).
    pub max_leases: u16,
    /// The most clients at once (default 32); more are told `Full`.
    pub max_clients: usize,
    /// Send a source's read-write fds when it cannot give read-only ones
    /// (libcamera's buffers): clients could then write into frames others
    /// read. Off by default: such a source is refused.
    pub writable_fds: bool,
}

impl PublisherConfig {
    /// The defaults, listening at `socket`.
    pub fn new(socket: impl Into<PathBuf>) -> PublisherConfig {
        PublisherConfig {
            socket: socket.into(),
            mode: 0o660,
            allow_uids: Vec::new(),
            allow_gids: Vec::new(),
            lease: Duration::from_secs(2),
            max_leases: 2,
            max_clients: 32,
            writable_fds: false,
        }
    }
}

/// What a publisher has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublisherStats {
    /// Clients connected now.
    pub clients: usize,
    /// Connections accepted and allowed, ever.
    pub connections: u64,
    /// Frames taken from the source.
    pub frames: u64,
    /// Leases given (a frame lent to two clients counts twice).
    pub lent: u64,
    /// Frames a client was skipped for (at its cap, or its socket full).
    pub skips: u64,
    /// Releases that came after the frame's deadline (ignored).
    pub late_releases: u64,
    /// Frames taken back because a lease outlived its deadline.
    pub expired: u64,
    /// Frames taken back early because the source was short of buffers.
    pub reclaimed: u64,
    /// Connections refused (credentials not allowed, or too many clients).
    pub rejected: u64,
    /// Clients disconnected for breaking the protocol.
    pub violations: u64,
    /// Each connected client.
    pub per_client: Vec<ClientStats>,
}
