//! [`ZenohOptions`]: a Zenoh session as zerocam opens one, secure by default.

use std::path::PathBuf;

/// The endpoint zerocam's publisher listens on, and its subscribers
/// connect to, when the user names none: loopback only.
pub const DEFAULT_ENDPOINT: &str = "tcp/127.0.0.1:7447";

/// The largest sample zerocam's own configuration lets Zenoh reassemble
/// (Zenoh's default is 1 GiB): a 4K JPEG is a few MiB, a raw 4K RGB frame
/// 24 MiB.
pub const MAX_MESSAGE: usize = 32 << 20;

/// Which side of the topic a session is for: what it listens on and
/// connects to by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Listens on [`DEFAULT_ENDPOINT`], connects nowhere.
    Publisher,
    /// Listens nowhere, connects to [`DEFAULT_ENDPOINT`].
    Subscriber,
}

/// How to open a Zenoh session.
///
/// Without [`config_file`](Self::config_file), zerocam's defaults: peer
/// mode, multicast scouting and gossip off, and per [`Role`] one loopback
/// endpoint: nothing leaves the machine, nothing listens beyond loopback,
/// nothing is discovered. With a config file, the file rules (TLS, access
/// control, routers, scouting): zerocam changes nothing in it. In both
/// cases `connect` and `listen`, when not empty, replace the endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZenohOptions {
    /// A Zenoh configuration file (JSON5), passed through.
    pub config_file: Option<PathBuf>,
    /// Endpoints to connect to (`tcp/HOST:PORT`, `tls/HOST:PORT`…).
    pub connect: Vec<String>,
    /// Endpoints to listen on.
    pub listen: Vec<String>,
}
