//! The syscall edge of frame sharing: one message out with its fds
//! (`sendmsg` + `SCM_RIGHTS`), one message in with the fds that came with it
//! (`recvmsg`), and the peer's credentials (`SO_PEERCRED`). Received fds are
//! owned at once, so none leaks whatever the message turns out to be: the
//! control buffer has room for the most fds one `sendmsg` can carry
//! (`SCM_MAX_FD`), every fd the kernel installed is wrapped before anything
//! is checked (`MSG_CTRUNC` included), and a message cut by a deadline keeps
//! its bytes and fds for the next call.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{getsockopt, sendmsg, sockopt, ControlMessage, MsgFlags};
use smallvec::SmallVec;

use super::wire::{decode_header, Encoded, WireError, HEADER_LEN, MAX_MESSAGE, MAX_PLANES};

/// The fds that came with one message (at most [`MAX_PLANES`] are kept;
/// more are a protocol error, and closed).
pub(crate) type ReceivedFds = SmallVec<[OwnedFd; MAX_PLANES]>;

/// Room for this many fds in one `recvmsg`: `SCM_MAX_FD`, the most one
/// `sendmsg` can carry, and a stream socket's `recvmsg` returns the fds of
/// one `sendmsg` at most. So the kernel never has to drop fds for want of
/// room (it would install some and set `MSG_CTRUNC`), and a peer sending
/// too many is seen, every one of them closed.
pub(crate) const FD_ROOM: usize = 253;

/// The control buffer's length in `u64`s: `CMSG_SPACE` of [`FD_ROOM`] fds
/// (a 16-byte header and the fds, 8-byte aligned), rounded up.
const CMSG_WORDS: usize = (16 + FD_ROOM * std::mem::size_of::<RawFd>()).div_ceil(8) + 1;

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
    /// The deadline came first. Part of a message may have come: it is kept
    /// (bytes and fds), and the next [`Receiver::receive`] goes on from there.
    #[error("no message before the deadline")]
    Timeout,
    /// The peer closed the connection.
    #[error("the peer closed the connection")]
    Closed,
    /// The bytes are not a message.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// More fds came with a message than any message carries, or the
    /// kernel had to drop some (`MSG_CTRUNC`). Every one that came is closed.
    #[error("{count} fds came with one message (at most {MAX_PLANES})")]
    TooManyFds {
        /// How many came (at least).
        count: usize,
    },
    /// The socket failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Reads whole messages from a socket by deadline, reusing its buffers
/// (nothing is allocated per message). A message the deadline cuts short
/// stays here, bytes and fds, so the stream never falls out of step: the
/// next call resumes it. Any other error drops it (the connection is over).
#[derive(Debug)]
pub(crate) struct Receiver {
    buf: [u8; MAX_MESSAGE],
    /// Bytes of the message under way in `buf`.
    filled: usize,
    /// The fds of the message under way.
    fds: ReceivedFds,
    /// The control buffer (`u64`s: aligned for `cmsghdr`).
    cmsg: Box<[u64; CMSG_WORDS]>,
}

impl Receiver {
    /// A receiver with room for one message and its fds.
    pub fn new() -> Receiver {
        Receiver {
            buf: [0; MAX_MESSAGE],
            filled: 0,
            fds: ReceivedFds::new(),
            cmsg: Box::new([0; CMSG_WORDS]),
        }
    }

    /// Forgets a message under way (its fds close): for a new connection.
    pub fn reset(&mut self) {
        self.filled = 0;
        self.fds.clear();
    }

    /// The next message on `sock`, waiting until `deadline` (`None`: forever).
    /// A message cut short by the deadline is kept for the next call.
    pub fn receive(
        &mut self,
        sock: BorrowedFd<'_>,
        deadline: Option<Instant>,
    ) -> Result<Received<'_>, ReceiveError> {
        match self.read_message(sock, deadline) {
            Ok((kind, len)) => {
                self.filled = 0;
                Ok(Received {
                    kind,
                    body: &self.buf[HEADER_LEN..HEADER_LEN + len],
                    fds: std::mem::take(&mut self.fds),
                })
            }
            Err(ReceiveError::Timeout) => Err(ReceiveError::Timeout),
            Err(e) => {
                self.reset();
                Err(e)
            }
        }
    }

    /// Reads the rest of the message under way: its kind and body length.
    fn read_message(
        &mut self,
        sock: BorrowedFd<'_>,
        deadline: Option<Instant>,
    ) -> Result<(u16, usize), ReceiveError> {
        self.fill(sock, HEADER_LEN, deadline)?;
        let mut header = [0; HEADER_LEN];
        header.copy_from_slice(&self.buf[..HEADER_LEN]);
        let (kind, len) = decode_header(&header)?;
        self.fill(sock, HEADER_LEN + len, deadline)?;
        Ok((kind, len))
    }

    /// Reads until `buf[..to]` is filled, collecting fds.
    fn fill(
        &mut self,
        sock: BorrowedFd<'_>,
        to: usize,
        deadline: Option<Instant>,
    ) -> Result<(), ReceiveError> {
        while self.filled < to {
            wait_readable(sock, deadline)?;
            let n = match recv_with_fds(
                sock,
                &mut self.buf[self.filled..to],
                &mut self.cmsg[..],
                &mut self.fds,
            ) {
                Ok(n) => n,
                Err(ReceiveError::Io(e))
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Err(ReceiveError::Closed);
            }
            self.filled += n;
        }
        Ok(())
    }
}

