//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`): not an
//! API — hidden, and free to change. Each `check_*` function takes what the
//! fuzzer made, runs the code that reads what other processes and drivers
//! hand zerocam, and **panics when an invariant breaks** (a round trip that
//! does not come back, a stream whose split changes its messages, a format
//! that does not fit its own buffers, a tensor reading past its file). The
//! targets are thin wrappers around these, so a crash's input becomes a unit
//! test here that calls the same function (docs/testing.md, "Fuzzing").

use std::fmt::Debug;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
use zerocam_cache::ImportCache;
use zerocam_tensor::capsule::{self, ZerocamTensorV1};
use zerocam_tensor::{
    ImageLayout, PixelFormat, PlaneDescriptor, Region, Tensor, TensorDyn, TensorMemory,
};

use crate::frame::plane_memory::PlaneMemory;
use crate::frame::tensor::{frame_tensor_at, Composed};
use crate::share::{
    decode_header, ClientMessage, ReceiveError, Receiver, ServerMessage, HEADER_LEN, MAX_MESSAGE,
};
use crate::v4l2::FormatReply;
use crate::StreamFormat;

pub use crate::share::WireError;

// ---------------------------------------------------------------------------
// 1. The wire decoders, both sides.

/// The kinds and body lengths of docs/sharing.md's table: what the
/// decoders must agree with.
const CLIENT_KINDS: [(u16, usize); 2] = [(0x0001, 4), (0x0002, 8)];
const SERVER_KINDS: [(u16, usize); 3] = [(0x0101, 44), (0x0102, 108), (0x0103, 4)];
const KIND_WELCOME: u16 = 0x0101;
const KIND_FRAME: u16 = 0x0102;
const KIND_GOODBYE: u16 = 0x0103;

/// A side's messages, as the checks see them.
trait Message: Sized + PartialEq + Debug {
    fn decode(kind: u16, body: &[u8]) -> Result<Self, WireError>;
    fn bytes(&self) -> Vec<u8>;
}

impl Message for ClientMessage {
    fn decode(kind: u16, body: &[u8]) -> Result<Self, WireError> {
        ClientMessage::decode(kind, body)
    }
    fn bytes(&self) -> Vec<u8> {
        self.encode().as_bytes().to_vec()
    }
}

impl Message for ServerMessage {
    fn decode(kind: u16, body: &[u8]) -> Result<Self, WireError> {
        ServerMessage::decode(kind, body)
    }
    fn bytes(&self) -> Vec<u8> {
        self.encode().as_bytes().to_vec()
    }
}

/// Whether byte `i` of a `kind` body is one the protocol reserves (or, for
/// a Frame without flag 2, the unused `chroma_offset`): the only bytes a
/// decoder may ignore. Offsets from docs/sharing.md's table; the format
/// block's reserved bytes are its 15..20.
fn ignored(kind: u16, body: &[u8], i: usize) -> bool {
    let in_ = |a: usize, b: usize| (a..b).contains(&i);
    match kind {
        KIND_WELCOME => in_(8 + 15, 8 + 20),
        KIND_GOODBYE => in_(1, 4),
        KIND_FRAME => {
            let chroma_unused = body.get(37).is_some_and(|flags| flags & 2 == 0);
            (chroma_unused && in_(32, 36))
                || in_(38, 40)
                || in_(40 + 15, 40 + 20)
                || in_(88, 92)
                || in_(104, 108)
        }
        _ => false,
    }
}

/// `data` as the publisher reads a client's message: the header, then its
/// body. `None` when `data` is too short for either; else the decoded
/// message (its `Debug`) or the typed error. Panics when the decoder breaks
/// an invariant (see `check_message`).
pub fn check_client_message(data: &[u8]) -> Option<Result<String, WireError>> {
    check_message::<ClientMessage>(data, &CLIENT_KINDS)
}

/// `data` as the subscriber reads a publisher's message; as
/// [`check_client_message`].
pub fn check_server_message(data: &[u8]) -> Option<Result<String, WireError>> {
    check_message::<ServerMessage>(data, &SERVER_KINDS)
}

