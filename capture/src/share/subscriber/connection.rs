//! One connection to a publisher: the socket, and the leases its frames hold.
//! A [`Frame`](crate::Frame) of the connection holds it as its owner, so the
//! frame's drop sends `Release` on the connection the frame came on (never on
//! a later one, whose publisher state does not know the id).

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

use smallvec::SmallVec;

use crate::frame::{lock, Requeue};
use crate::share::socket;
use crate::share::wire::ClientMessage;

/// The frame ids a client holds in one buffer: one, or more when the
/// publisher reclaimed the buffer (a lease deadline) and lent it again while
/// the older frame is still out.
type Ids = SmallVec<[u64; 2]>;

/// The most releases kept for a publisher that does not read them; more are
/// dropped (its lease deadlines end those frames' leases anyway).
const MAX_UNSENT: usize = 64;

/// What the frames of a connection share with it.
#[derive(Debug, Default)]
struct Leases {
    /// Per buffer index, the ids of the frames out, oldest first.
    by_buffer: Vec<Ids>,
    /// Frames out.
    held: usize,
    /// Releases the socket buffer had no room for, sent before the next frame.
    unsent: SmallVec<[u64; 4]>,
}

/// A connection to a publisher and the leases of its frames.
#[derive(Debug)]
pub(super) struct Connection {
    sock: UnixStream,
    leases: Mutex<Leases>,
}

impl Connection {
    /// A connection over `sock` to a publisher with `buffers` buffers.
    pub fn new(sock: UnixStream, buffers: usize) -> Connection {
        Connection {
            sock,
            leases: Mutex::new(Leases {
                by_buffer: vec![Ids::new(); buffers],
                ..Leases::default()
            }),
        }
    }

    /// The socket.
    pub fn socket(&self) -> &UnixStream {
        &self.sock
    }

    /// Frames of the connection still out.
    pub fn held(&self) -> usize {
        lock(&self.leases).held
    }

    /// Records frame `frame_id` in buffer `index` as out.
    pub fn lend(&self, index: usize, frame_id: u64) {
        let mut l = lock(&self.leases);
        if let Some(ids) = l.by_buffer.get_mut(index) {
            ids.push(frame_id);
            l.held += 1;
        }
    }

    /// Sends the releases that found the socket full.
    pub fn flush_releases(&self) {
        let mut l = lock(&self.leases);
        while let Some(&id) = l.unsent.first() {
            if !self.send_release(id) {
                return;
            }
            l.unsent.remove(0);
        }
    }

    /// Sends `Release{frame_id}`; false when the socket buffer is full. A
    /// publisher that is gone is not an error: its leases ended with it.
    fn send_release(&self, frame_id: u64) -> bool {
        let msg = ClientMessage::Release { frame_id }.encode();
        !matches!(socket::send(self.sock.as_fd(), &msg, &[]), Ok(false))
    }

    /// Ends the connection: the publisher sees EOF (its leases end), and the
    /// releases of frames still out go nowhere.
    pub fn close(&self) {
        let _ = self.sock.shutdown(std::net::Shutdown::Both); // already closed: nothing to end
    }
}

impl Requeue for Connection {
    fn requeue(&self, index: usize) {
        let mut l = lock(&self.leases);
        let Some(ids) = l.by_buffer.get_mut(index) else {
            return;
        };
        if ids.is_empty() {
            return;
        }
        let frame_id = ids.remove(0);
        l.held = l.held.saturating_sub(1);
        if (!l.unsent.is_empty() || !self.send_release(frame_id)) && l.unsent.len() < MAX_UNSENT {
            l.unsent.push(frame_id);
        }
    }
}
