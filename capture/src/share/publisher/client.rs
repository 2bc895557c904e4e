//! One subscriber as the publisher sees it: its non-blocking socket, the
//! bytes it sent that are not a whole message yet, whether it said `Hello`,
//! the frames it holds, the buffers whose fds it has, when it connected and
//! since when a message of it has been half-sent, and its counters.

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Instant;

use smallvec::SmallVec;

use nix::sys::socket::{recv, MsgFlags};

use crate::share::wire::{decode_header, ClientMessage, HEADER_LEN, HELLO_LEN, MAX_MESSAGE};

/// What a client's counters say, for [`PublisherStats`](super::PublisherStats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// The client's process id (`SO_PEERCRED`).
    pub pid: i32,
    /// Its user id.
    pub uid: u32,
    /// Frames lent to it.
    pub frames: u64,
    /// Frames it was skipped for (at its lease cap, or its socket full).
    pub skips: u64,
    /// Frames it holds now.
    pub held: usize,
    /// Releases that came after the frame's deadline (ignored).
    pub late_releases: u64,
}

/// What a client asked for, in the order it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Request {
    /// `Hello`: start sending frames.
    Hello {
        /// The client's cap on frames held.
        max_leases: u16,
    },
    /// `Release` of a frame the client holds.
    Release(u64),
}

/// One connected client.
#[derive(Debug)]
pub(super) struct Client {
    pub sock: UnixStream,
    /// Bytes read and not yet a whole message.
    pending: [u8; MAX_MESSAGE],
    filled: usize,
    /// The cap its `Hello` asked for (granted or not), `None` before it.
    pub hello: Option<u16>,
    /// The frames it may hold at once; `None` until it was welcomed (a
    /// connection still `None` is pending: it has no place among
    /// `max_clients`).
    pub max_leases: Option<u16>,
    /// When it was accepted (the `Hello` deadline runs from here).
    pub accepted: Instant,
    /// Since when `pending` has held part of a message (`None`: nothing).
    pub partial_since: Option<Instant>,
    /// The ids of the frames it holds.
    pub leases: SmallVec<[u64; 4]>,
    /// The ids of frames taken back while it held them and not released
    /// since: they still count against its cap (they may sit unread in its
    /// socket), so their number stays under the cap too.
    expired: SmallVec<[u64; 4]>,
    /// Per buffer index: whether its fds went to this connection.
    pub has_fds: Vec<bool>,
    pub stats: ClientStats,
}

/// What reading a client gave.
#[derive(Debug)]
pub(super) enum Inbox {
    /// Whole messages (maybe none) and the socket still open.
    Open,
    /// The client closed the connection (or died: EOF).
    Closed,
    /// The client broke the protocol: why.
    Violation(String),
}

impl Client {
    /// A client on `sock` (already non-blocking) from process `pid` of
    /// `uid`, accepted at `accepted`.
    pub fn new(sock: UnixStream, pid: i32, uid: u32, accepted: Instant) -> Client {
        Client {
            sock,
            pending: [0; MAX_MESSAGE],
            filled: 0,
            hello: None,
            max_leases: None,
            accepted,
            partial_since: None,
            leases: SmallVec::new(),
            expired: SmallVec::new(),
            has_fds: Vec::new(),
            stats: ClientStats {
                pid,
                uid,
                ..ClientStats::default()
            },
        }
    }

    /// Whether a whole `Hello` came from this pending connection, read or
    /// still in its socket (looked at with `MSG_PEEK`, nothing consumed):
    /// a client that spoke at once is not the one to push out for a flood
    /// of silent connections. A partial `Hello` (a stall) is not whole.
    pub fn hello_waiting(&self) -> bool {
        if self.hello.is_some() || self.filled >= HELLO_LEN {
            return true;
        }
        let mut peek = [0u8; HELLO_LEN];
        let want = HELLO_LEN - self.filled;
        let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
        recv(self.sock.as_raw_fd(), &mut peek[..want], flags).is_ok_and(|n| n >= want)
    }

