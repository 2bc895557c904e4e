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
    /// The most clients at once (default 32); more are told `Full`. Only
    /// clients that said `Hello` and were welcomed count: a connection that
    /// has not said `Hello` yet is pending, with its own limit
    /// ([`max_pending`](Self::max_pending)).
    pub max_clients: usize,
    /// The most clients of one uid at once (`None`, the default: half of
    /// `max_clients`, at least 1), so one user's processes cannot take every
    /// place; more are told `Full`.
    pub max_clients_per_uid: Option<usize>,
    /// The most connections waiting for their `Hello` (default 32). A new
    /// connection past it closes a pending one: of the uid with the most
    /// pending connections, the oldest whose whole `Hello` has not come
    /// (`Goodbye(Full)`, `pending_dropped` counted), so a flood of idle
    /// connections pushes out its own, not a client that spoke at once.
    pub max_pending: usize,
    /// How long a connection has to complete its `Hello` (default 1 s), and
    /// how long any message may stay half-sent: past it the connection is
    /// closed (`Goodbye(ProtocolViolation)`; `handshake_timeouts` or
    /// `stalled` counted).
    pub hello_timeout: Duration,
    /// Send a source's read-write fds when it cannot give read-only ones
    /// (libcamera's buffers): clients could then write into frames others
    /// read. Off by default: such a source is refused.
    pub writable_fds: bool,
}

impl PublisherConfig {
    /// The cap on one uid's clients: [`max_clients_per_uid`](Self::max_clients_per_uid),
    /// or half of [`max_clients`](Self::max_clients) (at least 1).
    pub fn uid_cap(&self) -> usize {
        self.max_clients_per_uid
            .unwrap_or((self.max_clients / 2).max(1))
    }

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
            max_clients_per_uid: None,
            max_pending: 32,
            hello_timeout: Duration::from_secs(1),
            writable_fds: false,
        }
    }
}

/// What a publisher has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublisherStats {
    /// Clients connected and welcomed now (pending connections are in
    /// [`pending`](Self::pending)).
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
    /// Connections refused (credentials not allowed, or too many clients in
    /// all or of one uid).
    pub rejected: u64,
    /// Clients disconnected for breaking the protocol.
    pub violations: u64,
    /// Connections waiting for their `Hello` now.
    pub pending: usize,
    /// Connections closed because they did not complete `Hello` within
    /// [`hello_timeout`](PublisherConfig::hello_timeout).
    pub handshake_timeouts: u64,
    /// Clients closed because a message of theirs stayed half-sent past
    /// [`hello_timeout`](PublisherConfig::hello_timeout).
    pub stalled: u64,
    /// Pending connections closed to make room for newer ones
    /// ([`max_pending`](PublisherConfig::max_pending)).
    pub pending_dropped: u64,
    /// Each client that was welcomed and is connected now.
    pub per_client: Vec<ClientStats>,
}
