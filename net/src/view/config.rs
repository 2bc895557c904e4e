//! [`ViewConfig`]: where the view listens and what it allows.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

/// The view's default port (`zerocam view` without `--http`).
pub const DEFAULT_PORT: u16 = 8080;

/// Where and how the view listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewConfig {
    /// The address to bind (default 127.0.0.1:8080; port 0 picks one).
    pub addr: SocketAddr,
    /// A token every request must carry (`?token=` or `Authorization:
    /// Bearer`); `None`: none asked.
    pub token: Option<String>,
    /// Connections open at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// MJPEG viewers at once; more are answered 503.
    pub max_viewers: usize,
    /// How long a request has to arrive whole.
    pub request_timeout: Duration,
    /// How long one write to a viewer may block before the viewer is
    /// dropped as stalled.
    pub write_timeout: Duration,
    /// How long `GET /snapshot.jpg` waits for the next frame.
    pub snapshot_timeout: Duration,
}

impl ViewConfig {
    /// 127.0.0.1:8080, no token, the bounds in [the module](super)'s table.
    pub fn new() -> ViewConfig {
        ViewConfig {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT)),
            token: None,
            max_connections: 64,
            max_viewers: 32,
            request_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(2),
            snapshot_timeout: Duration::from_secs(3),
        }
    }
}

impl Default for ViewConfig {
    fn default() -> Self {
        Self::new()
    }
}
