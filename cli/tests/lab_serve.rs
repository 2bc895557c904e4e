//! `zerocam serve` on vivid in the kernel lab (`cargo lab -p zerocam-cli
//! --test lab_serve`): SIGTERM while two clients hold frames, on both nodes
//! (NV12, NV12M) in both buffer modes (MMAP exported read-only, a read-only
//! DMABUF pool). Each client is told `Goodbye(Stopping)` and releases what it
//! holds, so serve's drain ends long before its deadline with nothing expired
//! or reclaimed; serve exits 0 and removes its socket file; and the node
//! streams again at once in the same mode from a new `Stream` while the
//! clients still hold their imports (the driver has every buffer back).
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod common;

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use zerocam_capture::share::{Disconnect, SubscribeError, Subscriber};
use zerocam_capture::{BufferMode, CaptureError, Device, FrameSource, Stream, StreamConfig};
use zerocam_test_support::lab::fd_list;

use common::{read_until, serial};

const ZEROCAM: &str = env!("CARGO_BIN_EXE_zerocam");
/// How long a client or the new stream waits for a frame (emulated guest).
const WAIT: Duration = Duration::from_secs(10);
/// serve's `--drain-ms`: far longer than the test allows, so an early end
/// means every lease was released, not timed out.
const DRAIN_MS: &str = "60000";

/// `zerocam serve PATH` (FORMAT 320x180 at 15 fps, 8 buffers, MEMORY) at
/// `socket`, read up to its `serving at` line.
fn serve(path: &str, format: &str, memory: &str, socket: &Path) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(ZEROCAM)
        .args(["serve", path, "--format", format, "--size", "320x180"])
        // Slow clients under emulation: 8 buffers leave 6 to lend, more
        // than the 4 frames held, and leases outlive the test.
        .args(["--fps", "15", "--buffers", "8", "--memory", memory])
        .args(["--lease-ms", "60000", "--drain-ms", DRAIN_MS, "--socket"])
        .arg(socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let line = read_until(&mut out, "serving at");
    assert!(line.contains(socket.to_str().unwrap()), "{line}");
    (child, out)
}

/// What one client saw: how the stream ended for it, and the subscriber
/// itself (kept, with its imports, until the caller drops it).
struct Client {
    ended: String,
    subscriber: Subscriber,
}

/// A client that takes 2 frames of `format` 320x180 and holds them until the
/// publisher's Goodbye, then lets them go.
fn hold_until_goodbye(socket: &Path, format: &str, holding: &Barrier) -> Client {
    let mut sub = Subscriber::connect(socket).unwrap();
    let f = sub.stream_format().clone();
    assert_eq!(
        (f.format, f.width, f.height),
        (format.parse().unwrap(), 320, 180),
        "the format the client was told"
    );
    let held: Vec<_> = (0..2).map(|_| sub.next_frame(WAIT).unwrap()).collect();
    holding.wait();
    let t = Instant::now();
    let ended = loop {
        assert!(t.elapsed() < Duration::from_secs(30), "no Goodbye came");
        match sub.next_frame(Duration::from_millis(100)) {
            Err(CaptureError::Share(SubscribeError::Disconnected {
                reason: Disconnect::Goodbye(reason),
                ..
            })) => break format!("Goodbye({reason:?})"),
            // At its cap of 2: skipped by the publisher, nothing comes.
            Err(CaptureError::NoFreeBuffer { .. } | CaptureError::Timeout { .. }) => {}
            Ok(_) => {}
            Err(e) => break format!("other: {e}"),
        }
    };
    drop(held); // the releases serve's drain waits for
    Client {
        ended,
        subscriber: sub,
    }
}

/// A new stream on `path` in `mode` (4 buffers, REQBUFS on the node serve
/// used), 5 frames of `format`.
fn stream_again(path: &str, format: &str, mode: BufferMode) {
    let mut d = Device::open(path).unwrap();
    d.set_format(format.parse().unwrap(), 320, 180).unwrap();
    let config = StreamConfig {
        buffers: 4,
        mode,
        ..Default::default()
    };
    let mut s = Stream::new(d, config)
        .unwrap_or_else(|e| panic!("{path} {}: streams again after serve: {e}", mode.name()));
    for _ in 0..5 {
        let f = s.next_frame(WAIT).unwrap();
        assert_eq!(f.tensor().shape()[1], 320);
    }
}

/// This process's open fds but the DMA heap's, which zerocam-tensor keeps
/// open once a DMABUF pool was allocated.
fn fds() -> Vec<String> {
    let mut v = fd_list();
    v.retain(|f| f != "/dev/dma_heap/system");
    v
}

fn socket_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zerocam-lab-serve-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn lab_serve_sigterm_gives_every_buffer_back_in_both_modes() {
    let _serial = serial();
    for (path, format) in [("/dev/video0", "NV12"), ("/dev/video1", "NV12M")] {
        for (memory, mode) in [("mmap", BufferMode::Mmap), ("dmabuf", BufferMode::DmaBuf)] {
            let name = format!("{format}-{memory}");
            let fds_before = fds();
            let dir = socket_dir(&name);
            let socket = dir.join("cam.sock");
            let (mut child, mut out) = serve(path, format, memory, &socket);
            let holding = Arc::new(Barrier::new(3));
            let clients: Vec<_> = (0..2)
                .map(|_| {
                    let (socket, holding, format) =
                        (socket.clone(), holding.clone(), format.to_owned());
                    std::thread::spawn(move || hold_until_goodbye(&socket, &format, &holding))
                })
                .collect();
            holding.wait(); // both clients hold 2 frames each
            let t = Instant::now();
            kill(
                Pid::from_raw(i32::try_from(child.id()).unwrap()),
                Signal::SIGTERM,
            )
            .unwrap();
            let stopping = read_until(&mut out, "stopping on SIGTERM");
            assert!(stopping.contains("2 clients told"), "{name}: {stopping}");
            // Each client holds 2 frames: 2 to 4 frames lent, as they overlap.
            let lent: u32 = stopping
                .split(", ")
                .find_map(|p| p.strip_suffix(" frames lent"))
                .unwrap()
                .parse()
                .unwrap();
            assert!((2..=4).contains(&lent), "{name}: {stopping}");
            let clients: Vec<Client> = clients.into_iter().map(|c| c.join().unwrap()).collect();
            for c in &clients {
                assert_eq!(c.ended, "Goodbye(Stopping)", "{name}");
                let stats = c.subscriber.stats();
                assert!(stats.frames >= 2, "{name}: {stats:?}");
            }
            let status = child.wait().unwrap();
            let took = t.elapsed();
            let mut last = String::new();
            out.read_to_string(&mut last).unwrap();
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            assert_eq!(status.code(), Some(0), "{name}: {err}");
            assert!(err.is_empty(), "{name}: serve said {err}");
            // The drain ended on the releases, not at its 60 s deadline.
            assert!(took < Duration::from_secs(20), "{name}: {took:?}");
            for field in [
                "connections 2",
                "lent 4",
                "expired 0",
                "reclaimed 0",
                "violations 0",
            ] {
                assert!(last.contains(field), "{name}: {field} in {last}");
            }
            assert!(!socket.exists(), "{name}: the socket file is removed");
            // The node is free and every buffer is back: REQBUFS and
            // streaming in the same mode, at once, while both clients still
            // hold their imports of serve's buffers.
            stream_again(path, format, mode);
            println!("{name}: stopped in {took:?}; streamed again; {last}");
            drop((clients, out, child));
            assert_eq!(fds(), fds_before, "{name}: every import closed");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