impl Default for Receiver {
    fn default() -> Self {
        Receiver::new()
    }
}

/// One `recvmsg` into `buf`, without waiting: the bytes read (0 at EOF).
/// Every fd the kernel installed is owned before anything is checked: up to
/// [`MAX_PLANES`] in all go to `fds`, the rest close here, and then too
/// many, or `MSG_CTRUNC` (the kernel dropped some), is
/// [`ReceiveError::TooManyFds`].
fn recv_with_fds(
    sock: BorrowedFd<'_>,
    buf: &mut [u8],
    cmsg: &mut [u64],
    fds: &mut ReceivedFds,
) -> Result<usize, ReceiveError> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is a valid, empty one (null pointers, zero
    // lengths); the fields set below point at live buffers of their lengths.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = cmsg.as_mut_ptr().cast();
    hdr.msg_controllen = std::mem::size_of_val(cmsg) as _;
    let flags = libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT;
    // SAFETY: `hdr` points at `iov` (into `buf`) and `cmsg`, both alive and
    // exclusively borrowed for the call, with their true lengths; the kernel
    // writes at most those lengths.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut hdr, flags) };
    if n < 0 {
        return Err(io::Error::from(Errno::last()).into());
    }
    let mut extra = 0usize;
    // SAFETY: `hdr` is the header the kernel just filled: msg_control and
    // msg_controllen describe the control bytes it wrote, which CMSG_FIRSTHDR
    // and CMSG_NXTHDR walk without leaving.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(&hdr) };
    while !c.is_null() {
        // SAFETY: `c` is a cmsghdr inside the control buffer (see above).
        let (level, kind, len) = unsafe { ((*c).cmsg_level, (*c).cmsg_type, (*c).cmsg_len) };
        if level == libc::SOL_SOCKET && kind == libc::SCM_RIGHTS {
            // SAFETY: CMSG_LEN only computes a length.
            let head = unsafe { libc::CMSG_LEN(0) } as usize;
            // The kernel's cmsg_len; bounded by the buffer all the same.
            let room = as_len(hdr.msg_controllen).saturating_sub(head);
            let count = as_len(len).saturating_sub(head).min(room) / std::mem::size_of::<RawFd>();
            // SAFETY: the data of the cmsghdr `c`, inside the control buffer.
            let data = unsafe { libc::CMSG_DATA(c) }.cast::<RawFd>();
            for i in 0..count {
                // SAFETY: fd `i` of the message's `count`, written by the
                // kernel inside the control buffer (maybe unaligned).
                let raw = unsafe { data.add(i).read_unaligned() };
                // SAFETY: the kernel just installed `raw` in this process
                // for us (SCM_RIGHTS); nothing else owns it.
                let fd = unsafe { OwnedFd::from_raw_fd(raw) };
                if fds.len() < MAX_PLANES {
                    fds.push(fd);
                } else {
                    extra += 1; // closed here
                }
            }
        }
        // SAFETY: as CMSG_FIRSTHDR: the next header inside the buffer, or null.
        c = unsafe { libc::CMSG_NXTHDR(&hdr, c) };
    }
    if hdr.msg_flags & libc::MSG_CTRUNC != 0 || extra > 0 {
        let count = fds.len() + extra.max(1);
        fds.clear();
        return Err(ReceiveError::TooManyFds { count });
    }
    Ok(n as usize)
}

/// A control length as `usize` (0 if it were not one): `size_t` in glibc,
/// `socklen_t` (`u32`) in musl.
fn as_len<T: TryInto<usize>>(len: T) -> usize {
    len.try_into().unwrap_or(0) // never: both fit a usize
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
