//! The publisher: one [`FrameSource`] lent to many subscriber processes over
//! a Unix stream socket (docs/sharing.md). One thread, no thread per client:
//! each [`serve_frame`](Publisher::serve_frame) accepts and greets clients,
//! reads their releases, ends expired leases, then takes one frame and lends
//! it to every client under its cap.
//!
//! Every connection is hostile until it says `Hello`: it waits among at most
//! `max_pending` others for at most `hello_timeout`, and has no place among
//! `max_clients` until it is welcomed; one uid has at most
//! `max_clients_per_uid` places. Lines about clients go through `log`,
//! rate-limited per uid and kind (`ratelimit.rs`).

mod client;
mod config;
mod error;
mod lent;
mod listener;
mod ratelimit;
#[allow(unsafe_code)] // owning the socket systemd passes as fd 3, once
mod systemd;
#[cfg(test)]
mod tests;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use smallvec::SmallVec;

pub use client::ClientStats;
pub use config::{PublisherConfig, PublisherStats};
pub use error::PublishError;
pub use systemd::take_systemd_socket;

use client::{Client, Inbox, Request};
use lent::{LentFrame, LentFrames};
use listener::Listener;
use ratelimit::{Kind, LogLimiter};

use crate::share::socket;
use crate::share::wire::{
    FrameMessage, GoodbyeReason, PlaneSpan, ServerMessage, WireFormat, MAX_PLANES,
};
use crate::{CaptureError, Frame, FrameSource, SharedPlane};

/// A buffer's fds as clients get them, with each plane file's length.
type SharedBuffer = SmallVec<[(OwnedFd, usize); MAX_PLANES]>;

/// Lends the frames of a [`FrameSource`] to subscriber processes.
pub struct Publisher<S: FrameSource> {
    source: S,
    config: PublisherConfig,
    listener: Listener,
    clients: Vec<Client>,
    lent: LentFrames,
    /// Per buffer index: the fds clients get (read-only, kept for the
    /// publisher's life so reconnects get the same files) and their lengths.
    shared: Vec<Option<SharedBuffer>>,
    next_id: u64,
    stats: PublisherStats,
    /// Which lines about clients are logged.
    limiter: LogLimiter,
    /// [`begin_stop`](Publisher::begin_stop) was called: every client was
    /// told, and no connection is accepted.
    stopping: bool,
}

impl<S: FrameSource> Publisher<S> {
    /// Listens at `config.socket` (mode `config.mode`) to lend `source`'s frames.
    ///
    /// # Errors
    /// [`PublishError::Bind`] when the path cannot be bound (a live publisher
    /// there, no such folder), [`PublishError::Mode`] when its mode cannot be set.
    pub fn new(source: S, config: PublisherConfig) -> Result<Publisher<S>, PublishError> {
        let listener = Listener::bind(&config.socket, config.mode)?;
        Ok(Publisher::with_listener(source, config, listener))
    }

    /// Lends `source`'s frames on `listener`, a socket already bound and
    /// listening (systemd's, from [`take_systemd_socket`]); `config.socket`
    /// and `config.mode` are not used to bind, and the socket's file is left
    /// in place when the publisher drops. `config.socket` becomes the
    /// socket's own path when it has one (what log lines and errors name).
    ///
    /// # Errors
    /// [`PublishError::NotAListener`] when `listener` is not a listening
    /// `AF_UNIX` stream socket (what it is instead named).
    pub fn from_listener(
        source: S,
        mut config: PublisherConfig,
        listener: OwnedFd,
    ) -> Result<Publisher<S>, PublishError> {
        let (listener, path) = Listener::from_fd(listener)?;
        if !path.as_os_str().is_empty() {
            config.socket = path;
        }
        Ok(Publisher::with_listener(source, config, listener))
    }

    fn with_listener(source: S, config: PublisherConfig, listener: Listener) -> Publisher<S> {
        Publisher {
            source,
            config,
            listener,
            clients: Vec::new(),
            lent: LentFrames::default(),
            shared: Vec::new(),
            next_id: 1,
            stats: PublisherStats::default(),
            limiter: LogLimiter::default(),
            stopping: false,
        }
    }

