//! Frame sharing between real processes on the pattern source: subscriber
//! children (this binary with `--child`) see the publisher's pixels, import
//! each buffer plane once (reconnects included), survive `kill -9` on either
//! side, and leave no fds behind. `harness = false`: see share_common.
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod share_common;
use share_common::*;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use zerocam_capture::share::Subscriber;
use zerocam_capture::{CaptureError, FrameSource, PatternConfig, PatternSource};

fn pattern(format: &str, fps: Option<f64>) -> PatternSource {
    pattern_with(format, fps, 4)
}

fn pattern_with(format: &str, fps: Option<f64>, buffers: u32) -> PatternSource {
    PatternSource::new(PatternConfig {
        fps,
        buffers,
        ..PatternConfig::new(format.parse().unwrap(), 320, 240)
    })
    .unwrap()
}

/// 2, then 16 children: every frame they saw has the publisher's checksum,
/// and each imported buffers x planes, no more. (Enough buffers that no frame
/// had to be reclaimed early: a reclaimed frame's buffer is drawn again while
/// a slow client may still read it, which is what reclaiming means.)
fn clients_see_the_publishers_pixels_and_import_once() {
    for (clients, format, fps, buffers) in [
        (2, "NV12", 200.0, 4),
        (2, "NV12M", 200.0, 4),
        (16, "NV12", 30.0, 12),
    ] {
        let name = format!("pixels{clients}{format}");
        let source = pattern_with(format, Some(fps), buffers);
        let serving = Serving::start(&name, source, |c| c.lease = Duration::from_secs(30));
        let children: Vec<_> = (0..clients)
            .map(|_| spawn_child("count", &serving.socket, 40))
            .collect();
        let reports: Vec<_> = children.into_iter().map(finish_child).collect();
        check_exact_run(&name, serving, reports, 40);
    }
}

/// A reconnect gets the same files: the client's cache hits.
fn a_reconnect_hits_the_cache() {
    let serving = Serving::start("reconnect", pattern("NV12M", Some(200.0)), |_| {});
    let r = finish_child(spawn_child("reconnect", &serving.socket, 20));
    assert_eq!(assert_same_pixels(&r, &serving.sums), 40);
    assert_eq!(
        r.number("imports"),
        4 * r.number("planes"),
        "4 buffers, imported once"
    );
    let (stats, _) = serving.stop();
    assert_eq!(stats.connections, 2, "{stats:?}");
}

/// A client killed while it holds frames: its leases end at EOF (not by the
/// deadline, not by reclaiming), and capture goes on for the others.
fn kill_9_of_a_client_holding_frames() {
    let serving = Serving::start("kill", pattern("NV12", Some(200.0)), |c| {
        c.lease = Duration::from_secs(60);
    });
    let mut holder = spawn_child("hold", &serving.socket, 0);
    let _out = wait_for_line(&mut holder, "holding");
    holder.kill().unwrap(); // SIGKILL
    holder.wait().unwrap();
    let r = finish_child(spawn_child("count", &serving.socket, 60));
    assert_eq!(assert_same_pixels(&r, &serving.sums), 60);
    let (stats, _) = serving.stop();
    assert_eq!(stats.expired, 0, "the leases ended at EOF: {stats:?}");
    assert_eq!(
        stats.reclaimed, 0,
        "nothing had to be taken back: {stats:?}"
    );
}

/// The publisher stops, or is killed: every client gets the typed
/// disconnect within its timeout.
fn a_gone_publisher_reaches_every_client() {
    let serving = Serving::start("stop", pattern("NV12", Some(100.0)), |_| {});
    let waiting = spawn_waiting(&serving.socket, 3);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(serving.stop().1, Ok(()));
    assert_all_disconnected(waiting);

    let socket = socket_path("killed");
    let mut publisher = spawn_child("publish", &socket, 0);
    let _pout = wait_for_line(&mut publisher, "serving");
    let mut client = spawn_child("until-gone", &socket, 0);
    let out = wait_for_line(&mut client, "ready");
    std::thread::sleep(Duration::from_millis(200));
    publisher.kill().unwrap();
    publisher.wait().unwrap();
    let r = finish_rest(client, out);
    assert_eq!(r.values["gone"], "Disconnected", "{r:?}");
    let _ = std::fs::remove_file(socket);
}