/// The header and body of `data` through `M`'s decoder. Invariants:
/// - a header error is the right one (magic, then version, then length);
/// - an accepted message has a documented kind and length, and its encoding
///   has the same header, decodes to the same message (round trip), and
///   differs from `data` only in reserved bytes, which it writes as 0;
/// - a refused body says why truthfully (the kind, the lengths).
fn check_message<M: Message>(
    data: &[u8],
    kinds: &[(u16, usize)],
) -> Option<Result<String, WireError>> {
    let header: &[u8; HEADER_LEN] = data.get(..HEADER_LEN)?.try_into().ok()?;
    let magic_ok = header[..4] == *b"ZCSH";
    let version = u16::from_le_bytes([header[4], header[5]]);
    let said = u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as usize;
    let (kind, len) = match decode_header(header) {
        Ok(h) => h,
        Err(e) => {
            let _ = e.to_string();
            match e {
                WireError::BadMagic { found } => assert!(!magic_ok && found == header[..4]),
                WireError::Version { found } => assert!(magic_ok && found == version && found != 1),
                WireError::TooLong { found, max } => {
                    assert!(magic_ok && version == 1);
                    assert_eq!((found, max), (said, MAX_MESSAGE - HEADER_LEN));
                    assert!(found > max);
                }
                e => panic!("decode_header gave a body's error: {e:?}"),
            }
            return Some(Err(e));
        }
    };
    assert!(
        magic_ok && version == 1,
        "a header of another magic or version was taken"
    );
    assert_eq!(kind, u16::from_le_bytes([header[6], header[7]]));
    assert_eq!(len, said);
    assert!(len <= MAX_MESSAGE - HEADER_LEN);
    let body = data.get(HEADER_LEN..HEADER_LEN + len)?;
    let documented = kinds.iter().find(|k| k.0 == kind).map(|k| k.1);
    let decoded = M::decode(kind, body);
    match &decoded {
        Ok(m) => {
            assert_eq!(
                documented,
                Some(len),
                "{m:?} taken with a {len}-byte body of kind {kind:#x}"
            );
            let again = m.bytes();
            assert_eq!(
                again.len(),
                HEADER_LEN + len,
                "{m:?} encodes to another length"
            );
            assert_eq!(&again[..HEADER_LEN], header, "{m:?} encodes another header");
            let body2 = &again[HEADER_LEN..];
            assert_eq!(
                M::decode(kind, body2).as_ref(),
                Ok(m),
                "round trip of {m:?}"
            );
            for (i, (&a, &b)) in body.iter().zip(body2).enumerate() {
                if ignored(kind, body, i) {
                    assert_eq!(b, 0, "{m:?}: reserved body byte {i} encoded as {b}");
                } else {
                    assert_eq!(a, b, "{m:?}: body byte {i} ({a}) lost in decoding");
                }
            }
        }
        Err(WireError::UnknownKind { kind: k }) => {
            assert_eq!(*k, kind);
            assert_eq!(
                documented, None,
                "a documented kind {kind:#x} refused as unknown"
            );
        }
        Err(WireError::Length {
            kind: k,
            expected,
            found,
        }) => {
            assert_eq!((*k, *found), (kind, len));
            assert_eq!(Some(*expected), documented);
            assert_ne!(expected, found);
        }
        Err(WireError::Field { .. }) => assert_eq!(documented, Some(len)),
        Err(e) => panic!("a body decode gave a header's error: {e:?}"),
    }
    Some(decoded.map(|m| format!("{m:?}")).inspect_err(|e| {
        let _ = e.to_string();
    }))
}

// ---------------------------------------------------------------------------
// 2. The receiver: a byte stream, split at any points, through a socket.

/// What the receiver made of a stream: each message's kind, body and fd
/// count, and how the stream ended.
#[derive(Debug)]
pub struct StreamOutcome {
    /// The messages, in order.
    pub messages: Vec<(u16, Vec<u8>, usize)>,
    /// The error that ended the stream (`Closed` for a clean end).
    pub end: String,
    /// fds the writer attached.
    pub fds_sent: usize,
}

/// How a stream must end, read from its bytes alone.
#[derive(Debug, PartialEq)]
enum ModelEnd {
    Closed,
    Wire(WireError),
}

/// The messages of `stream` read at once (no splits, no socket): the
/// reference the receiver is held to.
fn model(stream: &[u8]) -> (Vec<(u16, &[u8])>, ModelEnd) {
    let mut out = Vec::new();
    let mut rest = stream;
    loop {
        let Some(header) = rest.get(..HEADER_LEN) else {
            return (out, ModelEnd::Closed);
        };
        let header: &[u8; HEADER_LEN] = header.try_into().expect("12 bytes");
        let (kind, len) = match decode_header(header) {
            Ok(h) => h,
            Err(e) => return (out, ModelEnd::Wire(e)),
        };
        let Some(body) = rest.get(HEADER_LEN..HEADER_LEN + len) else {
            return (out, ModelEnd::Closed);
        };
        out.push((kind, body));
        rest = &rest[HEADER_LEN + len..];
    }
}

/// The name of the memfd attached to chunks (the receiver takes any fd;
/// the subscriber checks them later).
const SPARE: &str = "zerocam-fuzz-spare";

/// The fd to attach to chunks.
fn spare_fd() -> RawFd {
    static FD: OnceLock<OwnedFd> = OnceLock::new();
    FD.get_or_init(|| memfd_create(SPARE, MFdFlags::MFD_CLOEXEC).expect("memfd_create"))
        .as_raw_fd()
}

/// How many fds of this process are the spare memfd (its copies the kernel
/// installed and the receiver did not close; other threads' fds, a test
/// harness's, do not count).
fn open_spares() -> usize {
    let name = format!("/memfd:{SPARE} (deleted)");
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| {
        d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|l| l.as_os_str() == name.as_str())
            .count()
    })
}