    /// The source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Clients connected and welcomed now (not the pending connections).
    pub fn clients(&self) -> usize {
        self.clients
            .iter()
            .filter(|c| c.max_leases.is_some())
            .count()
    }

    /// Connections waiting for their `Hello` now.
    pub fn pending(&self) -> usize {
        self.clients
            .iter()
            .filter(|c| c.max_leases.is_none())
            .count()
    }

    /// Frames taken from the source so far.
    pub fn frames(&self) -> u64 {
        self.stats.frames
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.stats.connections
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.config.socket
    }

    /// The counters so far.
    pub fn stats(&self) -> PublisherStats {
        PublisherStats {
            clients: self.clients(),
            pending: self.pending(),
            per_client: self
                .clients
                .iter()
                .filter(|c| c.max_leases.is_some())
                .map(|c| c.stats)
                .collect(),
            ..self.stats.clone()
        }
    }

    /// Serves frames until `stop` is set (checked between frames).
    ///
    /// # Errors
    /// As [`serve_frame`](Self::serve_frame).
    pub fn run(&mut self, stop: &AtomicBool) -> Result<(), PublishError> {
        while !stop.load(Ordering::Relaxed) {
            self.serve_frame(Duration::from_millis(100))?;
        }
        Ok(())
    }

    /// One step: accepts and greets new clients, reads releases, ends expired
    /// leases, then takes one frame (waiting at most `timeout`) and lends it
    /// to every client that said `Hello` and holds fewer frames than its cap.
    /// `Ok(false)`: no frame came in time.
    ///
    /// # Errors
    /// [`PublishError::Source`] when the source failed for good (every client
    /// was sent `Goodbye(SourceGone)` first), [`PublishError::NotReadOnly`]
    /// when a buffer cannot be shared read-only, [`PublishError::Io`] when
    /// accepting fails.
    pub fn serve_frame(&mut self, timeout: Duration) -> Result<bool, PublishError> {
        let now = Instant::now();
        if !self.stopping {
            self.accept(now)?;
        }
        self.read_clients();
        self.end_expired(now);
        self.close_late(now);
        self.limiter.flush(now, |line| log::warn!("{line}"));
        let buffers = self.source.stats().buffers;
        if buffers > 1 && self.lent.len() + 1 >= buffers {
            self.reclaim_oldest(); // keep one buffer for the source: newest frame wins
        }
        let frame = match self.source.next_frame(timeout) {
            Ok(f) => f,
            Err(CaptureError::Timeout { .. } | CaptureError::BufferError { .. }) => {
                return Ok(false)
            }
            Err(CaptureError::NoFreeBuffer { .. }) => {
                self.reclaim_oldest();
                return Ok(false);
            }
            Err(e) => {
                self.say_goodbye(GoodbyeReason::SourceGone);
                return Err(PublishError::Source {
                    socket: self.config.socket.clone(),
                    source: Box::new(e),
                });
            }
        };
        self.stats.frames += 1;
        self.lend(frame)?;
        Ok(true)
    }

    /// Accepts the waiting connections (at most `max_pending` +
    /// `max_clients` a step, so a flood of connections cannot keep the
    /// publisher from its frames): credentials first, before any byte goes
    /// out. An allowed one waits, pending, for its `Hello`; past
    /// `max_pending` the oldest pending connection of the uid with the most
    /// of them is closed.
    fn accept(&mut self, now: Instant) -> Result<(), PublishError> {
        let budget = self
            .config
            .max_pending
            .saturating_add(self.config.max_clients);
        for _ in 0..budget.max(1) {
            let Some(sock) = self.listener.accept().map_err(|source| PublishError::Io {
                socket: self.config.socket.clone(),
                op: "accept",
                source,
            })?
            else {
                break;
            };
            let Ok((uid, gid, pid)) = socket::peer_credentials(sock.as_fd()) else {
                self.stats.rejected += 1;
                continue;
            };
            if !self.allowed(uid, gid) {
                let reason = GoodbyeReason::NotAllowed;
                let _ = socket::send(sock.as_fd(), &ServerMessage::Goodbye(reason).encode(), &[]);
                self.stats.rejected += 1;
                self.note(uid, Kind::NotAllowed, now, || {
                    format!("refused pid {pid} uid {uid} gid {gid}: not allowed")
                });
                continue;
            }
            if self.pending() >= self.config.max_pending.max(1) {
                self.drop_a_pending(now);
            }
            self.stats.connections += 1;
            self.clients.push(Client::new(sock, pid, uid, now));
        }
        Ok(())
    }

