//! The syscall edge of frame sharing: one message out with its fds
//! (`sendmsg` + `SCM_RIGHTS`), one message in with the fds that came with it
//! (`recvmsg`), and the peer's credentials (`SO_PEERCRED`). Received fds are
//! owned at once, so none leaks whatever the message turns out to be.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{
    getsockopt, recvmsg, sendmsg, sockopt, ControlMessage, ControlMessageOwned, MsgFlags,
};
use smallvec::SmallVec;

use super::wire::{decode_header, Encoded, WireError, HEADER_LEN, MAX_MESSAGE, MAX_PLANES};

/// The fds that came with one message (at most [`MAX_PLANES`] are kept;
/// more are a protocol error, and closed).
pub(crate) type ReceivedFds = SmallVec<[OwnedFd; MAX_PLANES]>;

/// Room for this many fds in one `recvmsg`: more than a message may carry,
/// so a peer sending too many is seen (and every one of them closed).
const FD_ROOM: usize = MAX_PLANES + 2;

/// How long a body may lag behind its header.
const BODY_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Sends `msg` with `fds` attached, without waiting: `Ok(false)` when the
/// peer's socket buffer is full (`EAGAIN`; nothing was sent). A message is
/// at most [`MAX_MESSAGE`] bytes, which a Unix stream socket takes whole or
/// not at all; a partial send is reported as `WriteZero`.
pub(crate) fn send(
    sock: BorrowedFd<'_>,
    msg: &Encoded,
    fds: &[BorrowedFd<'_>],
) -> io::Result<bool> {
    let raw: SmallVec<[RawFd; MAX_PLANES]> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let rights = [ControlMessage::ScmRights(&raw)];
    let cmsgs: &[ControlMessage] = if raw.is_empty() { &[] } else { &rights };
    let bytes = msg.as_bytes();
    let iov = [io::IoSlice::new(bytes)];
    let flags = MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT;
    match sendmsg::<()>(sock.as_raw_fd(), &iov, cmsgs, flags, None) {
        Ok(n) if n == bytes.len() => Ok(true),
        Ok(n) => Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("sent {n} of a {}-byte message", bytes.len()),
        )),
        Err(nix::errno::Errno::EAGAIN) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What [`Receiver::receive`] got: a message's kind, its body and its fds.
#[derive(Debug)]
pub(crate) struct Received<'a> {
    /// The message kind.
    pub kind: u16,
    /// The body (checked against nothing but the maximum length).
    pub body: &'a [u8],
    /// The fds that came with the message.
    pub fds: ReceivedFds,
}

/// Why a message could not be received.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReceiveError {
    /// Nothing came before the deadline.
    #[error("no message before the deadline")]
    Timeout,
    /// The peer closed the connection.
    #[error("the peer closed the connection")]
    Closed,
    /// The bytes are not a message.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// More fds came with a message than any message carries, or the
    /// kernel had to drop some (`MSG_CTRUNC`).
    #[error("{count} fds came with one message (at most {MAX_PLANES})")]
    TooManyFds {
        /// How many came (at least).
        count: usize,
    },
    /// The socket failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Reads whole messages from a blocking-by-deadline socket, reusing its
/// buffers (nothing is allocated per message but the kernel's fd list).
#[derive(Debug)]
pub(crate) struct Receiver {
    buf: [u8; MAX_MESSAGE],
    cmsg: Vec<u8>,
}

impl Receiver {
    /// A receiver with room for one message and its fds.
    pub fn new() -> Receiver {
        Receiver {
            buf: [0; MAX_MESSAGE],
            cmsg: nix::cmsg_space!([RawFd; FD_ROOM]),
        }
    }

    /// The next message on `sock`, waiting until `deadline` (`None`: forever).
    pub fn receive(
        &mut self,
        sock: BorrowedFd<'_>,
        deadline: Option<Instant>,
    ) -> Result<Received<'_>, ReceiveError> {
        let mut fds = ReceivedFds::new();
        self.fill(sock, 0, HEADER_LEN, deadline, &mut fds)?;
        let mut header = [0; HEADER_LEN];
        header.copy_from_slice(&self.buf[..HEADER_LEN]);
        let (kind, len) = decode_header(&header)?;
        // A body follows its header at once: give it a second even when the
        // caller's deadline is nearer, so a frame is not cut in two.
        let body_deadline = deadline.map(|d| d.max(Instant::now() + BODY_GRACE));
        // A body that never comes is not "no message": the header is
        // consumed, so the stream is out of step and the peer must go.
        self.fill(sock, HEADER_LEN, HEADER_LEN + len, body_deadline, &mut fds)
            .map_err(|e| match e {
                ReceiveError::Timeout => ReceiveError::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("a {len}-byte body did not follow its header within {BODY_GRACE:?}"),
                )),
                e => e,
            })?;
        Ok(Received {
            kind,
            body: &self.buf[HEADER_LEN..HEADER_LEN + len],
            fds,
        })
    }

    /// Reads `buf[from..to]`, collecting fds.
    fn fill(
        &mut self,
        sock: BorrowedFd<'_>,
        mut from: usize,
        to: usize,
        deadline: Option<Instant>,
        fds: &mut ReceivedFds,
    ) -> Result<(), ReceiveError> {
        while from < to {
            wait_readable(sock, deadline)?;
            let mut iov = [io::IoSliceMut::new(&mut self.buf[from..to])];
            let msg = match recvmsg::<()>(
                sock.as_raw_fd(),
                &mut iov,
                Some(&mut self.cmsg),
                MsgFlags::MSG_CMSG_CLOEXEC | MsgFlags::MSG_DONTWAIT,
            ) {
                Ok(m) => m,
                Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io::Error::from(e).into()),
            };
            let truncated = msg.flags.contains(MsgFlags::MSG_CTRUNC);
            let mut extra = 0;
            for c in msg.cmsgs().map_err(io::Error::from)? {
                if let ControlMessageOwned::ScmRights(raw) = c {
                    for r in raw {
                        // SAFETY: the kernel just installed `r` in this
                        // process for us (SCM_RIGHTS); nothing else owns it.
                        let fd = unsafe { OwnedFd::from_raw_fd(r) };
                        if fds.len() < MAX_PLANES {
                            fds.push(fd);
                        } else {
                            extra += 1; // closed here
                        }
                    }
                }
            }
            if truncated || extra > 0 {
                return Err(ReceiveError::TooManyFds {
                    count: fds.len() + extra.max(1),
                });
            }
            if msg.bytes == 0 {
                return Err(ReceiveError::Closed);
            }
            from += msg.bytes;
        }
        Ok(())
    }
}

impl Default for Receiver {
    fn default() -> Self {
        Receiver::new()
    }
}

/// Waits until `sock` is readable (or closed), at most until `deadline`.
fn wait_readable(sock: BorrowedFd<'_>, deadline: Option<Instant>) -> Result<(), ReceiveError> {
    loop {
        let timeout = match deadline {
            None => PollTimeout::NONE,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX)
            }
        };
        let mut fds = [PollFd::new(sock.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(0) => return Err(ReceiveError::Timeout),
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(io::Error::from(e).into()),
        }
    }
}

/// The uid, gid and pid of the process at the other end of `sock`, as the
/// kernel recorded them at `connect` (`SO_PEERCRED`).
pub(crate) fn peer_credentials(sock: BorrowedFd<'_>) -> io::Result<(u32, u32, i32)> {
    let c = getsockopt(&sock, sockopt::PeerCredentials)?;
    Ok((c.uid(), c.gid(), c.pid()))
}