/// Bytes `sock` has sent that its peer has not read yet (`SIOCOUTQ`).
#[allow(unsafe_code)]
fn unread(sock: &UnixStream) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (SIOCOUTQ) writes one int through the pointer, which
    // points to `n`; the fd is open for the call.
    let r = unsafe { libc::ioctl(sock.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    if r < 0 {
        0
    } else {
        n as usize
    }
}

/// Writes `stream` into `sock` in chunks `specs` describe (cycled; each
/// byte: size `(b & 63) + 1`, `b >> 6` fds attached), waiting after each
/// chunk until the reader took it, so the reader sees every split; then
/// ends the stream. `raw` are the fds a chunk attaches (its first `b >> 6`).
/// Returns the fds sent.
fn write_chunks(
    sock: UnixStream,
    stream: &[u8],
    specs: &[u8],
    raw: [RawFd; 3],
    done: &AtomicBool,
) -> usize {
    let mut rest = stream;
    let mut sent_fds = 0;
    for &spec in specs.iter().cycle() {
        if rest.is_empty() || done.load(Ordering::Acquire) {
            break;
        }
        let n = (usize::from(spec & 63) + 1).min(rest.len());
        let fds = usize::from(spec >> 6);
        let rights = [ControlMessage::ScmRights(&raw[..fds])];
        let cmsgs: &[ControlMessage] = if fds == 0 { &[] } else { &rights };
        let iov = [std::io::IoSlice::new(&rest[..n])];
        match sendmsg::<()>(sock.as_raw_fd(), &iov, cmsgs, MsgFlags::MSG_NOSIGNAL, None) {
            Ok(k) => {
                sent_fds += fds;
                rest = &rest[k..];
            }
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break, // the reader ended the stream
        }
        let give_up = Instant::now() + Duration::from_secs(2);
        while unread(&sock) > 0 && !done.load(Ordering::Acquire) && Instant::now() < give_up {
            std::thread::yield_now();
        }
    }
    let _ = sock.shutdown(std::net::Shutdown::Write);
    sent_fds
}

/// `data` as a stream from a peer, through the socket receiver both sides
/// use (`share::socket::Receiver`): `data[0] % 16 + 1` chunk specs follow it, the rest is
/// the stream; with bit 4 of `data[0]` set the reader is impatient (each
/// receive's deadline is now, and a timeout is retried: a message cut by
/// the deadline must resume where it stopped). Invariants: the messages and the end are exactly what the
/// stream holds read at once, however it is split (with fds attached, a
/// prefix of them ending in `TooManyFds`); never a timeout or an I/O error;
/// at most two fds per message, never more than were sent; no fd left open.
pub fn check_receiver(data: &[u8]) -> Option<StreamOutcome> {
    let (&first, rest) = data.split_first()?;
    let n = usize::from(first % 16) + 1;
    let specs = rest.get(..n)?;
    let stream = &rest[n..];
    spare_fd();
    let outcome = receive_all(stream, specs, first & 16 != 0);
    assert_eq!(open_spares(), 1, "fds left open by {outcome:?}");
    let (expected, end) = model(stream);
    let got: Vec<(u16, &[u8])> = outcome
        .messages
        .iter()
        .map(|(k, b, _)| (*k, b.as_slice()))
        .collect();
    let fds_received: usize = outcome.messages.iter().map(|m| m.2).sum();
    assert!(outcome.messages.iter().all(|m| m.2 <= 2), "{outcome:?}");
    assert!(fds_received <= outcome.fds_sent, "{outcome:?}");
    let model_end = match end {
        ModelEnd::Closed => "Closed".to_string(),
        ModelEnd::Wire(e) => format!("Wire({e:?})"),
    };
    if outcome.fds_sent == 0 {
        assert_eq!(got, expected, "split stream's messages, {outcome:?}");
        assert_eq!(outcome.end, model_end, "split stream's end");
    } else {
        assert!(
            got.len() <= expected.len() && got == expected[..got.len()],
            "{outcome:?}"
        );
        let early = outcome.end.starts_with("TooManyFds");
        assert!(
            early || (outcome.end == model_end && got.len() == expected.len()),
            "{outcome:?} should end {model_end}"
        );
    }
    Some(outcome)
}

/// Reads messages from a socket pair until the receiver stops, while a
/// thread writes `stream` into the other end chunk by chunk; `impatient`:
/// with deadlines of now, retrying timeouts.
fn receive_all(stream: &[u8], specs: &[u8], impatient: bool) -> StreamOutcome {
    let (ours, theirs) = UnixStream::pair().expect("a socket pair");
    let done = AtomicBool::new(false);
    let raw = [spare_fd(); 3];
    std::thread::scope(|s| {
        let writer = s.spawn(|| write_chunks(theirs, stream, specs, raw, &done));
        let mut receiver = Receiver::new();
        let mut messages = Vec::new();
        let give_up = Instant::now() + Duration::from_secs(10);
        let end = loop {
            let deadline = if impatient { Instant::now() } else { give_up };
            match receiver.receive(ours.as_fd(), Some(deadline)) {
                Err(ReceiveError::Timeout) if impatient && Instant::now() < give_up => {
                    std::thread::yield_now();
                }
                Ok(r) => {
                    // What each side then does with it.
                    let _ = ServerMessage::decode(r.kind, r.body);
                    let _ = ClientMessage::decode(r.kind, r.body);
                    messages.push((r.kind, r.body.to_vec(), r.fds.len()));
                }
                Err(e) => break e,
            }
        };
        done.store(true, Ordering::Release);
        let _ = ours.shutdown(std::net::Shutdown::Both);
        let fds_sent = writer.join().expect("the writer");
        let end = match end {
            ReceiveError::Closed => "Closed".to_string(),
            ReceiveError::Wire(e) => format!("Wire({e:?})"),
            ReceiveError::TooManyFds { count } => format!("TooManyFds({count})"),
            e @ (ReceiveError::Timeout | ReceiveError::Io(_)) => {
                panic!("the receiver gave {e:?} on a stream that ends")
            }
        };
        StreamOutcome {
            messages,
            end,
            fds_sent,
        }
    })
}

// ---------------------------------------------------------------------------
// 2b. A whole subscriber against a hostile publisher.

/// The name of the publisher's memfds in [`check_subscriber`].
const PUBLISHED: &str = "zerocam-fuzz-published";

/// How many fds of this process are a memfd named `name`.
fn open_memfds(name: &str) -> usize {
    let name = format!("/memfd:{name} (deleted)");
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| {
        d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|l| l.as_os_str() == name.as_str())
            .count()
    })
}

