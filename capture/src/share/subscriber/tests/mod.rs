//! The subscriber against an in-test publisher that speaks the wire
//! protocol (wire.rs + socket.rs) over a real bound socket, with real memfds
//! re-opened read-only: frames, imports, releases, reconnects, and a hostile
//! publisher's every kind of bad message, each a typed error.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zerocam_tensor::{Error as TensorError, Tensor, TensorMemory};

use super::*;
use crate::share::socket::{self, Receiver};
use crate::share::wire::{ClientMessage, FrameMessage, PlaneSpan, MAX_PLANES};
use crate::share::{GoodbyeReason, WireError};
use crate::{PatternConfig, PatternSource, Synthesized};

mod hostile;

const WAIT: Duration = Duration::from_secs(5);

/// A socket path of its own for each test.
fn socket_path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("zerocam-sub-{}-{name}.sock", std::process::id()));
    let _ = std::fs::remove_file(&p); // left by an earlier run, or absent
    p
}

/// `name`'s stream format as the pattern source lays it out (rows 64-byte aligned).
fn format(name: &str, w: u32, h: u32) -> StreamFormat {
    let source = PatternSource::new(PatternConfig::new(name.parse().unwrap(), w, h)).unwrap();
    source.stream_format().clone()
}

/// One publisher buffer: a memfd per memory plane, each filled with `fill`.
struct Buffer {
    planes: Vec<Tensor<u8>>,
}

impl Buffer {
    fn new(format: &StreamFormat, fill: u8) -> Buffer {
        let planes = format
            .planes
            .iter()
            .map(|p| {
                let t = Tensor::<u8>::new(&[p.size as usize], Some(TensorMemory::Shm), None);
                let t = t.unwrap();
                t.map_write().unwrap().fill(fill);
                t
            })
            .collect();
        Buffer { planes }
    }

    /// A read-only fd of each plane, re-opened through /proc/self/fd.
    fn read_only_fds(&self) -> Vec<OwnedFd> {
        self.planes
            .iter()
            .map(|t| read_only(t.fd().unwrap()))
            .collect()
    }
}

fn read_only(fd: BorrowedFd<'_>) -> OwnedFd {
    File::open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .unwrap()
        .into()
}

/// The accepted end of a connection, speaking as a publisher.
struct Peer {
    sock: UnixStream,
    receiver: Receiver,
    wire: WireFormat,
}

impl Peer {
    /// The client's `Hello`'s max_leases.
    fn hello(&mut self) -> u16 {
        match self.client_message() {
            ClientMessage::Hello { max_leases } => max_leases,
            other => panic!("expected Hello, got {other:?}"),
        }
    }

    fn client_message(&mut self) -> ClientMessage {
        let r = self
            .receiver
            .receive(self.sock.as_fd(), Some(Instant::now() + WAIT));
        let r = r.unwrap();
        ClientMessage::decode(r.kind, r.body).unwrap()
    }

    /// The id of the client's next `Release`.
    fn release(&mut self) -> u64 {
        match self.client_message() {
            ClientMessage::Release { frame_id } => frame_id,
            other => panic!("expected Release, got {other:?}"),
        }
    }

    fn send(&self, msg: ServerMessage, fds: &[OwnedFd]) {
        let fds: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
        assert!(socket::send(self.sock.as_fd(), &msg.encode(), &fds).unwrap());
    }

    fn welcome(&self, buffers: u16, max_leases: u16) {
        let format = self.wire;
        self.send(
            ServerMessage::Welcome {
                lease_ms: 2000,
                max_leases,
                buffers,
                format,
            },
            &[],
        );
    }

    /// Frame `id` in `buffer`, its planes `lengths` long.
    fn frame(&self, id: u64, buffer: u32, lengths: &[u64], fds: &[OwnedFd]) {
        let f = frame_message(self.wire, id, buffer, lengths, !fds.is_empty());
        self.send(ServerMessage::Frame(f), fds);
    }

    /// Frame `id` in `buffer`, sending its fds when `first`.
    fn lend(&self, id: u64, buffer: u32, b: &Buffer, first: bool) {
        let lengths: Vec<u64> = b.planes.iter().map(|t| t.len() as u64).collect();
        let fds = if first { b.read_only_fds() } else { vec![] };
        self.frame(id, buffer, &lengths, &fds);
    }
}

