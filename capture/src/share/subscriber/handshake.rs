//! The start of a connection: connect, `Hello`, and the publisher's
//! `Welcome` checked (its terms, and its format as a driver's reply is
//! checked); and how a receive failure is reported.

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{Disconnect, SubscribeError, SubscriberConfig, Terms};
use crate::share::socket::{self, ReceiveError, Receiver};
use crate::share::wire::{ClientMessage, ServerMessage, WireFormat};
use crate::v4l2::{FormatReply, MAX_BUFFERS};
use crate::{CaptureError, Colorimetry, Result, StreamFormat};

/// How long a publisher may take to answer `Hello`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects, says `Hello` and reads the `Welcome`: the socket, the terms and
/// the format checked.
pub(super) fn handshake(
    config: &SubscriberConfig,
    receiver: &mut Receiver,
) -> Result<(UnixStream, Terms, StreamFormat)> {
    let socket = || config.socket.clone();
    let sock = UnixStream::connect(&config.socket).map_err(|source| SubscribeError::Connect {
        socket: socket(),
        source,
    })?;
    let io = |source| SubscribeError::Io {
        socket: socket(),
        source,
    };
    let asked = config.max_leases.max(1);
    let hello = ClientMessage::Hello { max_leases: asked }.encode();
    if !socket::send(sock.as_fd(), &hello, &[]).map_err(io)? {
        let full = std::io::Error::from(std::io::ErrorKind::WouldBlock);
        return Err(io(full).into());
    }
    let received = receiver.receive(sock.as_fd(), Some(Instant::now() + HANDSHAKE_TIMEOUT));
    let received = received.map_err(|e| receive_error(&config.socket, e, HANDSHAKE_TIMEOUT))?;
    let protocol = |what: String| SubscribeError::Protocol {
        socket: socket(),
        what,
    };
    if !received.fds.is_empty() {
        let n = received.fds.len();
        return Err(protocol(format!("{n} fds came with the publisher's first message")).into());
    }
    let wire = |source| SubscribeError::Wire {
        socket: socket(),
        source,
    };
    let message = ServerMessage::decode(received.kind, received.body).map_err(wire)?;
    let (lease_ms, max_leases, buffers, wire_format) = match message {
        ServerMessage::Welcome {
            lease_ms,
            max_leases,
            buffers,
            format,
        } => (lease_ms, max_leases, buffers, format),
        ServerMessage::Goodbye(reason) => {
            return Err(SubscribeError::Disconnected {
                socket: socket(),
                reason: Disconnect::Goodbye(reason),
            }
            .into())
        }
        ServerMessage::Frame(_) => return Err(protocol("a frame before the Welcome".into()).into()),
    };
    if max_leases == 0 || buffers == 0 || u32::from(buffers) > MAX_BUFFERS {
        return Err(protocol(format!(
            "Welcome with {max_leases} leases and {buffers} buffers (1..={MAX_BUFFERS} buffers, at least 1 lease)"
        ))
        .into());
    }
    let _ = lease_ms; // the publisher enforces it
    let format = checked_format(&config.socket, &wire_format)?;
    let terms = Terms {
        wire: wire_format,
        max_leases: usize::from(max_leases.min(asked)),
        buffers: usize::from(buffers),
    };
    Ok((sock, terms, format))
}

/// The stream format of `wire`, checked as a driver's reply is (a format
/// zerocam captures, planes whose sizes hold the image).
fn checked_format(socket: &Path, wire: &WireFormat) -> Result<StreamFormat> {
    let reply = FormatReply {
        fourcc: wire.fourcc,
        width: wire.width,
        height: wire.height,
        field: 0,
        num_planes: wire.plane_count,
        planes: wire.planes().to_vec(),
        colorimetry: Colorimetry::default(),
    };
    let mut format = reply.stream_format(socket)?;
    format.color = wire.color;
    Ok(format)
}

/// A receive failure as the subscriber reports it.
pub(super) fn receive_error(socket: &Path, e: ReceiveError, timeout: Duration) -> CaptureError {
    let socket = socket.to_path_buf();
    match e {
        ReceiveError::Timeout => CaptureError::Timeout {
            path: socket,
            timeout,
        },
        ReceiveError::Closed => SubscribeError::Disconnected {
            socket,
            reason: Disconnect::Closed,
        }
        .into(),
        ReceiveError::Wire(source) => SubscribeError::Wire { socket, source }.into(),
        ReceiveError::TooManyFds { count } => SubscribeError::Protocol {
            socket,
            what: format!("{count} fds came with one message"),
        }
        .into(),
        ReceiveError::Io(source) if source.kind() == std::io::ErrorKind::ConnectionReset => {
            SubscribeError::Disconnected {
                socket,
                reason: Disconnect::Closed,
            }
            .into()
        }
        ReceiveError::Io(source) => SubscribeError::Io { socket, source }.into(),
    }
}