/// A listening socket of this process's own (removed again by the caller).
fn publisher_socket() -> (std::os::unix::net::UnixListener, std::path::PathBuf) {
    let path = std::env::temp_dir().join(format!("zerocam-fuzz-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let l = std::os::unix::net::UnixListener::bind(&path).expect("a listening socket");
    l.set_nonblocking(true).expect("non-blocking accept");
    (l, path)
}

/// What a subscriber made of a hostile publisher's stream.
#[derive(Debug)]
pub struct SubscriberOutcome {
    /// Frames it gave: width, height and fourcc name.
    pub frames: Vec<(usize, usize, &'static str)>,
    /// The error that ended it.
    pub end: String,
}

/// `data` as what a publisher sends a [`Subscriber`](crate::share::Subscriber):
/// `data[0] % 16 + 1` chunk specs (as [`check_receiver`]'s; the fds a chunk
/// attaches are the first of three files), the three files (seal u8, length
/// u32 each), then the stream (a Welcome, frames, ...). The subscriber
/// connects, reads the Welcome and takes frames until an error. Invariants:
/// never a panic, a timeout or a hang; every frame has the Welcome's size
/// and format, and its planes' bytes lie inside the publisher's files and
/// read as those files' bytes; once it is dropped, no copy of the files'
/// fds is left open.
pub fn check_subscriber(data: &[u8]) -> Option<SubscriberOutcome> {
    use crate::FrameSource;
    let (&first, rest) = data.split_first()?;
    let n = usize::from(first % 16) + 1;
    let specs = rest.get(..n)?;
    let mut b = Bytes(rest.get(n..)?);
    let cases: Vec<FileCase> = (0..3)
        .map(|_| {
            let c = file_case(&mut b);
            FileCase {
                len: c.len % (MAX_READ_PLANE + 1),
                ..c
            }
        })
        .collect();
    let stream = b.0;
    // One at a time: one listener, and the fd count is the process's.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (listener, path) = publisher_socket();
    let listener = &listener;
    let files: Vec<(OwnedFd, FileCase, zerocam_tensor::FdIdentity)> = cases
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let fd = named_memory_file(PUBLISHED, c, 10 + i as u32);
            let id = zerocam_tensor::FdIdentity::of(fd.as_fd()).expect("fstat");
            (fd, c, id)
        })
        .collect();
    let raw = [0, 1, 2].map(|i| files[i].0.as_raw_fd());
    let done = AtomicBool::new(false);
    let outcome = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let give_up = Instant::now() + Duration::from_secs(10);
            let sock = loop {
                match listener.accept() {
                    Ok((sock, _)) => break Some(sock),
                    Err(_) if done.load(Ordering::Acquire) || Instant::now() > give_up => {
                        break None
                    }
                    Err(_) => std::thread::sleep(Duration::from_micros(50)),
                }
            };
            let sock = sock?;
            sock.set_nonblocking(false).expect("a blocking socket");
            Some(write_chunks(sock, stream, specs, raw, &done))
        });
        let mut frames = Vec::new();
        let end = match crate::share::Subscriber::connect(&path) {
            Err(e) => e,
            Ok(mut sub) => {
                let format = sub.stream_format().clone();
                let end = loop {
                    match sub.next_frame(Duration::from_secs(10)) {
                        Ok(frame) => {
                            let t = frame.tensor();
                            let (w, h) = (format.width as usize, format.height as usize);
                            assert_eq!((t.width(), t.height()), (Some(w), Some(h)), "{format:?}");
                            assert_eq!(t.format(), Some(format.format.pixel));
                            check_published(t, &files);
                            frames.push((w, h, format.format.name));
                        }
                        Err(e) => break e,
                    }
                };
                drop(sub);
                end
            }
        };
        done.store(true, Ordering::Release);
        let _ = writer.join().expect("the publisher thread");
        if matches!(end, crate::CaptureError::Timeout { .. }) {
            panic!("a subscriber timed out on a stream that ends: {end}");
        }
        SubscriberOutcome {
            frames,
            end: end.to_string(),
        }
    });
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        open_memfds(PUBLISHED),
        files.len(),
        "the subscriber left copies of the publisher's fds open: {outcome:?}"
    );
    Some(outcome)
}

/// A frame's planes checked inside the publisher's `files`, found by
/// identity.
fn check_published(t: &Tensor<u8>, files: &[(OwnedFd, FileCase, zerocam_tensor::FdIdentity)]) {
    let file_of = |p: &Tensor<u8>| {
        let id = p.fd_identity().expect("a frame plane with a file");
        files
            .iter()
            .enumerate()
            .find(|f| f.1 .2 == id)
            .map(|(i, f)| (f.1.len, 10 + i as u32))
            .expect("a frame plane in a file the publisher sent")
    };
    let planes = t.format().map_or(1, PixelFormat::plane_count);
    for i in 0..planes {
        let p = t.plane(i).expect("a plane of a frame");
        let file = file_of(&p);
        check_inside(&p, &[file], 0);
    }
}

// ---------------------------------------------------------------------------
// 3. A driver's format reply.

/// The largest plane the format check reads through a map (bigger ones are
/// laid and checked by their numbers), and the largest file the subscriber
/// check makes.
const MAX_READ_PLANE: usize = 256 << 10;