fn frame_message(
    wire: WireFormat,
    id: u64,
    buffer: u32,
    lengths: &[u64],
    fds: bool,
) -> FrameMessage {
    let mut spans = [PlaneSpan::default(); MAX_PLANES];
    for (s, &length) in spans.iter_mut().zip(lengths) {
        *s = PlaneSpan { length, offset: 0 };
    }
    FrameMessage {
        frame_id: id,
        buffer,
        sequence: id as u32 * 10,
        timestamp_ns: 1_000_000 + id,
        bytes_used: lengths.iter().sum(),
        synthesized: Synthesized::NONE,
        format: wire,
        chroma_offset: None,
        spans,
        carries_fds: fds,
    }
}

/// A publisher at a fresh socket path running `script` on each of
/// `connections` accepted connections, in a thread.
fn publisher(
    name: &str,
    format: &StreamFormat,
    connections: usize,
    script: impl Fn(usize, &mut Peer) + Send + 'static,
) -> (PathBuf, JoinHandle<()>) {
    let path = socket_path(name);
    let listener = UnixListener::bind(&path).unwrap();
    let wire = WireFormat::of(format).unwrap();
    let thread = std::thread::spawn(move || {
        for n in 0..connections {
            let (sock, _) = listener.accept().unwrap();
            let mut peer = Peer {
                sock,
                receiver: Receiver::new(),
                wire,
            };
            script(n, &mut peer);
        }
    });
    (path, thread)
}

fn share_error(e: CaptureError) -> SubscribeError {
    match e {
        CaptureError::Share(e) => e,
        other => panic!("expected a share error, got {other}"),
    }
}

#[test]
fn frames_come_imported_once_read_only_and_released_on_drop() {
    let nv12 = format("NV12", 64, 32);
    let buffers: Vec<_> = (0..3).map(|i| Buffer::new(&nv12, 10 + i)).collect();
    let (path, thread) = publisher("frames", &nv12, 1, move |_, p| {
        assert_eq!(p.hello(), 2);
        p.welcome(3, 2);
        for id in 0..9u64 {
            let b = (id % 3) as u32;
            p.lend(id, b, &buffers[b as usize], id < 3);
            assert_eq!(p.release(), id, "the frame's release");
        }
    });
    let mut s = Subscriber::connect(&path).unwrap();
    assert_eq!(s.stream_format(), &nv12);
    assert_eq!(s.name(), path.as_path());
    for id in 0..9u64 {
        let f = s.next_frame(WAIT).unwrap();
        assert_eq!(
            (f.sequence(), f.buffer_index()),
            (id as u32 * 10, id as usize % 3)
        );
        assert_eq!(f.timestamp(), Duration::from_nanos(1_000_000 + id));
        let luma = f.tensor().plane(0).unwrap();
        assert_eq!(luma.shape(), &[32, 64]);
        let want = 10 + (id % 3) as u8;
        assert!(luma.map_read().unwrap().iter().all(|&v| v == want));
        assert!(
            matches!(f.tensor().map_write(), Err(TensorError::ReadOnly { .. })),
            "a client cannot write into a frame"
        );
    }
    let stats = s.stats();
    assert_eq!((stats.frames, stats.buffers, stats.planes), (9, 3, 1));
    assert_eq!(
        (stats.cache.misses, stats.cache.hits),
        (3, 6),
        "imports == buffers x planes"
    );
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
}