/// A lease that outlives its deadline: the frame is reclaimed, the late
/// release is ignored and counted, and the client goes on.
fn a_deadline_reclaims_and_the_late_release_is_counted() {
    let serving = Serving::start("deadline", pattern("NV12", Some(100.0)), |c| {
        c.lease = Duration::from_millis(100);
    });
    let mut sub = Subscriber::connect(&serving.socket).unwrap();
    let late = sub.next_frame(WAIT).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    drop(late);
    for _ in 0..10 {
        sub.next_frame(WAIT).unwrap();
    }
    drop(sub);
    let (stats, _) = serving.stop();
    assert!(stats.expired >= 1, "{stats:?}");
    assert!(stats.late_releases >= 1, "{stats:?}");
    assert!(
        stats.late_releases <= stats.expired,
        "only expired frames: {stats:?}"
    );
    assert_eq!(stats.violations, 0, "a late release is not a violation");
}

/// 2,000 frames to two clients: no fd growth in the publisher's process or
/// in the clients.
fn no_fd_growth_over_2000_frames() {
    let before = open_fds();
    let serving = Serving::start("fds", pattern("NV12M", None), |_| {});
    // The long client connects first and outlives the short one, so both
    // are connected at the short one's two progress lines, where the
    // publisher's process is sampled.
    let long = spawn_child("count", &serving.socket, 4000);
    let short = spawn_child("count", &serving.socket, 2000);
    let mut samples = Vec::new();
    let r = finish_child_with(short, |line| {
        if line.starts_with("progress") {
            samples.push(open_fds());
        }
    });
    assert_eq!(r.number("fds_early"), r.number("fds_late"), "client fds");
    assert_eq!(r.frames.len(), 2000);
    let r = finish_child(long);
    assert_eq!(r.number("fds_early"), r.number("fds_late"), "client fds");
    assert_eq!(r.frames.len(), 4000);
    let (stats, _) = serving.stop();
    assert!(stats.frames >= 4000, "{stats:?}");
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[0], samples[1], "publisher fds mid-run: {samples:?}");
    assert_eq!(open_fds(), before, "every fd closed with the publisher");
}

/// A client's fds are read-only: a writable map fails typed.
fn a_client_cannot_write_a_frame() {
    let serving = Serving::start("write", pattern("NV12", Some(100.0)), |_| {});
    let r = finish_child(spawn_child("write", &serving.socket, 1));
    assert_eq!(r.number("write_refused"), 1, "{r:?}");
}

/// The bytes of a client message: header (magic, version, kind, length) and body.
fn message(version: u16, kind: u16, body: &[u8]) -> Vec<u8> {
    let mut m = b"ZCSH".to_vec();
    m.extend_from_slice(&version.to_le_bytes());
    m.extend_from_slice(&kind.to_le_bytes());
    m.extend_from_slice(&(body.len() as u32).to_le_bytes());
    m.extend_from_slice(body);
    m
}

const HELLO: u16 = 1;
const RELEASE: u16 = 2;

/// Hostile clients — garbage, another version, an oversized length, an
/// unknown kind, a release before Hello, a second Hello, a release of a frame
/// never lent — are each disconnected with `Goodbye(ProtocolViolation)`, while
/// a well-behaved client in another process goes on seeing the right pixels.
fn hostile_clients_are_cut_off_and_the_others_go_on() {
    let serving = Serving::start("hostile", pattern("NV12", Some(100.0)), |_| {});
    let good = spawn_child("count", &serving.socket, 100);
    let hello = message(1, HELLO, &[2, 0, 0, 0]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"GET / HTTP/1.1\r\n\r\n".to_vec()),
        ("version 2", message(2, HELLO, &[2, 0, 0, 0])),
        ("oversized", message(1, HELLO, &[0; 4000])),
        ("unknown kind", message(1, 0x55, &[0; 4])),
        ("short body", message(1, HELLO, &[2, 0])),
        (
            "release before hello",
            message(1, RELEASE, &7u64.to_le_bytes()),
        ),
        ("second hello", [hello.clone(), hello.clone()].concat()),
        (
            "release of a frame never lent",
            [hello.clone(), message(1, RELEASE, &u64::MAX.to_le_bytes())].concat(),
        ),
    ];
    for (what, bytes) in &cases {
        let mut sock = UnixStream::connect(&serving.socket).unwrap();
        sock.set_read_timeout(Some(WAIT)).unwrap();
        let _ = sock.write_all(bytes); // the publisher may cut us off mid-write
        let mut got = Vec::new();
        let _ = sock.read_to_end(&mut got); // until the publisher closes
        let goodbye = message(1, 0x103, &[4, 0, 0, 0]);
        assert!(
            got.ends_with(&goodbye),
            "{what}: the last message is Goodbye(ProtocolViolation): {got:02x?}"
        );
    }
    let r = finish_child(good);
    assert_eq!(assert_same_pixels(&r, &serving.sums), 100);
    let (stats, ended) = serving.stop();
    assert_eq!(ended, Ok(()));
    assert_eq!(stats.violations, cases.len() as u64, "{stats:?}");
}

