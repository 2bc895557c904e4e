//! [`Subscriber`]: a [`FrameSource`] whose frames are another process's,
//! lent over a Unix socket by a publisher. Each buffer's fds come once and
//! are imported once through the subscriber's [`ImportCache`], kept across
//! [`reconnect`](Subscriber::reconnect)s (the same files are cache hits);
//! dropping a frame sends its release. Everything the publisher sends is
//! checked (message bytes, fd counts, fd kinds, sizes against the format), so
//! a hostile publisher gets a typed error, never a crash.

mod buffers;
mod connection;
mod error;
mod handshake;
#[cfg(test)]
mod tests;

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zerocam_cache::ImportCache;

use super::socket::{ReceiveError, Receiver};
use super::wire::{ServerMessage, WireFormat};
use crate::frame::slot::cache_capacity;
use crate::frame::stats::Counters;
use crate::frame::{FrameMeta, Placement, Requeue};
use crate::{CaptureError, Frame, FrameSource, Result, StreamFormat, StreamStats};
use buffers::Buffers;
use connection::Connection;
pub use error::{BufferProblem, Disconnect, SubscribeError};
use handshake::{handshake, receive_error};

/// How to subscribe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriberConfig {
    /// The publisher's socket path.
    pub socket: PathBuf,
    /// The most frames this subscriber holds at once (at least 1; the
    /// publisher may lower it, and skips this subscriber while it holds them).
    pub max_leases: u16,
    /// The import cache's capacity; `None`: every buffer plane twice.
    pub cache_capacity: Option<usize>,
    /// How long connecting may take, `connect` and the publisher's `Welcome`
    /// together (a listener that never accepts, or never answers, is a
    /// [`CaptureError::Timeout`] after it). Default 5 s.
    pub connect_timeout: Duration,
    /// The most bytes one buffer's planes may span, as the publisher's
    /// message gives them; more is [`BufferProblem::FrameTooLarge`].
    /// Default [`SubscriberConfig::DEFAULT_MAX_FRAME_BYTES`].
    pub max_frame_bytes: usize,
    /// The most bytes a connection maps, all its buffers' planes together;
    /// more is [`BufferProblem::MappedTooMuch`]. Only the span each plane
    /// needs is mapped, never the rest of a larger file. Default
    /// [`SubscriberConfig::DEFAULT_MAX_MAPPED_BYTES`].
    pub max_mapped_bytes: usize,
}

impl SubscriberConfig {
    /// [`max_frame_bytes`](Self::max_frame_bytes)' default: 256 MiB (an 8K
    /// RGBA frame is 132 MiB).
    pub const DEFAULT_MAX_FRAME_BYTES: usize = 256 << 20;

    /// [`max_mapped_bytes`](Self::max_mapped_bytes)' default: 1 GiB.
    pub const DEFAULT_MAX_MAPPED_BYTES: usize = 1 << 30;

    /// The publisher at `socket`, 2 leases, the default cache, a 5 s
    /// connect timeout, the default caps on mapped bytes.
    pub fn new(socket: impl Into<PathBuf>) -> SubscriberConfig {
        SubscriberConfig {
            socket: socket.into(),
            max_leases: 2,
            cache_capacity: None,
            connect_timeout: Duration::from_secs(5),
            max_frame_bytes: Self::DEFAULT_MAX_FRAME_BYTES,
            max_mapped_bytes: Self::DEFAULT_MAX_MAPPED_BYTES,
        }
    }
}

/// The terms a publisher's `Welcome` set.
#[derive(Debug, Clone, Copy)]
pub(super) struct Terms {
    /// The format every frame must come in.
    wire: WireFormat,
    /// The most frames the caller may hold.
    max_leases: usize,
    /// The publisher's buffer count.
    buffers: usize,
}