/// `reply` through [`FormatReply::stream_format`]. Invariants: an accepted
/// format is the reply's fourcc and size with the format's memory planes,
/// and a frame laid on buffers of exactly its planes' `sizeimage` (as a
/// V4L2 stream or a subscriber lays one) comes out, with the format's size,
/// each plane inside its buffer (and read through a map when small).
pub fn check_format_reply(reply: &FormatReply) -> Result<StreamFormat, String> {
    let format = reply
        .stream_format(Path::new("/dev/fuzz"))
        .map_err(|e| e.to_string())?;
    assert_eq!(format.format.fourcc, reply.fourcc);
    assert_eq!((format.width, format.height), (reply.width, reply.height));
    assert_eq!(format.planes.len(), format.format.memory_planes);
    assert_eq!(format.planes.len(), usize::from(reply.num_planes));
    assert!(
        format.planes.iter().all(|p| p.size > 0),
        "{format:?} accepted with an empty plane"
    );
    // Buffers of exactly `sizeimage` (sparse memfds: any size is cheap).
    let planes: Vec<PlaneMemory> = format
        .planes
        .iter()
        .map(|p| {
            let t = Tensor::<u8>::new(&[p.size as usize], Some(TensorMemory::Shm), None)
                .expect("a memfd plane");
            PlaneMemory::owned(t).expect("a plane with an fd")
        })
        .collect();
    let mut cache = ImportCache::new(4);
    let t = frame_tensor_at(
        &mut cache,
        &format,
        &planes,
        &[0, 0],
        None,
        &mut Composed::default(),
    )
    .unwrap_or_else(|e| panic!("{format:?} accepted, but its buffers cannot hold a frame: {e}"));
    assert_eq!(t.width(), Some(format.width as usize));
    assert_eq!(t.height(), Some(format.height as usize));
    assert_eq!(t.format(), Some(format.format.pixel));
    for i in 0..format.format.pixel.plane_count() {
        let plane = t.plane(i).expect("a plane of the frame");
        let pin = plane.pin_host().expect("a pin of the frame");
        let buffer = if format.planes.len() == 2 { i } else { 0 };
        let end = pin.buffer_offset() + pin.len();
        assert!(
            end <= format.planes[buffer].size as usize,
            "plane {i} ends at {end}: {format:?}"
        );
        if pin.len() <= MAX_READ_PLANE {
            drop(pin);
            let map = plane.map_read().expect("a map of the frame");
            assert!(map.iter().all(|&b| b == 0));
        }
    }
    Ok(format)
}

// ---------------------------------------------------------------------------
// 4. Tensor geometry over a memory file.

/// How the memory file is prepared before the import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// Sealed against shrinking (what the pattern source and our shm are).
    Shrink,
    /// Sealed against shrinking and growing.
    ShrinkGrow,
    /// Sealable, not sealed: `from_fd` seals it.
    Sealable,
    /// Not sealable: refused (it could shrink under the map).
    Unsealable,
}

/// A file to import: its length and how it is sealed.
#[derive(Debug, Clone, Copy)]
pub struct FileCase {
    /// Bytes of the file.
    pub len: usize,
    /// How it is sealed.
    pub seal: Seal,
}

/// What is laid on the file.
#[derive(Debug, Clone)]
pub enum TensorOp {
    /// `Tensor::from_fd(fd, shape)`, of `u8` or of `u16` (`wide`).
    Array {
        /// The shape.
        shape: Vec<usize>,
        /// `u16` elements.
        wide: bool,
    },
    /// `from_fd` of the whole file, then `with_image(layout)`, then a view,
    /// a batch element and a plane of it.
    Image {
        /// The image.
        layout: ImageLayout,
        /// A region to view.
        view: Option<Region>,
        /// A batch element to take.
        batch: Option<usize>,
    },
    /// `Tensor::import_planes` of an NV12/NV16 image, from the file (and a
    /// second file, when given) at the descriptors' strides and offsets.
    Planes {
        /// Width.
        width: usize,
        /// Height.
        height: usize,
        /// NV12 or NV16 (others are refused).
        format: PixelFormat,
        /// Luma: row stride (`None`: packed) and offset.
        luma: (Option<usize>, usize),
        /// Chroma: row stride (`None`: packed) and offset.
        chroma: (Option<usize>, usize),
        /// The chroma's own file, else the luma's.
        chroma_file: Option<FileCase>,
    },
}

/// One fuzz case of the tensor target.
#[derive(Debug, Clone)]
pub struct TensorCase {
    /// The (first) file.
    pub file: FileCase,
    /// What is laid on it.
    pub op: TensorOp,
}

/// The most bytes a fuzzed file gets.
pub const MAX_FILE: usize = 1 << 20;

/// The byte at offset `i` of file `seed` (so a tensor reading the wrong place
/// or the wrong file is seen).
fn pattern(seed: u32, i: usize) -> u8 {
    ((i as u32 ^ seed).wrapping_mul(0x9E37_79B1) >> 24) as u8
}

/// A memfd of `case.len` bytes of `pattern(seed, _)`, sealed as it says.
fn memory_file(case: FileCase, seed: u32) -> OwnedFd {
    named_memory_file("zerocam-fuzz", case, seed)
}