/// A copy of this test binary that uid 65534 can run, in a folder of its own
/// (removed by the caller): the build's own copy may lie under a home folder
/// of mode 0700 (a checkout in Debian's `/root`, or in a user's home).
fn exe_for_other_users() -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("zerocam-share-exe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = dir.join("host_share");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, exe)
}

/// A peer whose uid and gid are not allowed gets `Goodbye(NotAllowed)` and
/// not a single fd; the socket file has mode 0660. (Runs as root, which CI
/// does: the refused peer is a child switched to uid/gid 65534.)
fn a_peer_not_allowed_gets_no_fd() {
    let serving = Serving::start("refused", pattern("NV12", Some(100.0)), |_| {});
    let mode = std::fs::metadata(&serving.socket)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o660, "the socket's mode");
    // The socket's folder and file must let uid 65534 connect at all.
    std::fs::set_permissions(&serving.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (exe_dir, exe) = exe_for_other_users();
    let child = Command::new(&exe)
        .args(["--child", "refused"])
        .arg(&serving.socket)
        .arg("0")
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::piped())
        .spawn()
        .expect("a child as uid 65534 (the test runs as root)");
    let r = finish_child(child);
    let _ = std::fs::remove_dir_all(&exe_dir);
    assert_eq!(r.values["refused"], "NotAllowed", "{r:?}");
    assert_eq!(r.number("fds_received"), 0, "{r:?}");
    let (stats, _) = serving.stop();
    assert_eq!(stats.rejected, 1, "{stats:?}");
    assert_eq!(stats.connections, 0, "{stats:?}");
}

/// Opens `n` connections to `socket` that each send `bytes` (maybe none)
/// and then nothing: idle, or slowloris (a partial Hello, stalled).
fn hostile_flood(socket: &std::path::Path, n: usize, bytes: &[u8]) -> Vec<UnixStream> {
    (0..n)
        .map(|_| {
            let mut s = UnixStream::connect(socket).unwrap();
            // The publisher may have pushed it out already: a reset then.
            let _ = s.write_all(bytes);
            s
        })
        .collect()
}

/// 200 connections that never say `Hello` (idle, or a partial `Hello` and a
/// stall), then a real client: it gets frames within 2 s (on main the
/// first 32 took every place, for good), and every hostile connection was
/// closed by the publisher (pushed out by newer ones, or at the 1 s `Hello`
/// deadline) and saw at most a `Goodbye`, never a frame or an fd.
fn flooding_connections_lock_nobody_out() {
    let partial_hello = &message(1, HELLO, &[2, 0, 0, 0])[..6];
    for (what, bytes) in [("idle", &[][..]), ("slowloris", partial_hello)] {
        let serving = Serving::start(what, pattern("NV12", Some(100.0)), |_| {});
        let flood = hostile_flood(&serving.socket, 200, bytes);
        let t = std::time::Instant::now();
        let mut sub = Subscriber::connect(&serving.socket).expect("a real client connects");
        for _ in 0..10 {
            sub.next_frame(WAIT).unwrap();
        }
        let took = t.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "{what}: 10 frames took {took:?}"
        );
        // Past the deadline every hostile connection is closed.
        std::thread::sleep(Duration::from_millis(1300));
        for mut s in flood {
            s.set_read_timeout(Some(WAIT)).unwrap();
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got); // to its end, or a reset
            assert!(
                got.is_empty() || (got.len() == 16 && got.starts_with(b"ZCSH")),
                "{what}: at most a Goodbye: {got:02x?}"
            );
        }
        drop(sub);
        let (stats, ended) = serving.stop();
        println!("{what}: {stats:?}");
        assert_eq!(ended, Ok(()));
        assert_eq!(
            stats.handshake_timeouts + stats.pending_dropped,
            200,
            "{what}: every hostile connection closed: {stats:?}"
        );
        assert_eq!(stats.connections, 201, "{what}: {stats:?}");
        assert_eq!(stats.rejected, 0, "{what}: nobody was told Full: {stats:?}");
    }
}

