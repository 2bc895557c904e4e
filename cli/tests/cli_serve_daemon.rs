//! `zerocam serve` as a daemon: SIGTERM with clients holding frames (each
//! told `Goodbye(Stopping)`, the socket file removed, exit 0), a second
//! signal ending it at once, a listening socket passed the systemd way
//! (`LISTEN_FDS`, `LISTEN_PID`, fd 3) and sockets that are not one, the log
//! rate limit (lines counted), and `zerocam bench` of two clients over 2,000
//! frames each with 200 idle connections kept open (frames counted).
#![allow(clippy::unwrap_used)] // tests may panic

mod common;

use std::io::{BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::read_until;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use zerocam_capture::share::{Disconnect, SubscribeError, Subscriber};
use zerocam_capture::{CaptureError, FrameSource};

const ZEROCAM: &str = env!("CARGO_BIN_EXE_zerocam");

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zerocam-daemon-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `zerocam serve pattern` (100 fps unless `extra` says, 320x240) with
/// `extra` arguments, read up to its `serving at` line, which is returned.
fn serve(socket: &Path, extra: &[&str]) -> (Child, BufReader<ChildStdout>, String) {
    let mut cmd = Command::new(ZEROCAM);
    cmd.args(["serve", "pattern", "--size", "320x240"]);
    if !extra.contains(&"--fps") {
        cmd.args(["--fps", "100"]);
    }
    cmd.arg("--socket").arg(socket).args(extra);
    start(cmd)
}

fn start(mut cmd: Command) -> (Child, BufReader<ChildStdout>, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let line = read_until(&mut out, "serving at");
    (child, out, line)
}

fn signal(child: &Child, s: Signal) {
    kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), s).unwrap();
}

fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// What a client that holds `hold` frames sees after them: the Goodbye's
/// reason, or what else ended it.
fn hold_then_wait(socket: &Path, hold: usize, holding: &Barrier) -> String {
    let mut sub = Subscriber::connect(socket).unwrap();
    let held: Vec<_> = (0..hold)
        .map(|_| sub.next_frame(Duration::from_secs(5)).unwrap())
        .collect();
    holding.wait();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        match sub.next_frame(Duration::from_millis(100)) {
            Err(CaptureError::Share(SubscribeError::Disconnected {
                reason: Disconnect::Goodbye(reason),
                ..
            })) => {
                drop(held);
                return format!("{reason:?}");
            }
            Err(CaptureError::NoFreeBuffer { .. } | CaptureError::Timeout { .. }) => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(_) => {}
            Err(e) => return format!("other: {e}"),
        }
    }
    "nothing".into()
}

/// SIGTERM while 4 clients hold 2 frames each: every client gets
/// `Goodbye(Stopping)`, the socket file is removed and serve exits 0,
/// printing its last status line.
#[test]
fn sigterm_tells_clients_holding_frames_and_cleans_up() {
    let d = dir("term");
    let socket = d.join("cam.sock");
    let (mut child, mut out, _) = serve(&socket, &[]);
    let holding = Arc::new(Barrier::new(5));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (socket, holding) = (socket.clone(), holding.clone());
            std::thread::spawn(move || hold_then_wait(&socket, 2, &holding))
        })
        .collect();
    holding.wait();
    signal(&child, Signal::SIGTERM);
    let stopping = read_until(&mut out, "stopping on SIGTERM");
    assert!(stopping.contains("4 clients told"), "{stopping}");
    for c in clients {
        assert_eq!(c.join().unwrap(), "Stopping");
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&mut child));
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(
        rest.contains("connections 4"),
        "the last status line: {rest}"
    );
    assert!(!socket.exists(), "the socket file is removed");
    let _ = std::fs::remove_dir_all(&d);
}