    /// Closes the oldest pending connection of the uid with the most
    /// pending connections (room for a new one): the oldest whose whole
    /// `Hello` has not come, so a client that spoke at once and was accepted
    /// among a flood of silent connections is welcomed, not pushed out;
    /// when every one of them sent its `Hello`, the oldest. At most one
    /// `MSG_PEEK` per pending connection.
    fn drop_a_pending(&mut self, now: Instant) {
        let pending = || self.clients.iter().filter(|c| c.max_leases.is_none());
        let most = pending()
            .map(|c| c.stats.uid)
            .max_by_key(|uid| pending().filter(|c| c.stats.uid == *uid).count());
        let Some(uid) = most else { return };
        let (mut oldest, mut oldest_silent) = (None::<usize>, None::<usize>);
        for (i, c) in self.clients.iter().enumerate() {
            if c.max_leases.is_some() || c.stats.uid != uid {
                continue;
            }
            let older =
                |best: Option<usize>| best.is_none_or(|b| c.accepted < self.clients[b].accepted);
            if older(oldest) {
                oldest = Some(i);
            }
            if older(oldest_silent) && !c.hello_waiting() {
                oldest_silent = Some(i);
            }
        }
        if let Some(i) = oldest_silent.or(oldest) {
            let c = self.clients.swap_remove(i);
            let bye = ServerMessage::Goodbye(GoodbyeReason::Full).encode();
            let _ = socket::send(c.sock.as_fd(), &bye, &[]);
            self.stats.pending_dropped += 1;
            let (pid, max) = (c.stats.pid, self.config.max_pending);
            self.note(uid, Kind::PendingDropped, now, || {
                format!(
                    "closed pid {pid} uid {uid} before its Hello: {max} connections were waiting for theirs"
                )
            });
        }
    }

    /// Closes the connections past their deadline: no `Hello` within
    /// `hello_timeout` of being accepted, or a message half-sent for as long.
    fn close_late(&mut self, now: Instant) {
        let limit = self.config.hello_timeout;
        let mut i = 0;
        while i < self.clients.len() {
            let c = &self.clients[i];
            let kind =
                if c.max_leases.is_none() && now.saturating_duration_since(c.accepted) >= limit {
                    Kind::HandshakeTimeout
                } else if c
                    .partial_since
                    .is_some_and(|t| now.saturating_duration_since(t) >= limit)
                {
                    Kind::Stalled
                } else {
                    i += 1;
                    continue;
                };
            let bye = ServerMessage::Goodbye(GoodbyeReason::ProtocolViolation).encode();
            let _ = socket::send(c.sock.as_fd(), &bye, &[]);
            let (pid, uid) = (c.stats.pid, c.stats.uid);
            let ms = limit.as_millis();
            if kind == Kind::HandshakeTimeout {
                self.stats.handshake_timeouts += 1;
                self.note(uid, kind, now, || {
                    format!("closed pid {pid} uid {uid}: no Hello within {ms} ms")
                });
            } else {
                self.stats.stalled += 1;
                self.note(uid, kind, now, || {
                    format!("closed pid {pid} uid {uid}: a message half-sent for {ms} ms")
                });
            }
            self.drop_client(i);
        }
    }

    /// Logs `line` unless a line of `kind` about `uid` was logged in the
    /// last window (then it is only counted, and summed up later).
    fn note(&mut self, uid: u32, kind: Kind, now: Instant, line: impl FnOnce() -> String) {
        if self.limiter.allow(uid, kind, now) {
            log::warn!("{}", line());
        }
    }

    /// Whether a peer of `uid` / `gid` may connect.
    fn allowed(&self, uid: u32, gid: u32) -> bool {
        uid == 0
            || uid == nix::unistd::geteuid().as_raw()
            || self.config.allow_uids.contains(&uid)
            || self.config.allow_gids.contains(&gid)
    }