/// A subscriber to a publisher's frames: the same [`Frame`] API as a camera.
///
/// ```no_run
/// use std::time::Duration;
/// use zerocam_capture::{share::Subscriber, FrameSource};
///
/// let mut camera = Subscriber::connect("/run/zerocam/cam0.sock")?;
/// let frame = camera.next_frame(Duration::from_secs(1))?;
/// println!("{} {:?}", frame.sequence(), frame.tensor().shape());
/// # Ok::<(), zerocam_capture::CaptureError>(())
/// ```
#[derive(Debug)]
pub struct Subscriber {
    config: SubscriberConfig,
    /// `None` once the connection ended, until a reconnect.
    connection: Option<Arc<Connection>>,
    receiver: Receiver,
    terms: Terms,
    format: StreamFormat,
    buffers: Buffers,
    cache: ImportCache,
    counters: Counters,
}

impl Subscriber {
    /// Connects to the publisher at `socket` with the default
    /// [`SubscriberConfig`].
    ///
    /// # Errors
    /// See [`connect_with`](Self::connect_with).
    pub fn connect(socket: impl AsRef<Path>) -> Result<Subscriber> {
        Subscriber::connect_with(SubscriberConfig::new(socket.as_ref()))
    }

    /// Connects to the publisher `config` names: says `Hello` and reads its
    /// `Welcome` (the format and the terms).
    ///
    /// # Errors
    /// [`SubscribeError::Connect`] when nothing listens there;
    /// [`SubscribeError::Disconnected`] when the publisher refuses
    /// (`Goodbye(NotAllowed)`, `Goodbye(Full)`) or closes;
    /// [`CaptureError::Timeout`] when it does not accept or answer within
    /// `connect_timeout`;
    /// [`SubscribeError::Wire`] / [`SubscribeError::Protocol`] for a bad
    /// answer; [`CaptureError::UnsupportedFormat`] / [`CaptureError::BadFormat`]
    /// for a format zerocam cannot take.
    pub fn connect_with(config: SubscriberConfig) -> Result<Subscriber> {
        let mut receiver = Receiver::new();
        let (sock, terms, format) = handshake(&config, &mut receiver)?;
        let buffers = terms.buffers;
        let capacity = config
            .cache_capacity
            .unwrap_or_else(|| cache_capacity(buffers, format.planes.len()));
        let mut subscriber = Subscriber {
            connection: Some(Arc::new(Connection::new(sock, buffers))),
            config,
            receiver,
            terms,
            format,
            buffers: Buffers::default(),
            cache: ImportCache::new(capacity),
            counters: Counters::default(),
        };
        subscriber.buffers.restart(buffers);
        Ok(subscriber)
    }

    /// A new connection to the same socket, keeping the import cache: the
    /// publisher's buffers are the same files, so they are cache hits, not
    /// new imports. Frames of the old connection stay valid; their drops
    /// release nothing (the old connection's leases ended with it).
    ///
    /// # Errors
    /// Those of [`connect_with`](Self::connect_with); the subscriber stays
    /// disconnected.
    pub fn reconnect(&mut self) -> Result<()> {
        self.drop_connection();
        let (sock, terms, format) = handshake(&self.config, &mut self.receiver)?;
        let buffers = terms.buffers;
        self.buffers.restart(buffers);
        self.terms = terms;
        self.format = format;
        self.connection = Some(Arc::new(Connection::new(sock, buffers)));
        Ok(())
    }

    /// Ends the connection (the publisher sees EOF and ends its leases).
    fn drop_connection(&mut self) {
        if let Some(c) = self.connection.take() {
            c.close();
        }
    }

    fn error(&self, e: SubscribeError) -> CaptureError {
        CaptureError::Share(e)
    }

    /// `e` after ending the connection: what the subscriber gives on a
    /// protocol error or the publisher's end.
    fn fail(&mut self, e: SubscribeError) -> CaptureError {
        self.drop_connection();
        self.error(e)
    }

    fn socket(&self) -> PathBuf {
        self.config.socket.clone()
    }
}

