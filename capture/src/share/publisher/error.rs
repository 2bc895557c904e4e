//! What can go wrong for a publisher (its clients' faults are not errors of
//! the publisher: a client that breaks the protocol is disconnected and
//! counted, and the publisher goes on).

use std::io;
use std::path::PathBuf;

use crate::CaptureError;

/// Why a [`Publisher`](super::Publisher) could not start or go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The socket path could not be bound (in use by a live publisher, a
    /// missing folder, no permission).
    #[error("{socket}: cannot listen: {source}")]
    Bind {
        /// The socket path.
        socket: PathBuf,
        /// What the kernel said.
        source: io::Error,
    },
    /// The socket file's mode could not be set.
    #[error("{socket}: cannot set mode {mode:o}: {source}")]
    Mode {
        /// The socket path.
        socket: PathBuf,
        /// The mode asked for.
        mode: u32,
        /// What the kernel said.
        source: io::Error,
    },
    /// Accepting or polling clients failed.
    #[error("{socket}: {op} failed: {source}")]
    Io {
        /// The socket path.
        socket: PathBuf,
        /// What was being done.
        op: &'static str,
        /// What the kernel said.
        source: io::Error,
    },
    /// The source has no read-only fds for a buffer and
    /// [`writable_fds`](super::PublisherConfig::writable_fds) is off.
    #[error("{socket}: buffer {buffer} cannot be shared read-only: {source}")]
    NotReadOnly {
        /// The socket path.
        socket: PathBuf,
        /// The buffer index.
        buffer: usize,
        /// The source's error.
        source: Box<CaptureError>,
    },
    /// The source failed for good (its camera disconnected, the stream
    /// failed): every client was told (`Goodbye(SourceGone)`).
    #[error("{socket}: the source failed: {source}")]
    Source {
        /// The socket path.
        socket: PathBuf,
        /// The source's error.
        source: Box<CaptureError>,
    },
    /// The fd given as a listening socket is not one: not a socket, not
    /// `AF_UNIX`, not a stream, or not listening.
    #[error("fd {fd} is not a listening Unix stream socket: {why}")]
    NotAListener {
        /// The fd number.
        fd: i32,
        /// What it is instead.
        why: String,
    },
    /// The socket passed by systemd (`LISTEN_FDS`, `LISTEN_PID`) is not
    /// what this publisher takes: not exactly one socket, or bad values.
    #[error("systemd's socket: {why} (LISTEN_PID={pid:?}, LISTEN_FDS={fds:?})")]
    Activation {
        /// `LISTEN_PID` as given.
        pid: Option<String>,
        /// `LISTEN_FDS` as given.
        fds: Option<String>,
        /// What is wrong.
        why: &'static str,
    },
}