    /// Reads every client's messages; drops the clients that left or broke
    /// the protocol, ending their leases.
    fn read_clients(&mut self) {
        let (lease_ms, buffers, format) = self.terms();
        let cap = self.config.max_leases;
        let mut i = 0;
        while i < self.clients.len() {
            let lent = &mut self.lent;
            let stats = &mut self.stats;
            let inbox = self.clients[i].read(|client, request| match request {
                // Welcomed below, once its place is checked.
                Request::Hello { .. } => Ok(()),
                Request::Release(id) => {
                    if client.release(id)? {
                        lent.end_lease(id);
                    } else {
                        stats.late_releases += 1;
                    }
                    Ok(())
                }
            });
            match inbox {
                Inbox::Open => {
                    let c = &self.clients[i];
                    match c.hello {
                        Some(asked) if c.max_leases.is_none() => {
                            if self.welcome(i, asked.clamp(1, cap), lease_ms, buffers, format) {
                                i += 1;
                            }
                        }
                        _ => i += 1,
                    }
                }
                Inbox::Closed => self.drop_client(i),
                Inbox::Violation(why) => {
                    let c = &self.clients[i];
                    let (pid, uid) = (c.stats.pid, c.stats.uid);
                    let goodbye = ServerMessage::Goodbye(GoodbyeReason::ProtocolViolation);
                    let _ = socket::send(c.sock.as_fd(), &goodbye.encode(), &[]);
                    self.stats.violations += 1;
                    self.note(uid, Kind::Violation, Instant::now(), || {
                        format!("client pid {pid} uid {uid}: {why}; disconnected")
                    });
                    self.drop_client(i);
                }
            }
        }
    }

    /// Welcomes client `i`, which said `Hello`, when there is a place for it
    /// (in all, and for its uid); else tells it `Full` and closes it.
    /// Whether it stays.
    fn welcome(
        &mut self,
        i: usize,
        granted: u16,
        lease_ms: u32,
        buffers: u16,
        format: WireFormat,
    ) -> bool {
        if self.stopping {
            self.drop_client(i);
            return false;
        }
        let uid = self.clients[i].stats.uid;
        let served = self.clients();
        let of_uid = self
            .clients
            .iter()
            .filter(|c| c.max_leases.is_some() && c.stats.uid == uid)
            .count();
        let (max, uid_cap) = (self.config.max_clients, self.config.uid_cap());
        if served >= max || of_uid >= uid_cap {
            let c = &self.clients[i];
            let bye = ServerMessage::Goodbye(GoodbyeReason::Full).encode();
            let _ = socket::send(c.sock.as_fd(), &bye, &[]);
            self.stats.rejected += 1;
            let pid = c.stats.pid;
            self.note(uid, Kind::Full, Instant::now(), || {
                format!(
                    "refused pid {pid} uid {uid}: full ({served} of {max} clients, {of_uid} of {uid_cap} of uid {uid})"
                )
            });
            self.drop_client(i);
            return false;
        }
        let c = &mut self.clients[i];
        let msg = ServerMessage::Welcome {
            lease_ms,
            max_leases: granted,
            buffers,
            format,
        };
        match socket::send(c.sock.as_fd(), &msg.encode(), &[]) {
            Ok(true) => {
                c.max_leases = Some(granted);
                true
            }
            _ => {
                self.drop_client(i); // its socket took no Welcome: gone
                false
            }
        }
    }

    /// What a `Welcome` says besides the client's cap: the lease in
    /// milliseconds, the buffer count and the format.
    fn terms(&self) -> (u32, u16, WireFormat) {
        (
            u32::try_from(self.config.lease.as_millis()).unwrap_or(u32::MAX),
            u16::try_from(self.source.stats().buffers).unwrap_or(u16::MAX),
            WireFormat::of(self.source.stream_format()).unwrap_or_else(empty_format),
        )
    }

    /// Client `i` is gone: its leases end.
    fn drop_client(&mut self, i: usize) {
        let client = self.clients.swap_remove(i);
        for id in client.leases {
            self.lent.end_lease(id);
        }
    }