    /// Reads what the client sent, without waiting, handing each whole
    /// message to `on_request`. A message that cannot be decoded, a second
    /// `Hello`, or a `Release` before `Hello` is a violation; what
    /// `on_request` returns as an error is one too.
    pub fn read(
        &mut self,
        mut on_request: impl FnMut(&mut Client, Request) -> Result<(), String>,
    ) -> Inbox {
        loop {
            let n = match self.sock.read(&mut self.pending[self.filled..]) {
                Ok(0) => return Inbox::Closed,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // A message half-sent starts the clock (a client that
                    // trickles bytes and stalls is closed at the deadline).
                    if self.filled == 0 {
                        self.partial_since = None;
                    } else if self.partial_since.is_none() {
                        self.partial_since = Some(Instant::now());
                    }
                    return Inbox::Open;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Inbox::Closed, // ECONNRESET and the like: gone
            };
            self.filled += n;
            while let Some(request) = match self.next_message() {
                Ok(r) => r,
                Err(why) => return Inbox::Violation(why),
            } {
                if let Err(why) = on_request(self, request) {
                    return Inbox::Violation(why);
                }
            }
        }
    }

    /// The next whole message in `pending`, removed from it.
    fn next_message(&mut self) -> Result<Option<Request>, String> {
        if self.filled < HEADER_LEN {
            return Ok(None);
        }
        let mut header = [0; HEADER_LEN];
        header.copy_from_slice(&self.pending[..HEADER_LEN]);
        let (kind, len) = decode_header(&header).map_err(|e| e.to_string())?;
        if self.filled < HEADER_LEN + len {
            return Ok(None);
        }
        let message = ClientMessage::decode(kind, &self.pending[HEADER_LEN..HEADER_LEN + len])
            .map_err(|e| e.to_string())?;
        self.pending.copy_within(HEADER_LEN + len..self.filled, 0);
        self.filled -= HEADER_LEN + len;
        self.partial_since = None; // a whole message: the clock starts again
        match (message, self.hello) {
            (ClientMessage::Hello { max_leases }, None) => {
                self.hello = Some(max_leases);
                Ok(Some(Request::Hello { max_leases }))
            }
            (ClientMessage::Hello { .. }, Some(_)) => Err("a second Hello".into()),
            (ClientMessage::Release { .. }, None) => Err("a Release before Hello".into()),
            (ClientMessage::Release { frame_id }, Some(_)) => Ok(Some(Request::Release(frame_id))),
        }
    }

    /// Whether the client said `Hello` and holds fewer frames than its cap
    /// (frames taken back but not released yet count: the client may not
    /// have read them yet).
    pub fn wants_a_frame(&self) -> bool {
        self.max_leases
            .is_some_and(|cap| self.leases.len() + self.expired.len() < usize::from(cap))
    }

    /// Ends the client's lease on `frame_id` by its release: `Ok(true)` when
    /// it held it, `Ok(false)` when the lease had expired (a late release,
    /// counted), `Err` when it never held it.
    pub fn release(&mut self, frame_id: u64) -> Result<bool, String> {
        if let Some(i) = self.leases.iter().position(|&id| id == frame_id) {
            self.leases.swap_remove(i);
            self.stats.held = self.leases.len();
            return Ok(true);
        }
        if let Some(i) = self.expired.iter().position(|&id| id == frame_id) {
            self.expired.swap_remove(i);
            self.stats.late_releases += 1;
            return Ok(false);
        }
        Err(format!(
            "a Release of frame {frame_id}, which it does not hold"
        ))
    }

    /// The publisher took frame `frame_id` back (its deadline passed, or the
    /// source needed the buffer): whether the client held it. A later
    /// release of it is a late release.
    pub fn expire(&mut self, frame_id: u64) -> bool {
        let Some(i) = self.leases.iter().position(|&id| id == frame_id) else {
            return false;
        };
        self.leases.swap_remove(i);
        self.stats.held = self.leases.len();
        self.expired.push(frame_id);
        true
    }

    /// Frame `frame_id` was lent to the client.
    pub fn lent(&mut self, frame_id: u64, buffer: usize) {
        self.leases.push(frame_id);
        self.stats.frames += 1;
        self.stats.held = self.leases.len();
        if self.has_fds.len() <= buffer {
            self.has_fds.resize(buffer + 1, false);
        }
        self.has_fds[buffer] = true;
    }

    /// Whether buffer `buffer`'s fds went to this connection.
    pub fn has_fds_of(&self, buffer: usize) -> bool {
        self.has_fds.get(buffer).copied().unwrap_or(false)
    }
}
