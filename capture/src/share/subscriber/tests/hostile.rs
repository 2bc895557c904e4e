//! A hostile publisher: every kind of bad message, fd and buffer, each a
//! typed error after which the subscriber has ended the connection.

use std::io::Write;

use super::*;

/// What a hostile publisher sends after a good `Welcome` (3 buffers of NV12).
fn after_welcome(name: &str, bad: impl Fn(&mut Peer) + Send + 'static) -> SubscribeError {
    after_frames(name, 0, bad)
}

/// What a hostile publisher sends after a good `Welcome` (3 buffers of NV12)
/// and `good` frames the client takes and drops.
fn after_frames(
    name: &str,
    good: usize,
    bad: impl Fn(&mut Peer) + Send + 'static,
) -> SubscribeError {
    let nv12 = format("NV12", 64, 32);
    let (path, thread) = publisher(name, &nv12, 1, move |_, p| {
        p.hello();
        p.welcome(3, 2);
        bad(p);
    });
    let mut s = Subscriber::connect(&path).unwrap();
    for _ in 0..good {
        drop(s.next_frame(WAIT).unwrap());
    }
    let e = share_error(s.next_frame(WAIT).unwrap_err());
    let again = share_error(s.next_frame(WAIT).unwrap_err());
    assert!(
        matches!(
            again,
            SubscribeError::Disconnected {
                reason: Disconnect::Dropped,
                ..
            }
        ),
        "the connection ends after {e}: {again}"
    );
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
    e
}

fn bad_buffer(e: &SubscribeError) -> &BufferProblem {
    match e {
        SubscribeError::BadBuffer { problem, .. } => problem,
        other => panic!("expected BadBuffer, got {other}"),
    }
}

const NV12_BYTES: u64 = 64 * 32 * 3 / 2;

fn memfd(len: usize) -> Tensor<u8> {
    Tensor::new(&[len], Some(TensorMemory::Shm), None).unwrap()
}