    /// Frames whose deadline passed go back; their holders' late releases
    /// will be ignored.
    fn end_expired(&mut self, now: Instant) {
        while let Some(f) = self.lent.take_expired(now) {
            self.stats.expired += 1;
            self.take_back(f);
        }
    }

    /// The oldest lent frame goes back early (the source is short of buffers).
    fn reclaim_oldest(&mut self) {
        if let Some(f) = self.lent.take_oldest() {
            self.stats.reclaimed += 1;
            self.take_back(f);
        }
    }

    /// Ends every lease on `f` and drops it (its buffer goes back).
    fn take_back(&mut self, f: LentFrame) {
        for c in &mut self.clients {
            c.expire(f.id);
        }
        drop(f);
    }

    /// Lends `frame` to every client that wants one.
    fn lend(&mut self, frame: Frame) -> Result<(), PublishError> {
        let index = frame.buffer_index();
        self.share_buffer(index, &frame)?;
        let Some(planes) = self.shared.get(index).and_then(Option::as_ref) else {
            return Ok(()); // share_buffer filled it
        };
        let id = self.next_id;
        self.next_id += 1;
        let mut message = self.frame_message(&frame, id, planes);
        let fds: SmallVec<[BorrowedFd<'_>; MAX_PLANES]> =
            planes.iter().map(|(fd, _)| fd.as_fd()).collect();
        let mut leases = 0;
        let mut i = 0;
        while i < self.clients.len() {
            let c = &mut self.clients[i];
            if !c.wants_a_frame() {
                if c.max_leases.is_some() {
                    c.stats.skips += 1;
                    self.stats.skips += 1;
                }
                i += 1;
                continue;
            }
            message.carries_fds = !c.has_fds_of(index);
            let with: &[BorrowedFd<'_>] = if message.carries_fds { &fds } else { &[] };
            match socket::send(
                c.sock.as_fd(),
                &ServerMessage::Frame(message).encode(),
                with,
            ) {
                Ok(true) => {
                    c.lent(id, index);
                    leases += 1;
                    self.stats.lent += 1;
                    i += 1;
                }
                Ok(false) => {
                    c.stats.skips += 1;
                    self.stats.skips += 1;
                    i += 1;
                }
                Err(_) => {
                    // The client is gone (EPIPE) or its socket broke: its
                    // other leases end now.
                    let gone = self.clients.swap_remove(i);
                    for held in gone.leases {
                        self.lent.end_lease(held);
                    }
                }
            }
        }
        if leases > 0 {
            self.lent.push(LentFrame {
                id,
                leases,
                deadline: Instant::now() + self.config.lease,
                frame,
            });
        }
        Ok(())
    }

    /// Makes sure buffer `index` has its shareable fds, asking the source once.
    fn share_buffer(&mut self, index: usize, frame: &Frame) -> Result<(), PublishError> {
        if self.shared.get(index).is_some_and(Option::is_some) {
            return Ok(());
        }
        let planes = match self.source.read_only_planes(index) {
            Ok(p) => p,
            Err(e) if self.config.writable_fds => {
                log::warn!("buffer {index}: {e}; sending read-write fds (writable_fds is on)");
                writable_planes(frame, self.source.stream_format().format.memory_planes)
                    .map_err(|_| self.not_read_only(index, e))?
            }
            Err(e) => return Err(self.not_read_only(index, e)),
        };
        if self.shared.len() <= index {
            self.shared.resize_with(index + 1, || None);
        }
        self.shared[index] = Some(planes.into_iter().map(|p| (p.fd, p.length)).collect());
        Ok(())
    }

    fn not_read_only(&self, buffer: usize, source: CaptureError) -> PublishError {
        PublishError::NotReadOnly {
            socket: self.config.socket.clone(),
            buffer,
            source: Box::new(source),
        }
    }

    /// The `Frame` message of `frame` as frame `id` (fds flag set per client).
    fn frame_message(&self, frame: &Frame, id: u64, planes: &[(OwnedFd, usize)]) -> FrameMessage {
        let placement = frame.placement();
        let mut spans = [PlaneSpan::default(); MAX_PLANES];
        for (i, (span, (_, length))) in spans.iter_mut().zip(planes).enumerate() {
            *span = PlaneSpan {
                length: *length as u64,
                offset: u32::try_from(placement.offsets[i]).unwrap_or(u32::MAX),
            };
        }
        FrameMessage {
            frame_id: id,
            buffer: u32::try_from(frame.buffer_index()).unwrap_or(u32::MAX),
            sequence: frame.sequence(),
            timestamp_ns: u64::try_from(frame.timestamp().as_nanos()).unwrap_or(u64::MAX),
            bytes_used: frame.bytes_used() as u64,
            synthesized: frame.synthesized(),
            format: WireFormat::of(self.source.stream_format()).unwrap_or_else(empty_format),
            chroma_offset: placement
                .chroma_offset
                .map(|o| u32::try_from(o).unwrap_or(u32::MAX)),
            spans,
            carries_fds: false,
        }
    }

    /// Tells every client `reason` (unless [`begin_stop`](Self::begin_stop)
    /// told them already) and lets them go (their leases end).
    fn say_goodbye(&mut self, reason: GoodbyeReason) {
        let bye = ServerMessage::Goodbye(reason).encode();
        for c in self.clients.drain(..) {
            if !self.stopping {
                let _ = socket::send(c.sock.as_fd(), &bye, &[]);
            }
        }
        self.lent.clear();
    }

    /// Starts a graceful stop: every welcomed client is told
    /// `Goodbye(Stopping)` now, pending connections are closed, and no
    /// connection is accepted from here on. Clients keep their leases until
    /// they release them or close ([`drain`](Self::drain)), or the publisher
    /// drops (then every buffer goes back and the socket file is removed).
    pub fn begin_stop(&mut self) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        let bye = ServerMessage::Goodbye(GoodbyeReason::Stopping).encode();
        self.clients.retain(|c| {
            if c.max_leases.is_none() {
                return false; // pending: holds nothing, closed now
            }
            let _ = socket::send(c.sock.as_fd(), &bye, &[]);
            true
        });
    }

    /// After [`begin_stop`](Self::begin_stop): reads releases and closes for
    /// at most `timeout`, returning early once no frame is lent. Gives the
    /// number of frames still lent (they go back when the publisher drops).
    pub fn drain(&mut self, timeout: Duration) -> usize {
        self.begin_stop();
        let deadline = Instant::now() + timeout;
        loop {
            self.read_clients();
            let now = Instant::now();
            self.end_expired(now);
            if self.lent.len() == 0 || now >= deadline {
                return self.lent.len();
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(5)));
        }
    }