/// [`memory_file`] under another name.
fn named_memory_file(name: &str, case: FileCase, seed: u32) -> OwnedFd {
    let flags = match case.seal {
        Seal::Unsealable => MFdFlags::MFD_CLOEXEC,
        _ => MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
    };
    let fd = memfd_create(name, flags).expect("memfd_create");
    let mut file = File::from(fd);
    let bytes: Vec<u8> = (0..case.len).map(|i| pattern(seed, i)).collect();
    file.write_all(&bytes).expect("the file's bytes");
    let fd = OwnedFd::from(file);
    let seals = match case.seal {
        Seal::Shrink => Some(SealFlag::F_SEAL_SHRINK),
        Seal::ShrinkGrow => Some(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW),
        Seal::Sealable | Seal::Unsealable => None,
    };
    if let Some(s) = seals {
        fcntl(&fd, FcntlArg::F_ADD_SEALS(s)).expect("seals");
    }
    fd
}

/// `t`'s bytes, checked against the files: its span lies inside its file and
/// holds the file's bytes at that place; uniform strides stay inside the
/// span. `files[b]` is buffer `b`'s length and pattern; the mapped buffer is
/// the whole file, or (a peer's file, `Tensor::from_peer_fd`) a prefix of it.
fn check_inside<T: zerocam_tensor::Element>(t: &Tensor<T>, files: &[(usize, u32)], buffer: usize) {
    let (len, seed) = files[buffer];
    let pin = t.pin_host().expect("a host pin of an imported tensor");
    assert!(
        pin.buffer_len() <= len,
        "a {}-byte buffer over a {len}-byte file",
        pin.buffer_len()
    );
    let (start, span) = (pin.buffer_offset(), pin.len());
    assert!(
        start.checked_add(span).is_some_and(|end| end <= len),
        "span {start}+{span} past a {len}-byte file"
    );
    let elem = std::mem::size_of::<T>();
    if let Some(strides) = t.strides() {
        let last = t
            .shape()
            .iter()
            .zip(&strides)
            .map(|(&d, &s)| (d - 1) * s)
            .sum::<usize>()
            + elem;
        assert!(
            last <= span,
            "shape {:?} strides {strides:?} reach {last}, span {span}",
            t.shape()
        );
    }
    drop(pin);
    let map = t.map_read().expect("a map of an imported tensor");
    assert_eq!(map.len() * elem, span);
    let bytes: Vec<u8> = map.iter().flat_map(bytes_of).collect();
    for (k, &b) in bytes.iter().enumerate() {
        assert_eq!(
            b,
            pattern(seed, start + k),
            "byte {k} of the span at {start}"
        );
    }
}

/// The bytes of a plain-data element.
fn bytes_of<T: zerocam_tensor::Element>(v: &T) -> Vec<u8> {
    let n = std::mem::size_of::<T>();
    let mut out = vec![0u8; n];
    #[allow(unsafe_code)]
    // SAFETY: `Element`s are plain numbers (u8..f64, f16): `n` initialized
    // bytes at `v`, copied into a buffer of `n`.
    unsafe {
        std::ptr::copy_nonoverlapping((v as *const T).cast::<u8>(), out.as_mut_ptr(), n)
    };
    out
}

/// `case` through `from_fd` / `with_image` / `import_planes`. Invariants: a
/// file that can shrink is refused; anything else is a typed error or a
/// tensor (and each view, batch element and plane of it) whose bytes lie
/// inside its file and read as the file's bytes at that place — never a
/// panic, never a map past the file. Returns the tensor's shape, or the
/// error.
pub fn check_tensor(case: &TensorCase) -> Result<Vec<usize>, String> {
    let file = FileCase {
        len: case.file.len.min(MAX_FILE),
        ..case.file
    };
    let fd = memory_file(file, 1);
    let refused = |imported: bool| {
        assert!(
            !(imported && file.seal == Seal::Unsealable),
            "an unsealable memfd was imported"
        );
    };
    let files = [(file.len, 1), (0, 2)];
    match &case.op {
        TensorOp::Array { shape, wide } => {
            let (got, need) = if *wide {
                let r = Tensor::<u16>::from_fd(fd, shape, None);
                refused(r.is_ok());
                let r = r.map_err(|e| e.to_string())?;
                check_inside(&r, &files, 0);
                assert_eq!(r.pin_host().map(|p| p.buffer_len()).ok(), Some(file.len));
                (r.shape().to_vec(), r.size())
            } else {
                let r = Tensor::<u8>::from_fd(fd, shape, None);
                refused(r.is_ok());
                let r = r.map_err(|e| e.to_string())?;
                check_inside(&r, &files, 0);
                (r.shape().to_vec(), r.size())
            };
            assert_eq!(&got, shape);
            assert!(need <= file.len);
            Ok(got)
        }
        TensorOp::Image {
            layout,
            view,
            batch,
        } => {
            let whole = Tensor::<u8>::from_fd(fd, &[file.len.max(1)], None);
            refused(whole.is_ok());
            let whole = whole.map_err(|e| e.to_string())?;
            let t = whole.with_image(*layout).map_err(|e| e.to_string())?;
            check_image(&t, &files);
            if let Some(r) = view {
                if let Ok(v) = t.view(*r) {
                    check_image(&v, &files);
                }
            }
            if let Some(n) = batch {
                if let Ok(b) = t.batch(*n) {
                    check_image(&b, &files);
                }
            }
            Ok(t.shape().to_vec())
        }
        TensorOp::Planes {
            width,
            height,
            format,
            luma,
            chroma,
            chroma_file,
        } => {
            let second = chroma_file.map(|c| FileCase {
                len: c.len.min(MAX_FILE),
                ..c
            });
            let chroma_fd = match second {
                Some(c) => memory_file(c, 2),
                None => nix::unistd::dup(&fd).expect("dup"),
            };
            let descriptor = |fd: OwnedFd, (stride, offset): (Option<usize>, usize)| {
                let d = PlaneDescriptor::from_owned(fd).with_offset(offset);
                match stride {
                    Some(s) => d.with_stride(s),
                    None => d,
                }
            };
            let r = Tensor::<u8>::import_planes(
                *width,
                *height,
                *format,
                descriptor(fd, *luma),
                descriptor(chroma_fd, *chroma),
            );
            if file.seal == Seal::Unsealable || second.is_some_and(|c| c.seal == Seal::Unsealable) {
                assert!(r.is_err(), "an unsealable memfd was imported");
            }
            let t = r.map_err(|e| e.to_string())?;
            let files = [(file.len, 1), second.map_or((file.len, 1), |c| (c.len, 2))];
            check_image(&t, &files);
            Ok(t.shape().to_vec())
        }
    }
}