/// A second signal while serve waits for leases to end (here up to 60 s)
/// ends it at once: exit 128 + SIGTERM, the socket file removed.
#[test]
fn a_second_signal_ends_serve_at_once() {
    let d = dir("twice");
    let socket = d.join("cam.sock");
    let (mut child, mut out, _) = serve(&socket, &["--drain-ms", "60000"]);
    // Two clients that hold their frames and never release them.
    let mut subs: Vec<_> = (0..2)
        .map(|_| Subscriber::connect(&socket).unwrap())
        .collect();
    let held: Vec<_> = subs
        .iter_mut()
        .map(|s| s.next_frame(Duration::from_secs(5)).unwrap())
        .collect();
    signal(&child, Signal::SIGTERM);
    let stopping = read_until(&mut out, "stopping on SIGTERM");
    assert!(stopping.contains("waiting up to 60000 ms"), "{stopping}");
    let t = Instant::now();
    signal(&child, Signal::SIGINT);
    let status = child.wait().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "ended by the second signal, not the drain's end"
    );
    assert_eq!(status.code(), Some(128 + 2), "128 + SIGINT");
    assert!(!socket.exists(), "the socket file is removed");
    drop((held, subs));
    let _ = std::fs::remove_dir_all(&d);
}

/// A shell that moves `fd` to fd 3 and execs zerocam as systemd would:
/// `LISTEN_PID` its own pid, `LISTEN_FDS` as given.
fn systemd_style(fd: i32, listen_fds: &str, args: &[&str]) -> Command {
    // The fd reaches the shell: `inherit` cleared its close-on-exec flag.
    let raw = fd;
    let moves = if raw == 3 {
        String::new()
    } else {
        format!("exec 3<&{raw} {raw}<&-; ")
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "{moves}LISTEN_PID=$$ LISTEN_FDS={listen_fds} exec \"$0\" \"$@\""
        ))
        .arg(ZEROCAM)
        .args(args);
    cmd
}