    /// Whether the publisher bound its socket file itself (and removes it
    /// when it drops); `false` for a socket passed by systemd.
    pub fn owns_socket_file(&self) -> bool {
        self.listener.owns_file()
    }

    /// Frames lent now (each with at least one lease out).
    pub fn lent(&self) -> usize {
        self.lent.len()
    }
}

impl<S: FrameSource> Drop for Publisher<S> {
    fn drop(&mut self) {
        self.say_goodbye(GoodbyeReason::Stopping);
        self.listener.remove_file();
        self.limiter.flush_all(|line| log::warn!("{line}"));
    }
}

/// A format block with no planes (never sent: every format zerocam
/// captures has at most two memory planes).
fn empty_format() -> WireFormat {
    WireFormat {
        fourcc: crate::FourCc(*b"\0\0\0\0"),
        width: 0,
        height: 0,
        color: Default::default(),
        plane_count: 0,
        planes: [crate::PlaneLayout {
            bytes_per_line: 0,
            size: 0,
        }; MAX_PLANES],
    }
}

/// Duplicates of `frame`'s own (read-write) plane fds, for `writable_fds`.
fn writable_planes(
    frame: &Frame,
    memory_planes: usize,
) -> zerocam_tensor::Result<Vec<SharedPlane>> {
    let t = frame.tensor();
    let count = memory_planes;
    (0..count)
        .map(|p| {
            let plane = if count == 1 { t.clone() } else { t.plane(p)? };
            let fd = plane.clone_fd()?;
            let length = nix::sys::stat::fstat(&fd).map_or(0, |s| s.st_size as usize);
            Ok(SharedPlane { fd, length })
        })
        .collect()
}