#[test]
fn two_buffer_frames_carry_an_fd_per_plane() {
    let nv12m = format("NV12M", 64, 32);
    let buffers: Vec<_> = (0..2).map(|i| Buffer::new(&nv12m, 20 + i)).collect();
    let (path, thread) = publisher("nv12m", &nv12m, 1, move |_, p| {
        p.hello();
        p.welcome(2, 2);
        for id in 0..4u64 {
            p.lend(id, (id % 2) as u32, &buffers[(id % 2) as usize], id < 2);
            assert_eq!(p.release(), id);
        }
    });
    let mut s = Subscriber::connect(&path).unwrap();
    for id in 0..4u8 {
        let f = s.next_frame(WAIT).unwrap();
        let chroma = f.tensor().plane(1).unwrap();
        assert_eq!(chroma.shape(), &[16, 64]);
        assert!(chroma.map_read().unwrap().iter().all(|&v| v == 20 + id % 2));
    }
    assert_eq!(s.stats().cache.misses, 4, "2 buffers x 2 planes");
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_reconnect_imports_nothing_again_and_old_frames_release_nothing() {
    let nv12 = format("NV12", 64, 32);
    let buffers: Vec<_> = (0..2).map(|i| Buffer::new(&nv12, 30 + i)).collect();
    let (path, thread) = publisher("reconnect", &nv12, 2, move |n, p| {
        p.hello();
        p.welcome(2, 2);
        let base = 100 * n as u64;
        for id in base..base + 4 {
            p.lend(
                id,
                (id % 2) as u32,
                &buffers[(id % 2) as usize],
                id < base + 2,
            );
            if n == 1 || id < base + 3 {
                assert_eq!(p.release(), id, "only this connection's ids");
            }
        }
        if n == 0 {
            // the client reconnects while holding frame 3: EOF here
            let r = p
                .receiver
                .receive(p.sock.as_fd(), Some(Instant::now() + WAIT));
            assert!(matches!(r, Err(socket::ReceiveError::Closed)), "{r:?}");
        }
    });
    let mut s = Subscriber::connect(&path).unwrap();
    for _ in 0..3 {
        s.next_frame(WAIT).unwrap();
    }
    let held = s.next_frame(WAIT).unwrap();
    s.reconnect().unwrap();
    drop(held); // its release goes to the closed connection, not the new one
    for _ in 0..4 {
        s.next_frame(WAIT).unwrap();
    }
    let stats = s.stats();
    assert_eq!(stats.cache.misses, 2, "the same files: cache hits");
    assert_eq!(stats.cache.hits, 6);
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_caller_at_its_lease_cap_gets_no_free_buffer_and_a_silent_publisher_a_timeout() {
    let nv12 = format("NV12", 64, 32);
    let buffer = Buffer::new(&nv12, 1);
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (path, thread) = publisher("cap", &nv12, 1, move |_, p| {
        assert_eq!(p.hello(), 1);
        p.welcome(2, 4);
        p.lend(0, 0, &buffer, true);
        assert_eq!(p.release(), 0);
        wait.recv().unwrap();
        p.lend(1, 0, &buffer, false);
    }); // the publisher closes with frame 1 lent
    let mut config = SubscriberConfig::new(&path);
    config.max_leases = 1;
    let mut s = Subscriber::connect_with(config).unwrap();
    let f = s.next_frame(WAIT).unwrap();
    let e = s.next_frame(WAIT).unwrap_err();
    assert!(
        matches!(e, CaptureError::NoFreeBuffer { buffers: 1, .. }),
        "{e}"
    );
    drop(f);
    let short = Duration::from_millis(50);
    let e = s.next_frame(short).unwrap_err();
    assert!(
        matches!(e, CaptureError::Timeout { timeout, .. } if timeout == short),
        "{e}"
    );
    go.send(()).unwrap();
    let held = s.next_frame(WAIT).unwrap();
    thread.join().unwrap();
    let e = share_error(s.next_frame(WAIT).unwrap_err());
    assert!(
        matches!(
            e,
            SubscribeError::Disconnected {
                reason: Disconnect::Closed,
                ..
            }
        ),
        "the publisher is gone: {e}"
    );
    assert!(
        held.tensor().map_read().unwrap().iter().all(|&v| v == 1),
        "still readable"
    );
    drop(held); // its release has nowhere to go: silent
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_frame_and_its_release_allocate_nothing_once_the_buffers_came() {
    let nv12m = format("NV12M", 64, 32);
    let buffers: Vec<_> = (0..2).map(|i| Buffer::new(&nv12m, i)).collect();
    let (path, thread) = publisher("alloc", &nv12m, 1, move |_, p| {
        p.hello();
        p.welcome(2, 2);
        for id in 0..104u64 {
            p.lend(id, (id % 2) as u32, &buffers[(id % 2) as usize], id < 2);
            assert_eq!(p.release(), id);
        }
    });
    let mut s = Subscriber::connect(&path).unwrap();
    for _ in 0..4 {
        drop(s.next_frame(WAIT).unwrap()); // the imports, the composed tensors
    }
    let before = crate::test_alloc::this_thread();
    for _ in 0..100 {
        drop(s.next_frame(WAIT).unwrap());
    }
    let allocations = crate::test_alloc::this_thread() - before;
    assert_eq!(allocations, 0, "allocations over 100 frames and releases");
    assert_eq!(s.stats().cache.misses, 4);
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
}
