//! What can go wrong subscribing to a publisher: [`SubscribeError`], with
//! [`Disconnect`] (why a connection ended) and [`BufferProblem`] (what was
//! wrong with a buffer the publisher sent).

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::share::{GoodbyeReason, WireError};

/// Why a subscriber's connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disconnect {
    /// The publisher said goodbye, and why.
    Goodbye(GoodbyeReason),
    /// The publisher closed the connection (it died, or was killed).
    Closed,
    /// This subscriber dropped the connection after an earlier error; call
    /// [`Subscriber::reconnect`](super::Subscriber::reconnect).
    Dropped,
}

impl fmt::Display for Disconnect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Disconnect::Goodbye(GoodbyeReason::Stopping) => f.write_str("the publisher stopped"),
            Disconnect::Goodbye(GoodbyeReason::SourceGone) => {
                f.write_str("the publisher's camera is gone")
            }
            Disconnect::Goodbye(GoodbyeReason::NotAllowed) => {
                f.write_str("the publisher does not allow this uid/gid")
            }
            Disconnect::Goodbye(GoodbyeReason::ProtocolViolation) => {
                f.write_str("the publisher says this client broke the protocol")
            }
            Disconnect::Goodbye(GoodbyeReason::Full) => {
                f.write_str("the publisher has all the clients it serves")
            }
            Disconnect::Closed => f.write_str("the publisher closed the connection"),
            Disconnect::Dropped => {
                f.write_str("the connection was dropped after an earlier error; reconnect")
            }
        }
    }
}

/// What was wrong with a buffer a publisher sent, or a frame in it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BufferProblem {
    /// The buffer index is not below the `Welcome`'s buffer count.
    #[error("index out of range (the publisher has {buffers} buffers)")]
    IndexOutOfRange {
        /// The buffer count the publisher announced.
        buffers: u16,
    },
    /// Another number of fds came with the message than it should carry.
    #[error("{found} fds came with the frame, {expected} expected")]
    FdCount {
        /// The fds the message should carry (one per memory plane, or none).
        expected: usize,
        /// The fds that came.
        found: usize,
    },
    /// A frame in a buffer whose fds never came.
    #[error("a frame in a buffer whose fds never came")]
    NoFds,
    /// The buffer's fds came a second time on one connection.
    #[error("its fds came a second time")]
    FdsTwice,
    /// A plane length of zero, or beyond what this machine can map.
    #[error("plane length {length} is not a mappable size")]
    BadLength {
        /// The length the message gave.
        length: u64,
    },
    /// A frame gives a plane another length than its buffer's fds came with.
    #[error("plane length {length} differs from the {was} bytes the buffer came with")]
    LengthChanged {
        /// The length this frame gives.
        length: u64,
        /// The length when the fds came.
        was: usize,
    },
    /// The format's plane does not fit its file from the frame's data offset.
    #[error("the plane's {size} bytes at offset {offset} do not fit its {length}-byte file")]
    PlaneOutside {
        /// The data offset.
        offset: u32,
        /// The format's plane size (`sizeimage`).
        size: u32,
        /// The plane's file length.
        length: usize,
    },
    /// The fd could not be inspected (`fstat`).
    #[error("fstat of the fd failed: {0}")]
    Fstat(nix::errno::Errno),
    /// A buffer's planes are longer in all than a frame may be
    /// ([`SubscriberConfig::max_frame_bytes`](super::SubscriberConfig::max_frame_bytes)).
    #[error("its planes are {bytes} bytes in all, more than a frame's {max}")]
    FrameTooLarge {
        /// The sum of the buffer's plane lengths, as the message gives them.
        bytes: u64,
        /// The cap.
        max: usize,
    },
    /// Mapping the buffer would take the connection's mapped bytes past
    /// [`SubscriberConfig::max_mapped_bytes`](super::SubscriberConfig::max_mapped_bytes).
    #[error(
        "mapping its {bytes} bytes would make {total} mapped on the connection, more than {max}"
    )]
    MappedTooMuch {
        /// The buffer's bytes.
        bytes: u64,
        /// What the connection would map in all with it.
        total: u64,
        /// The cap.
        max: usize,
    },
    /// The fd is not memory the frame fits in: `Tensor::from_fd`'s checks
    /// (a pipe or socket, a file that can shrink, a file smaller than the
    /// length), or the frame's layout does not fit its planes.
    #[error(transparent)]
    Tensor(#[from] zerocam_tensor::Error),
}

/// Why subscribing to a publisher failed. Every variant names the socket.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The socket could not be connected to (no publisher, no permission).
    #[error("{socket}: cannot connect: {source}")]
    Connect {
        /// The socket path.
        socket: PathBuf,
        /// `connect`'s error.
        source: io::Error,
    },
    /// The connection ended; [`Subscriber::reconnect`](super::Subscriber::reconnect)
    /// makes a new one.
    #[error("{socket}: disconnected: {reason}")]
    Disconnected {
        /// The socket path.
        socket: PathBuf,
        /// Why.
        reason: Disconnect,
    },
    /// The publisher sent a well-formed message that breaks the protocol
    /// (out of order, or against the connection's terms).
    #[error("{socket}: protocol error: {what}")]
    Protocol {
        /// The socket path.
        socket: PathBuf,
        /// What was wrong, with the values.
        what: String,
    },
    /// The publisher sent bytes that are not a message (wrong magic or
    /// version, bad length, a value out of range).
    #[error("{socket}: bad message: {source}")]
    Wire {
        /// The socket path.
        socket: PathBuf,
        /// What was wrong with the bytes.
        source: WireError,
    },
    /// A buffer the publisher sent, or a frame in it, is not usable.
    #[error("{socket}: buffer {buffer}, plane {plane}: {problem}")]
    BadBuffer {
        /// The socket path.
        socket: PathBuf,
        /// The buffer index the message gave.
        buffer: u32,
        /// The memory plane (0 when the problem is the buffer's).
        plane: usize,
        /// What was wrong.
        problem: BufferProblem,
    },
    /// More fds came with one message than any message carries (all of
    /// them are closed), or the kernel had to drop some (`MSG_CTRUNC`).
    #[error("{socket}: {count} fds came with one message (at most {max})")]
    TooManyFds {
        /// The socket path.
        socket: PathBuf,
        /// How many came (at least).
        count: usize,
        /// The most a message carries (one per memory plane).
        max: usize,
    },
    /// The socket failed.
    #[error("{socket}: {source}")]
    Io {
        /// The socket path.
        socket: PathBuf,
        /// The error.
        source: io::Error,
    },
}

impl SubscribeError {
    /// Whether the error is the end of the connection
    /// ([`SubscribeError::Disconnected`]).
    pub fn is_disconnect(&self) -> bool {
        matches!(self, SubscribeError::Disconnected { .. })
    }
}
