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
        matches!(&e, SubscribeError::Protocol { what, .. } if what.contains("fds")),
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
            BufferProblem::Tensor(TensorError::NotMappable { .. })
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
fn a_header_without_its_body_ends_the_connection_not_a_timeout() {
    let nv12 = format("NV12", 64, 32);
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let (path, thread) = publisher("header-only", &nv12, 1, move |_, p| {
        p.hello();
        p.welcome(3, 2);
        let f = frame_message(p.wire, 0, 0, &[NV12_BYTES], false);
        let bytes = ServerMessage::Frame(f).encode();
        p.sock.write_all(&bytes.as_bytes()[..12]).unwrap(); // and then nothing
        let _ = wait.recv();
    });
    let mut s = Subscriber::connect(&path).unwrap();
    let e = share_error(s.next_frame(Duration::from_millis(10)).unwrap_err());
    assert!(
        matches!(&e, SubscribeError::Io { source, .. } if source.kind() == std::io::ErrorKind::TimedOut),
        "{e}"
    );
    let again = share_error(s.next_frame(WAIT).unwrap_err());
    assert!(matches!(
        again,
        SubscribeError::Disconnected {
            reason: Disconnect::Dropped,
            ..
        }
    ));
    done.send(()).unwrap();
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
}