#[test]
fn wrong_fd_counts_are_typed_errors() {
    let e = after_welcome("fds0", |p| {
        p.send(
            ServerMessage::Frame(frame_message(p.wire, 0, 0, &[NV12_BYTES], true)),
            &[],
        )
    });
    assert!(
        matches!(
            bad_buffer(&e),
            BufferProblem::FdCount {
                expected: 1,
                found: 0
            }
        ),
        "{e}"
    );
    let e = after_welcome("fds2", |p| {
        let m = memfd(NV12_BYTES as usize);
        p.frame(
            0,
            0,
            &[NV12_BYTES],
            &[read_only(m.fd().unwrap()), read_only(m.fd().unwrap())],
        );
    });
    assert!(
        matches!(
            bad_buffer(&e),
            BufferProblem::FdCount {
                expected: 1,
                found: 2
            }
        ),
        "{e}"
    );
    let e = after_welcome("fds-unasked", |p| {
        let m = memfd(NV12_BYTES as usize);
        let f = frame_message(p.wire, 0, 0, &[NV12_BYTES], false);
        p.send(ServerMessage::Frame(f), &[read_only(m.fd().unwrap())]);
    });
    assert!(
        matches!(
            bad_buffer(&e),
            BufferProblem::FdCount {
                expected: 0,
                found: 1
            }
        ),
        "{e}"
    );
    let e = after_welcome("fds-many", |p| {
        let m = memfd(16);
        let fds: Vec<_> = (0..4).map(|_| read_only(m.fd().unwrap())).collect();
        p.frame(0, 0, &[NV12_BYTES], &fds);
    });
    assert!(
        matches!(
            &e,
            SubscribeError::TooManyFds {
                count: 4,
                max: MAX_PLANES,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_pipe_or_a_short_memfd_is_refused_by_from_fds_checks() {
    let e = after_welcome("pipe", |p| {
        let (r, _w) = nix::unistd::pipe().unwrap();
        p.frame(0, 0, &[NV12_BYTES], &[r]);
    });
    assert!(
        matches!(
            bad_buffer(&e),
            BufferProblem::Tensor(TensorError::NotPeerMemory { what, .. }) if what.contains("pipe:")
        ),
        "{e}"
    );
    let e = after_welcome("short-file", |p| {
        let m = memfd(1024);
        p.frame(0, 0, &[NV12_BYTES], &[read_only(m.fd().unwrap())]);
    });
    assert!(
        matches!(
            bad_buffer(&e),
            BufferProblem::Tensor(TensorError::BufferTooSmall { .. })
        ),
        "{e}"
    );
    let e = after_welcome("short-span", |p| {
        let m = memfd(1024);
        p.frame(0, 0, &[1024], &[read_only(m.fd().unwrap())]);
    });
    assert!(
        matches!(
            bad_buffer(&e),
            BufferProblem::PlaneOutside {
                size: 3072,
                length: 1024,
                ..
            }
        ),
        "{e}"
    );
    let e = after_welcome("zero-span", |p| {
        let m = memfd(1024);
        p.frame(0, 0, &[0], &[read_only(m.fd().unwrap())]);
    });
    assert!(
        matches!(bad_buffer(&e), BufferProblem::BadLength { length: 0 }),
        "{e}"
    );
}

#[test]
fn buffers_out_of_range_unsent_or_sent_twice_are_typed_errors() {
    let e = after_welcome("range", |p| {
        p.lend(0, 3, &Buffer::new(&format("NV12", 64, 32), 0), true);
    });
    assert!(
        matches!(
            bad_buffer(&e),
            BufferProblem::IndexOutOfRange { buffers: 3 }
        ),
        "{e}"
    );
    let e = after_welcome("no-fds", |p| p.frame(0, 1, &[NV12_BYTES], &[]));
    assert!(matches!(bad_buffer(&e), BufferProblem::NoFds), "{e}");
    let e = after_frames("twice", 1, |p| {
        let b = Buffer::new(&format("NV12", 64, 32), 0);
        p.lend(0, 1, &b, true);
        assert_eq!(p.release(), 0);
        p.lend(1, 1, &b, true);
    });
    assert!(matches!(bad_buffer(&e), BufferProblem::FdsTwice), "{e}");
    let e = after_frames("length-changed", 1, |p| {
        let b = Buffer::new(&format("NV12", 64, 32), 0);
        p.lend(0, 1, &b, true);
        assert_eq!(p.release(), 0);
        p.frame(1, 1, &[NV12_BYTES + 4096], &[]);
    });
    assert!(
        matches!(bad_buffer(&e), BufferProblem::LengthChanged { .. }),
        "{e}"
    );
}

#[test]
fn bad_bytes_goodbye_and_eof_mid_message_are_typed_errors() {
    let e = after_welcome("garbage", |p| p.sock.write_all(&[0xAB; 64]).unwrap());
    assert!(
        matches!(
            &e,
            SubscribeError::Wire {
                source: WireError::BadMagic { .. },
                ..
            }
        ),
        "{e}"
    );
    let e = after_welcome("goodbye", |p| {
        p.send(ServerMessage::Goodbye(GoodbyeReason::SourceGone), &[])
    });
    assert!(
        matches!(
            &e,
            SubscribeError::Disconnected {
                reason: Disconnect::Goodbye(GoodbyeReason::SourceGone),
                ..
            }
        ),
        "{e}"
    );
    assert!(e.is_disconnect());
    let e = after_welcome("eof-mid", |p| {
        let f = frame_message(p.wire, 0, 0, &[NV12_BYTES], false);
        let bytes = ServerMessage::Frame(f).encode();
        p.sock.write_all(&bytes.as_bytes()[..40]).unwrap();
    });
    assert!(
        matches!(
            &e,
            SubscribeError::Disconnected {
                reason: Disconnect::Closed,
                ..
            }
        ),
        "{e}"
    );
    let e = after_welcome("other-format", |p| {
        let mut f = frame_message(p.wire, 0, 0, &[NV12_BYTES], false);
        f.format.width = 4096;
        p.send(ServerMessage::Frame(f), &[]);
    });
    assert!(
        matches!(&e, SubscribeError::Protocol { what, .. } if what.contains("4096x32")),
        "{e}"
    );
    let e = after_welcome("welcome-again", |p| p.welcome(3, 2));
    assert!(
        matches!(&e, SubscribeError::Protocol { what, .. } if what.contains("Welcome")),
        "{e}"
    );
}

/// What `connect` gives when the publisher answers `Hello` with `answer`.
fn connect_to(name: &str, answer: impl Fn(&mut Peer) + Send + 'static) -> CaptureError {
    let nv12 = format("NV12", 64, 32);
    let (path, thread) = publisher(name, &nv12, 1, move |_, p| {
        p.hello();
        answer(p);
    });
    let e = Subscriber::connect(&path).unwrap_err();
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
    e
}

#[test]
fn a_refusal_or_a_bad_welcome_fails_connect_typed() {
    let e = connect_to("not-allowed", |p| {
        p.send(ServerMessage::Goodbye(GoodbyeReason::NotAllowed), &[])
    });
    assert!(matches!(
        share_error(e),
        SubscribeError::Disconnected {
            reason: Disconnect::Goodbye(GoodbyeReason::NotAllowed),
            ..
        }
    ));
    let e = connect_to("fourcc", |p| {
        p.wire.fourcc = crate::FourCc(*b"ABCD");
        p.welcome(3, 2);
    });
    assert!(matches!(e, CaptureError::UnsupportedFormat { .. }), "{e}");
    let e = connect_to("small-plane", |p| {
        p.wire.planes[0].size = 100;
        p.welcome(3, 2);
    });
    assert!(matches!(e, CaptureError::BadFormat { .. }), "{e}");
    let e = connect_to("no-buffers", |p| p.welcome(0, 2));
    assert!(matches!(share_error(e), SubscribeError::Protocol { .. }));
    let e = connect_to("fds-on-welcome", |p| {
        let m = memfd(16);
        let (format, fds) = (p.wire, [read_only(m.fd().unwrap())]);
        p.send(
            ServerMessage::Welcome {
                lease_ms: 1,
                max_leases: 1,
                buffers: 1,
                format,
            },
            &fds,
        );
    });
    assert!(matches!(share_error(e), SubscribeError::Protocol { .. }));
    let e = connect_to("closed", |_| ());
    assert!(matches!(
        share_error(e),
        SubscribeError::Disconnected {
            reason: Disconnect::Closed,
            ..
        }
    ));
    let e = Subscriber::connect(socket_path("nobody")).unwrap_err();
    assert!(matches!(share_error(e), SubscribeError::Connect { .. }));
}

#[test]
fn half_a_message_across_a_timeout_is_kept_and_the_retry_resumes() {
    // Half a header (with the frame's fd on its first bytes), a timeout;
    // the rest of the header and half the body, a timeout; then the rest:
    // the frame, whole, with its fd.
    let nv12 = format("NV12", 64, 32);
    let (step, wait) = std::sync::mpsc::channel::<()>();
    let (path, thread) = publisher("half-header", &nv12, 1, move |_, p| {
        p.hello();
        p.welcome(3, 2);
        let b = Buffer::new(&format("NV12", 64, 32), 77);
        let f = frame_message(p.wire, 0, 0, &[NV12_BYTES], true);
        let msg = ServerMessage::Frame(f).encode();
        let bytes = msg.as_bytes();
        let fds = b.read_only_fds();
        let raw: Vec<_> = fds.iter().map(|f| f.as_raw_fd()).collect();
        let rights = [nix::sys::socket::ControlMessage::ScmRights(&raw)];
        let iov = [std::io::IoSlice::new(&bytes[..6])];
        nix::sys::socket::sendmsg::<()>(
            p.sock.as_raw_fd(),
            &iov,
            &rights,
            nix::sys::socket::MsgFlags::empty(),
            None,
        )
        .unwrap();
        drop(fds);
        wait.recv().unwrap();
        p.sock.write_all(&bytes[6..40]).unwrap();
        wait.recv().unwrap();
        p.sock.write_all(&bytes[40..]).unwrap();
        assert_eq!(p.release(), 0);
    });
    let mut s = Subscriber::connect(&path).unwrap();
    let short = Duration::from_millis(20);
    for _ in 0..2 {
        let started = Instant::now();
        let e = s.next_frame(short).unwrap_err();
        assert!(matches!(e, CaptureError::Timeout { .. }), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the caller's deadline"
        );
        step.send(()).unwrap();
    }
    let f = s.next_frame(WAIT).unwrap();
    assert_eq!(f.sequence(), 0);
    let luma = f.tensor().plane(0).unwrap();
    assert!(luma.map_read().unwrap().iter().all(|&v| v == 77));
    drop(f);
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
}

/// A memfd named `name`, `len` bytes, sealed against shrinking only (it can
/// grow), and its read-only reopening.
fn growable_memfd(name: &str, len: u64) -> (OwnedFd, OwnedFd) {
    use nix::fcntl::{fcntl, FcntlArg, SealFlag};
    use nix::sys::memfd::{memfd_create, MFdFlags};
    let cname = std::ffi::CString::new(name).unwrap();
    let fd = memfd_create(
        cname.as_c_str(),
        MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
    )
    .unwrap();
    nix::unistd::ftruncate(&fd, len as i64).unwrap();
    fcntl(&fd, FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_SHRINK)).unwrap();
    let ro = read_only(fd.as_fd());
    (fd, ro)
}

/// This process's open fds whose `/proc/self/fd` link names `needle`.
fn open_fds_naming(needle: &str) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|l| l.to_string_lossy().contains(needle))
        .count()
}

/// `VmSize` of /proc/self/status, in bytes.
fn vm_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[test]
fn two_hundred_fifty_fds_in_one_message_are_all_closed() {
    let name = format!("zerocam-250-{}", std::process::id());
    for round in 0..5 {
        let n = name.clone();
        let e = after_welcome(&format!("fds-250-{round}"), move |p| {
            let (_rw, ro) = growable_memfd(&n, 4096);
            let fds: Vec<_> = (0..250).map(|_| nix::unistd::dup(&ro).unwrap()).collect();
            p.frame(0, 0, &[NV12_BYTES], &fds);
        });
        assert!(
            matches!(e, SubscribeError::TooManyFds { count: 250, .. }),
            "{e}"
        );
    }
    assert_eq!(open_fds_naming(&name), 0, "fds of the memfd left open");
}

#[test]
fn a_listener_that_never_accepts_is_a_timeout_within_the_connect_timeout() {
    use nix::sys::socket::{
        bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType, UnixAddr,
    };
    let path = socket_path("never-accepts");
    let listener = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .unwrap();
    bind(listener.as_raw_fd(), &UnixAddr::new(&path).unwrap()).unwrap();
    listen(&listener, Backlog::new(0).unwrap()).unwrap();
    let _first = UnixStream::connect(&path).unwrap(); // fills the backlog
    let mut config = SubscriberConfig::new(&path);
    config.connect_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let e = Subscriber::connect_with(config).unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(e, CaptureError::Timeout { timeout, .. } if timeout == Duration::from_millis(300)),
        "{e}"
    );
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn sparse_terabyte_memfds_map_only_their_span_or_are_refused_by_the_caps() {
    const TIB4: u64 = 4 << 40;
    let before = vm_size();
    for round in 0..4 {
        // a 4 TiB span: over the frame cap, nothing is mapped
        let e = after_welcome(&format!("sparse-span-{round}"), |p| {
            let (_rw, ro) = growable_memfd("zerocam-sparse", TIB4);
            p.frame(0, 0, &[TIB4], &[ro]);
        });
        assert!(
            matches!(
                bad_buffer(&e),
                BufferProblem::FrameTooLarge { bytes: TIB4, .. }
            ),
            "{e}"
        );
    }
    // a frame's span of a 4 TiB file: only the span is mapped
    let nv12 = format("NV12", 64, 32);
    let (path, thread) = publisher("sparse-file", &nv12, 1, move |_, p| {
        p.hello();
        p.welcome(3, 2);
        let files: Vec<_> = (0..3)
            .map(|_| growable_memfd("zerocam-sparse", TIB4))
            .collect();
        for (i, (_, ro)) in files.iter().enumerate() {
            let fd = nix::unistd::dup(ro).unwrap();
            p.frame(i as u64, i as u32, &[NV12_BYTES], &[fd]);
            assert_eq!(p.release(), i as u64);
        }
    });
    let mut s = Subscriber::connect(&path).unwrap();
    for _ in 0..3 {
        let f = s.next_frame(WAIT).unwrap();
        assert_eq!(f.tensor().plane(0).unwrap().shape(), &[32, 64]);
    }
    let grown = vm_size().saturating_sub(before);
    assert!(grown < 1 << 30, "address space grew {grown} bytes");
    drop(s);
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
}

#[test]
fn mapped_bytes_past_the_connections_cap_are_refused() {
    let nv12 = format("NV12", 64, 32);
    let (path, thread) = publisher("mapped-cap", &nv12, 1, move |_, p| {
        p.hello();
        p.welcome(3, 3);
        let buffers: Vec<_> = (0..3)
            .map(|i| Buffer::new(&format("NV12", 64, 32), i))
            .collect();
        for (i, b) in buffers.iter().enumerate() {
            p.lend(i as u64, i as u32, b, true);
        }
        let _ = p
            .receiver
            .receive(p.sock.as_fd(), Some(Instant::now() + WAIT)); // EOF
    });
    let mut config = SubscriberConfig::new(&path);
    config.max_mapped_bytes = 2 * NV12_BYTES as usize;
    config.max_leases = 3;
    let mut s = Subscriber::connect_with(config).unwrap();
    let a = s.next_frame(WAIT).unwrap();
    let b = s.next_frame(WAIT).unwrap();
    let e = share_error(s.next_frame(WAIT).unwrap_err());
    assert!(
        matches!(
            bad_buffer(&e),
            BufferProblem::MappedTooMuch { bytes: NV12_BYTES, total, .. } if *total == 3 * NV12_BYTES
        ),
        "{e}"
    );
    drop((a, b));
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_file_grown_for_a_larger_format_on_reconnect_is_imported_again() {
    let small = format("NV12", 64, 32);
    let large = format("NV12", 128, 64);
    let large_wire = WireFormat::of(&large).unwrap();
    let (rw, ro) = growable_memfd("zerocam-grown", NV12_BYTES);
    let (path, thread) = publisher("grown", &small, 2, move |n, p| {
        p.hello();
        if n == 1 {
            let bigger = u64::from(large.planes[0].size);
            nix::unistd::ftruncate(&rw, bigger as i64).unwrap();
            p.wire = large_wire;
            p.welcome(1, 1);
            p.frame(1, 0, &[bigger], &[nix::unistd::dup(&ro).unwrap()]);
        } else {
            p.welcome(1, 1);
            p.frame(0, 0, &[NV12_BYTES], &[nix::unistd::dup(&ro).unwrap()]);
        }
        let _ = p.release();
    });
    let mut s = Subscriber::connect(&path).unwrap();
    let f = s.next_frame(WAIT).unwrap();
    assert_eq!(f.tensor().plane(0).unwrap().shape(), &[32, 64]);
    drop(f);
    s.reconnect().unwrap();
    let f = s.next_frame(WAIT).unwrap();
    assert_eq!(
        f.tensor().plane(0).unwrap().shape(),
        &[64, 128],
        "the grown file"
    );
    drop(f);
    assert_eq!(s.stats().cache.misses, 2, "the grown file imported again");
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
}

/// `/proc/sys/vm/nr_hugepages` set to at least 1 while alive (when root),
/// restored on drop.
struct HugePages {
    was: Option<String>,
}

impl HugePages {
    const PATH: &'static str = "/proc/sys/vm/nr_hugepages";

    fn at_least_one() -> HugePages {
        let was = std::fs::read_to_string(Self::PATH).ok();
        let now = was.as_deref().and_then(|w| w.trim().parse::<u64>().ok());
        if now == Some(0) && std::fs::write(Self::PATH, "1").is_ok() {
            return HugePages { was };
        }
        HugePages { was: None }
    }
}

impl Drop for HugePages {
    fn drop(&mut self) {
        if let Some(was) = &self.was {
            let _ = std::fs::write(Self::PATH, was.trim()); // best effort: restores the host's setting
        }
    }
}

#[test]
fn a_hugetlbfs_memfd_with_a_punched_hole_is_refused_without_a_map() {
    use nix::fcntl::{fallocate, fcntl, FallocateFlags, FcntlArg, SealFlag};
    use nix::sys::memfd::{memfd_create, MFdFlags};
    const HUGE: i64 = 2 << 20;
    let pages = HugePages::at_least_one();
    let name = c"zerocam-hugetlb";
    let flags = MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING | MFdFlags::MFD_HUGETLB;
    let Ok(fd) = memfd_create(name, flags) else {
        eprintln!("skipped: this kernel has no hugetlbfs memfds");
        return;
    };
    nix::unistd::ftruncate(&fd, HUGE).unwrap();
    // with a page in the pool: allocate it, then punch it out again
    if fallocate(&fd, FallocateFlags::empty(), 0, HUGE).is_ok() {
        let punch = FallocateFlags::FALLOC_FL_PUNCH_HOLE | FallocateFlags::FALLOC_FL_KEEP_SIZE;
        fallocate(&fd, punch, 0, HUGE).unwrap();
    }
    fcntl(&fd, FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_SHRINK)).unwrap();
    let before = vm_size();
    let e = after_welcome("hugetlb", move |p| {
        p.frame(0, 0, &[NV12_BYTES], &[nix::unistd::dup(&fd).unwrap()]);
    });
    assert!(
        matches!(
            bad_buffer(&e),
            BufferProblem::Tensor(TensorError::NotPeerMemory { what, .. }) if what.contains("hugetlbfs")
        ),
        "{e}"
    );
    assert!(vm_size() <= before + (64 << 20), "nothing mapped");
    drop(pages);
}

#[test]
fn a_regular_file_is_refused_before_any_call_into_its_filesystem() {
    // What a FUSE file whose server never answers meets: F_GET_SEALS fails
    // EINVAL, fdinfo names no exporter, and the fd is refused there, before
    // the fstat or fstatfs that would hang on such a server. The file goes
    // where it is a regular file (not tmpfs: a tmpfs file is shmem, which
    // has seals, and is refused as shrinkable instead — as a clean root in
    // tests/fresh-machine, whose /tmp and checkout are tmpfs, shows).
    use nix::sys::statfs::{statfs, TMPFS_MAGIC};
    let dirs = [
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        std::path::PathBuf::from("/var/tmp"),
        std::env::temp_dir(),
    ];
    let dir = dirs
        .iter()
        .find(|d| statfs(d.as_path()).is_ok_and(|s| s.filesystem_type() != TMPFS_MAGIC))
        .cloned();
    let on_tmpfs = dir.is_none();
    let dir = dir.unwrap_or_else(std::env::temp_dir);
    let e = after_welcome("regular", move |p| {
        let path = dir.join(format!("zerocam-regular-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; NV12_BYTES as usize]).unwrap();
        let file = File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        p.frame(0, 0, &[NV12_BYTES], &[file.into()]);
    });
    if on_tmpfs {
        assert!(
            matches!(
                bad_buffer(&e),
                BufferProblem::Tensor(TensorError::ShrinkableFile { .. })
            ),
            "{e}"
        );
    } else {
        assert!(
            matches!(
                bad_buffer(&e),
                BufferProblem::Tensor(TensorError::NotPeerMemory { what, .. }) if what.contains("zerocam-regular")
            ),
            "{e}"
        );
    }
}
