//! The start of a connection: connect, `Hello`, and the publisher's
//! `Welcome` checked (its terms, and its format as a driver's reply is
//! checked); and how a receive failure is reported.

use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{
    connect, getsockopt, socket, sockopt, AddressFamily, SockFlag, SockType, UnixAddr,
};

use super::{Disconnect, SubscribeError, SubscriberConfig, Terms};
use crate::share::socket::{self, ReceiveError, Receiver};
use crate::share::wire::{ClientMessage, ServerMessage, WireFormat};
use crate::v4l2::{FormatReply, MAX_BUFFERS};
use crate::{CaptureError, Colorimetry, Result, StreamFormat};

/// The longest pause between two `connect`s to a listener whose backlog is
/// full.
const MAX_CONNECT_PAUSE: Duration = Duration::from_millis(50);

/// Connects, says `Hello` and reads the `Welcome`, all within
/// `config.connect_timeout`: the socket, the terms and the format checked.
pub(super) fn handshake(
    config: &SubscriberConfig,
    receiver: &mut Receiver,
) -> Result<(UnixStream, Terms, StreamFormat)> {
    receiver.reset();
    let timeout = config.connect_timeout;
    let deadline = Instant::now() + timeout;
    let socket = || config.socket.clone();
    let sock = match connect_by(&config.socket, deadline) {
        Ok(sock) => sock,
        Err(None) => {
            return Err(CaptureError::Timeout {
                path: socket(),
                timeout,
            })
        }
        Err(Some(source)) => {
            return Err(SubscribeError::Connect {
                socket: socket(),
                source,
            }
            .into())
        }
    };
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
    let received = receiver.receive(sock.as_fd(), Some(deadline));
    let received = received.map_err(|e| receive_error(&config.socket, e, timeout))?;
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

/// A connected socket to `path`, by `deadline`: `Err(None)` when it passed.
///
/// A blocking `connect` to a listener that never accepts waits forever once
/// its backlog is full, so the socket is non-blocking: a Unix socket's
/// `connect` then fails `EAGAIN` at once (no connection is pending, nothing
/// to poll), and is tried again, with pauses growing to
/// [`MAX_CONNECT_PAUSE`], until the deadline; an `EINPROGRESS` (other
/// families) is polled for writability and `SO_ERROR` read. The socket is
/// made blocking again once connected (every read and write of it waits by
/// `poll` with a deadline or does not wait).
fn connect_by(
    path: &Path,
    deadline: Instant,
) -> std::result::Result<UnixStream, Option<std::io::Error>> {
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        None,
    )
    .map_err(|e| Some(e.into()))?;
    let addr = UnixAddr::new(path).map_err(|e| Some(e.into()))?;
    let mut pause = Duration::from_millis(1);
    loop {
        match connect(fd.as_raw_fd(), &addr) {
            Ok(()) => break,
            Err(Errno::EINTR) => continue,
            Err(Errno::EAGAIN) => {
                // The listener's backlog is full: it does not accept.
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(None);
                }
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(MAX_CONNECT_PAUSE);
            }
            Err(Errno::EINPROGRESS) => {
                let left = deadline.saturating_duration_since(Instant::now());
                let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
                let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLOUT)];
                match poll(&mut fds, timeout) {
                    Ok(0) => return Err(None),
                    Ok(_) => {}
                    Err(e) => return Err(Some(e.into())),
                }
                match getsockopt(&fd, sockopt::SocketError).map_err(|e| Some(e.into()))? {
                    0 => break,
                    errno => return Err(Some(std::io::Error::from_raw_os_error(errno))),
                }
            }
            Err(e) => return Err(Some(e.into())),
        }
    }
    let sock = UnixStream::from(fd);
    sock.set_nonblocking(false).map_err(Some)?;
    Ok(sock)
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
        ReceiveError::TooManyFds { count } => SubscribeError::TooManyFds {
            socket,
            count,
            max: crate::share::wire::MAX_PLANES,
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