/// An image tensor and each of its planes, checked inside their files.
fn check_image<T: zerocam_tensor::Element>(t: &Tensor<T>, files: &[(usize, u32)]) {
    let placement = t.placement();
    let planes = placement.as_ref().map_or(1, |p| p.root.planes().len());
    let split = placement
        .as_ref()
        .is_some_and(|p| p.root.buffer_count() > 1);
    if !split {
        check_inside(t, files, 0);
    }
    for i in 0..planes {
        let buffer = placement
            .as_ref()
            .and_then(|p| p.root.planes().get(i))
            .map_or(0, |p| p.buffer);
        if let Ok(p) = t.plane(i) {
            check_inside(&p, files, buffer);
        }
    }
}

// ---------------------------------------------------------------------------
// 5. The `zerocam.tensor.v1` capsule's import (`Tensor.from_zerocam`'s decoding).

/// One fuzz case of the capsule target: the file its fd is, and the struct
/// (its `fd` is set to the file's number).
#[derive(Debug, Clone, Copy)]
pub struct CapsuleCase {
    /// The file.
    pub file: FileCase,
    /// The capsule's struct.
    pub desc: ZerocamTensorV1,
}

/// `zerocam_tensor::capsule::import` of `case.desc` over a memfd of
/// `case.file`. Invariants: a file that can shrink is refused; anything else
/// is a typed error or a tensor of exactly the capsule's shape, strides and
/// element type (and format, for an image) whose bytes (and each plane's) lie
/// inside the file and read as the file's bytes at that place. Returns the
/// shape, or the error.
pub fn check_capsule(case: &CapsuleCase) -> Result<Vec<usize>, String> {
    let file = FileCase {
        len: case.file.len.min(MAX_FILE),
        ..case.file
    };
    let fd = memory_file(file, 1);
    let mut desc = case.desc;
    desc.fd = fd.as_raw_fd();
    let r = capsule::import(&desc, fd);
    assert!(
        !(r.is_ok() && file.seal == Seal::Unsealable),
        "an unsealable memfd was imported"
    );
    let t = r.map_err(|e| e.to_string())?;
    let n = desc.ndim as usize;
    let want = |v: &[i64]| v[..n].iter().map(|&x| x as usize).collect::<Vec<_>>();
    assert_eq!(t.shape(), &want(&desc.shape)[..], "the capsule's shape");
    assert_eq!(
        t.strides(),
        Some(want(&desc.strides)),
        "the capsule's strides"
    );
    assert_eq!(Some(t.dtype()), capsule::dtype_of(desc.dtype));
    let image = desc.format[0] != 0;
    assert_eq!(
        t.format().is_some(),
        image,
        "an image iff a format is named"
    );
    if image {
        assert_eq!(t.plane_offset(), desc.byte_offset as usize);
    }
    let files = [(file.len, 1)];
    match &t {
        TensorDyn::U8(t) => check_image(t, &files),
        TensorDyn::I8(t) => check_image(t, &files),
        TensorDyn::U16(t) => check_image(t, &files),
        TensorDyn::I16(t) => check_image(t, &files),
        TensorDyn::U32(t) => check_image(t, &files),
        TensorDyn::I32(t) => check_image(t, &files),
        TensorDyn::F16(t) => check_image(t, &files),
        TensorDyn::F32(t) => check_image(t, &files),
        TensorDyn::F64(t) => check_image(t, &files),
        other => panic!("a {} tensor the check does not know", other.dtype()),
    }
    Ok(t.shape().to_vec())
}

/// A capsule case from bytes: the file (seal u8, length u32), then the
/// struct's fields in its C order, little-endian, `fd` left out: abi
/// (u32), dtype code, bits (u8 each) and lanes (u16), ndim (u32),
/// byte offset (u64), 8 dims and 8 strides (i64 each), the format name (16
/// bytes), width, height, row stride (u32 each).
pub fn capsule_case_from_bytes(data: &[u8]) -> CapsuleCase {
    let mut b = Bytes(data);
    let file = file_case(&mut b);
    let abi_version = b.u32();
    let dtype = capsule::DLDataType {
        code: b.u8(),
        bits: b.u8(),
        lanes: u16::from_le_bytes([b.u8(), b.u8()]),
    };
    let ndim = b.u32();
    let byte_offset = b.size() as u64;
    let shape = std::array::from_fn(|_| b.size() as i64);
    let strides = std::array::from_fn(|_| b.size() as i64);
    let format = b.take::<16>();
    CapsuleCase {
        file,
        desc: ZerocamTensorV1 {
            abi_version,
            fd: -1,
            dtype,
            ndim,
            byte_offset,
            shape,
            strides,
            format,
            width: b.u32(),
            height: b.u32(),
            row_stride: b.u32(),
        },
    }
}