impl FrameSource for Subscriber {
    /// The next frame the publisher lends, waiting at most `timeout`.
    ///
    /// # Errors
    /// [`CaptureError::Timeout`] when none came; [`CaptureError::NoFreeBuffer`]
    /// when the caller holds as many frames as the terms allow and nothing
    /// is waiting on the socket;
    /// [`SubscribeError::Disconnected`] when the publisher said goodbye or
    /// closed (or an earlier error ended the connection); any other
    /// [`SubscribeError`] for what the publisher sent wrong, after which the
    /// connection is ended.
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        let Some(connection) = self.connection.clone() else {
            return Err(self.error(SubscribeError::Disconnected {
                socket: self.socket(),
                reason: Disconnect::Dropped,
            }));
        };
        connection.flush_releases();
        // At the cap the publisher skips this client: wait for nothing, but
        // take what is already there (its goodbye, its end, or a frame lent
        // again after a lease deadline).
        let at_cap = connection.held() >= self.terms.max_leases;
        let deadline = Instant::now() + if at_cap { Duration::ZERO } else { timeout };
        let received = self
            .receiver
            .receive(connection.socket().as_fd(), Some(deadline));
        let (kind, fds, message) = match received {
            Ok(r) => (r.kind, r.fds, ServerMessage::decode(r.kind, r.body)),
            Err(ReceiveError::Timeout) if at_cap => {
                return Err(CaptureError::NoFreeBuffer {
                    path: self.socket(),
                    buffers: self.terms.max_leases,
                })
            }
            Err(ReceiveError::Timeout) => {
                return Err(receive_error(
                    &self.config.socket,
                    ReceiveError::Timeout,
                    timeout,
                ))
            }
            Err(e) => {
                self.drop_connection();
                return Err(receive_error(&self.config.socket, e, timeout));
            }
        };
        let ready = Instant::now();
        let f = match message {
            Ok(ServerMessage::Frame(f)) => f,
            Ok(ServerMessage::Goodbye(reason)) => {
                let reason = Disconnect::Goodbye(reason);
                let socket = self.socket();
                return Err(self.fail(SubscribeError::Disconnected { socket, reason }));
            }
            Ok(ServerMessage::Welcome { .. }) => {
                let (socket, what) = (self.socket(), format!("a second Welcome (kind {kind:#x})"));
                return Err(self.fail(SubscribeError::Protocol { socket, what }));
            }
            Err(source) => {
                let socket = self.socket();
                return Err(self.fail(SubscribeError::Wire { socket, source }));
            }
        };
        if f.format != self.terms.wire {
            let what = format!(
                "frame {} is {} {}x{}, the Welcome said {} {}x{}",
                f.frame_id,
                f.format.fourcc,
                f.format.width,
                f.format.height,
                self.terms.wire.fourcc,
                self.terms.wire.width,
                self.terms.wire.height
            );
            let socket = self.socket();
            return Err(self.fail(SubscribeError::Protocol { socket, what }));
        }
        let caps = buffers::Caps {
            frame: self.config.max_frame_bytes,
            mapped: self.config.max_mapped_bytes,
        };
        let tensor = self
            .buffers
            .frame_tensor(&mut self.cache, &self.format, &f, fds, caps);
        let tensor = match tensor {
            Ok(t) => t,
            Err((plane, problem)) => {
                let (socket, buffer) = (self.socket(), f.buffer);
                return Err(self.fail(SubscribeError::BadBuffer {
                    socket,
                    buffer,
                    plane,
                    problem,
                }));
            }
        };
        let index = f.buffer as usize;
        connection.lend(index, f.frame_id);
        self.counters.frames += 1;
        let meta = FrameMeta {
            sequence: f.sequence,
            timestamp: Duration::from_nanos(f.timestamp_ns),
            bytes_used: usize::try_from(f.bytes_used).unwrap_or(usize::MAX),
            synthesized: f.synthesized,
            placement: Placement::new(
                &[f.spans[0].offset as usize, f.spans[1].offset as usize],
                f.chroma_offset.map(|o| o as usize),
            ),
        };
        let owner: Arc<dyn Requeue> = connection;
        Ok(Frame::new(
            owner,
            index,
            tensor,
            self.format.color,
            meta,
            ready,
        ))
    }

    fn stream_format(&self) -> &StreamFormat {
        &self.format
    }

    fn stats(&self) -> StreamStats {
        let buffers = self.buffers.count();
        StreamStats::new(
            self.counters,
            buffers,
            self.format.planes.len(),
            self.cache.stats(),
        )
    }

    /// The socket path.
    fn name(&self) -> &Path {
        &self.config.socket
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.drop_connection();
    }
}