/// A client that said `Hello` and then sends half a `Release` and stalls is
/// closed at the same deadline (`stalled`), with `Goodbye(ProtocolViolation)`.
fn a_half_sent_message_is_closed_at_the_deadline() {
    let serving = Serving::start("stall", pattern("NV12", Some(100.0)), |c| {
        c.hello_timeout = Duration::from_millis(300);
    });
    let mut sock = UnixStream::connect(&serving.socket).unwrap();
    sock.write_all(&message(1, HELLO, &[1, 0, 0, 0])).unwrap();
    sock.write_all(&message(1, RELEASE, &1u64.to_le_bytes())[..5])
        .unwrap();
    sock.set_read_timeout(Some(WAIT)).unwrap();
    let mut got = Vec::new();
    let _ = sock.read_to_end(&mut got); // until the publisher closes
    let goodbye = message(1, 0x103, &[4, 0, 0, 0]);
    assert!(got.ends_with(&goodbye), "{got:02x?}");
    let (stats, _) = serving.stop();
    assert_eq!(stats.stalled, 1, "{stats:?}");
    assert_eq!(stats.handshake_timeouts, 0, "it said Hello: {stats:?}");
}

/// One uid's 64 clients (this process, root) take at most half the places
/// (16 of 32); uid 65534 (a child, allowed with `allow_uids`) still gets
/// frames, while 64 idle connections of root wait too.
fn one_uid_cannot_take_every_place() {
    let serving = Serving::start("peruid", pattern("NV12", Some(100.0)), |c| {
        c.allow_uids = vec![65534];
    });
    std::fs::set_permissions(&serving.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mut held = Vec::new();
    let mut full = 0;
    for _ in 0..64 {
        match Subscriber::connect(&serving.socket) {
            Ok(s) => held.push(s),
            Err(CaptureError::Share(zerocam_capture::share::SubscribeError::Disconnected {
                reason:
                    zerocam_capture::share::Disconnect::Goodbye(
                        zerocam_capture::share::GoodbyeReason::Full,
                    ),
                ..
            })) => full += 1,
            Err(e) => panic!("a typed refusal, not {e}"),
        }
    }
    assert_eq!((held.len(), full), (16, 48), "half of 32 places for uid 0");
    let idle = hostile_flood(&serving.socket, 64, &[]);
    let (exe_dir, exe) = exe_for_other_users();
    let child = Command::new(&exe)
        .args(["--child", "count"])
        .arg(&serving.socket)
        .arg("20")
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::piped())
        .spawn()
        .expect("a child as uid 65534 (the test runs as root)");
    let r = finish_child(child);
    let _ = std::fs::remove_dir_all(&exe_dir);
    assert_eq!(assert_same_pixels(&r, &serving.sums), 20);
    drop((held, idle));
    let (stats, _) = serving.stop();
    assert_eq!(stats.rejected, 48, "{stats:?}");
}

/// No publisher at the path: a typed error, not a panic.
fn no_publisher_is_a_typed_error() {
    let e = Subscriber::connect(socket_path("nobody")).unwrap_err();
    assert!(matches!(e, CaptureError::Share(_)), "{e}");
}

fn main() {
    main_with(&[
        (
            "clients_see_the_publishers_pixels_and_import_once",
            clients_see_the_publishers_pixels_and_import_once,
        ),
        ("a_reconnect_hits_the_cache", a_reconnect_hits_the_cache),
        (
            "kill_9_of_a_client_holding_frames",
            kill_9_of_a_client_holding_frames,
        ),
        (
            "a_gone_publisher_reaches_every_client",
            a_gone_publisher_reaches_every_client,
        ),
        (
            "a_deadline_reclaims_and_the_late_release_is_counted",
            a_deadline_reclaims_and_the_late_release_is_counted,
        ),
        (
            "no_fd_growth_over_2000_frames",
            no_fd_growth_over_2000_frames,
        ),
        (
            "a_client_cannot_write_a_frame",
            a_client_cannot_write_a_frame,
        ),
        (
            "no_publisher_is_a_typed_error",
            no_publisher_is_a_typed_error,
        ),
        (
            "hostile_clients_are_cut_off_and_the_others_go_on",
            hostile_clients_are_cut_off_and_the_others_go_on,
        ),
        (
            "a_peer_not_allowed_gets_no_fd",
            a_peer_not_allowed_gets_no_fd,
        ),
        (
            "flooding_connections_lock_nobody_out",
            flooding_connections_lock_nobody_out,
        ),
        (
            "a_half_sent_message_is_closed_at_the_deadline",
            a_half_sent_message_is_closed_at_the_deadline,
        ),
        (
            "one_uid_cannot_take_every_place",
            one_uid_cannot_take_every_place,
        ),
    ]);
}