/// A listening socket passed as fd 3 (`LISTEN_FDS=1`, `LISTEN_PID` the
/// serving process): serve listens on it, a client gets frames, and after
/// SIGTERM the socket file stays (it is systemd's).
#[test]
fn a_socket_passed_by_systemd_serves() {
    let d = dir("systemd");
    let path = d.join("cam.sock");
    let listener = UnixListener::bind(&path).unwrap();
    inherit(&listener);
    let cmd = systemd_style(
        listener.as_raw_fd(),
        "1",
        &["serve", "pattern", "--size", "320x240", "--fps", "100"],
    );
    let (mut child, mut out, line) = start(cmd);
    assert!(line.contains(path.to_str().unwrap()), "{line}");
    assert!(line.contains("socket passed by systemd"), "{line}");
    let mut sub = Subscriber::connect(&path).unwrap();
    for _ in 0..5 {
        sub.next_frame(Duration::from_secs(5)).unwrap();
    }
    assert_eq!(sub.stream_format().width, 320);
    signal(&child, Signal::SIGTERM);
    let _ = read_until(&mut out, "stopping on SIGTERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&mut child));
    assert!(path.exists(), "systemd's socket file is left in place");
    drop(listener);
    let _ = std::fs::remove_dir_all(&d);
}

/// Clears `FD_CLOEXEC` on `sock` so a child inherits it.
fn inherit(sock: &impl std::os::fd::AsFd) {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    fcntl(sock.as_fd(), FcntlArg::F_SETFD(FdFlag::empty())).unwrap();
}

/// Not a listening socket as fd 3, or two fds: one line naming what is
/// wrong, exit 1, nothing served.
#[test]
fn a_passed_fd_that_is_not_a_listener_is_refused() {
    let (a, _b) = UnixStream::pair().unwrap();
    inherit(&a);
    let out = systemd_style(a.as_raw_fd(), "1", &["serve", "pattern"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("fd 3 is not a listening Unix stream socket: not listening"),
        "{err}"
    );
    let out = systemd_style(a.as_raw_fd(), "2", &["serve", "pattern"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("exactly one socket"), "{err}");
    assert!(err.contains("LISTEN_FDS=Some(\"2\")"), "{err}");
}

/// 200 clients that each send garbage: one log line for the first, and
/// when serve stops one line counting the other 199; not 200 lines.
#[test]
fn refusal_lines_are_rate_limited() {
    let d = dir("log");
    let socket = d.join("cam.sock");
    let (mut child, mut out, _) = serve(&socket, &[]);
    for _ in 0..200 {
        let mut s = UnixStream::connect(&socket).unwrap();
        let _ = s.write_all(b"GET / HTTP/1.1\r\n\r\n");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.read_to_end(&mut Vec::new()); // until serve closes it
    }
    signal(&child, Signal::SIGTERM);
    let _ = read_until(&mut out, "stopping on SIGTERM");
    let err = stderr_of(&mut child);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("zerocam serve: client pid") && lines[0].ends_with("disconnected"),
        "{err}"
    );
    assert!(
        lines[1]
            .contains("disconnected (protocol violation) (and 199 more like it in the last 10 s)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Keeps `n` idle connections open to `socket` (reopening those serve
/// closes) until `stop` is set; how many it opened.
fn idle_flood(socket: PathBuf, n: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut open: Vec<UnixStream> = Vec::new();
        let mut opened = 0;
        while !stop.load(Ordering::Relaxed) {
            open.retain(|s| {
                s.set_nonblocking(true).unwrap();
                let mut b = [0; 64];
                // Open while nothing came: a Goodbye or EOF means closed.
                matches!((&*s).read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            });
            while open.len() < n {
                open.push(UnixStream::connect(&socket).unwrap());
                opened += 1;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        opened
    })
}

/// Two `zerocam bench --json --frames 2000` clients at once; their frames
/// and drops.
fn two_benches(socket: &Path) -> Vec<(u64, u64)> {
    let sock = format!("unix:{}", socket.display());
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(ZEROCAM)
                .args(["bench", "--json", "--frames", "2000", &sock])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "bench: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
            (
                v["frames"].as_u64().unwrap(),
                v["dropped"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// 2 bench clients over 2,000 frames each, without and then with 200 idle
/// connections kept open (reopened as serve closes them): every frame asked
/// for arrives both times (counted, not timed), and the flood really ran.
/// Prints both runs' frames and drops (docs/testing.md quotes a run).
#[test]
fn idle_connections_cost_bench_clients_no_frames() {
    let d = dir("bench");
    let socket = d.join("cam.sock");
    let (mut child, mut out, _) = serve(&socket, &["--fps", "200"]);
    let quiet = two_benches(&socket);
    let stop = Arc::new(AtomicBool::new(false));
    let flood = idle_flood(socket.clone(), 200, stop.clone());
    std::thread::sleep(Duration::from_millis(300));
    let flooded = two_benches(&socket);
    stop.store(true, Ordering::Relaxed);
    let opened = flood.join().unwrap();
    signal(&child, Signal::SIGTERM);
    let _ = read_until(&mut out, "stopping on SIGTERM");
    let mut last = String::new();
    out.read_to_string(&mut last).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    println!("without idle connections (frames, dropped): {quiet:?}");
    println!("with 200 idle connections (frames, dropped): {flooded:?}; {opened} opened");
    println!("serve: {last}");
    for (frames, _) in quiet.iter().chain(&flooded) {
        assert_eq!(*frames, 2000);
    }
    assert!(opened >= 200, "{opened}");
    assert!(
        last.contains("refused 0"),
        "no bench client was refused: {last}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Caps of 0 and a mode that is not octal: one line naming the value.
#[test]
fn bad_caps_and_modes_are_one_line() {
    for (flag, value) in [
        ("--max-clients", "0"),
        ("--max-pending", "0"),
        ("--max-clients-per-uid", "0"),
        ("--mode", "999"),
    ] {
        let err = common::fails(&[
            "serve",
            "pattern",
            "--socket",
            "/nonexistent/x.sock",
            flag,
            value,
        ]);
        assert!(
            err.contains(flag) || err.contains(value),
            "{flag} {value}: {err}"
        );
    }
}