/// The bytes [`capsule_case_from_bytes`] reads back as `case`.
pub fn capsule_case_bytes(case: &CapsuleCase) -> Vec<u8> {
    let d = &case.desc;
    let seal = match case.file.seal {
        Seal::Shrink => 0u8,
        Seal::ShrinkGrow => 1,
        Seal::Sealable => 2,
        Seal::Unsealable => 3,
    };
    let mut v = vec![seal];
    v.extend_from_slice(&(case.file.len as u32).to_le_bytes());
    v.extend_from_slice(&d.abi_version.to_le_bytes());
    v.extend_from_slice(&[d.dtype.code, d.dtype.bits]);
    v.extend_from_slice(&d.dtype.lanes.to_le_bytes());
    v.extend_from_slice(&d.ndim.to_le_bytes());
    v.extend_from_slice(&d.byte_offset.to_le_bytes());
    for x in d.shape.iter().chain(&d.strides) {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.extend_from_slice(&d.format);
    for x in [d.width, d.height, d.row_stride] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v
}

// ---------------------------------------------------------------------------
// The targets' inputs: fixed little-endian layouts (missing bytes read as
// 0), so a seed is easy to write from a real value (the tests do).

/// Reads little-endian fields; past the end, zeros.
#[derive(Debug)]
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0; N];
        let n = N.min(self.0.len());
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        b
    }
    /// A byte.
    pub fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    /// A `u32`.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    /// A `u64` as a `usize`.
    pub fn size(&mut self) -> usize {
        u64::from_le_bytes(self.take()) as usize
    }
    /// A flag byte (low bit), then a `size` when it is set.
    pub fn option(&mut self) -> Option<usize> {
        let on = self.u8() & 1 == 1;
        let v = self.size();
        on.then_some(v)
    }
}

/// A driver's reply from bytes: fourcc, width, height, field (u32 each),
/// `num_planes` (u8), a count of plane entries (u8, at most 8), the entries
/// (`bytesperline`, `sizeimage`: u32 each), colorspace, Y'CbCr encoding and
/// quantization (u32 each).
pub fn format_reply_from_bytes(data: &[u8]) -> FormatReply {
    let mut b = Bytes(data);
    let (fourcc, width, height, field) = (b.u32(), b.u32(), b.u32(), b.u32());
    let num_planes = b.u8();
    let count = usize::from(b.u8() % 9);
    let planes = (0..count)
        .map(|_| crate::PlaneLayout {
            bytes_per_line: b.u32(),
            size: b.u32(),
        })
        .collect();
    FormatReply {
        fourcc: crate::FourCc::from_u32(fourcc),
        width,
        height,
        field,
        num_planes,
        planes,
        colorimetry: crate::Colorimetry {
            colorspace: b.u32(),
            ycbcr_enc: b.u32(),
            quantization: b.u32(),
        },
    }
}

fn file_case(b: &mut Bytes<'_>) -> FileCase {
    let seal = match b.u8() % 4 {
        0 => Seal::Shrink,
        1 => Seal::ShrinkGrow,
        2 => Seal::Sealable,
        _ => Seal::Unsealable,
    };
    FileCase {
        len: b.u32() as usize % (MAX_FILE + 1),
        seal,
    }
}

/// A tensor case from bytes: the op (u8: array, image, planes), the file
/// (seal u8, length u32), then the op's fields (sizes as u64, options as a
/// flag byte and a u64, pixel formats as an index into `PixelFormat::ALL`).
pub fn tensor_case_from_bytes(data: &[u8]) -> TensorCase {
    let mut b = Bytes(data);
    let op = b.u8() % 3;
    let file = file_case(&mut b);
    let format = |b: &mut Bytes<'_>| PixelFormat::ALL[usize::from(b.u8()) % PixelFormat::ALL.len()];
    let op = match op {
        0 => {
            let wide = b.u8() & 1 == 1;
            let ndim = usize::from(b.u8() % 5);
            TensorOp::Array {
                shape: (0..ndim).map(|_| b.size()).collect(),
                wide,
            }
        }
        1 => {
            let format = format(&mut b);
            let (width, height) = (b.size(), b.size());
            let layout = ImageLayout {
                format,
                width,
                height,
                row_stride: b.option(),
                plane_offset: b.option(),
                batch: b.size(),
                start_offset: b.size(),
            };
            let view = b
                .option()
                .map(|x| Region::new(x, b.size(), b.size(), b.size()));
            TensorOp::Image {
                layout,
                view,
                batch: b.option(),
            }
        }
        _ => {
            let format = format(&mut b);
            let (width, height) = (b.size(), b.size());
            let luma = (b.option(), b.size());
            let chroma = (b.option(), b.size());
            let chroma_file = (b.u8() & 1 == 1).then(|| file_case(&mut b));
            TensorOp::Planes {
                width,
                height,
                format,
                luma,
                chroma,
                chroma_file,
            }
        }
    };
    TensorCase { file, op }
}

#[cfg(test)]
#[path = "fuzzing_tests.rs"]
mod tests;
