//! The `zerocam` CLI on libcamera's virtual camera `Virtual0`, in the kernel
//! lab; built against the guest root's libcamera (`tests/lab/libcamera-build`,
//! run by `tests/lab/test-all`), and the virtual camera lent to two
//! subscribers by `zerocam serve --writable-fds`.
#![cfg(all(feature = "lab", feature = "libcamera"))]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{fails, serial, zerocam as run};
use zerocam_capture::share::Subscriber;
use zerocam_capture::{FrameSource, StreamFormat, StreamStats};

#[test]
fn lab_libcamera_cli_list_shows_the_virtual_camera() {
    let _serial = serial();
    let out = run(&["list"]);
    assert!(
        out.contains("libcamera:Virtual0: Virtual Video Device (front)"),
        "{out}"
    );
    assert!(out.contains("  NV12 (NV12) [zerocam: NV12]"), "{out}");
}

#[test]
fn lab_libcamera_cli_bench_imports_each_buffer_once() {
    let _serial = serial();
    let out = run(&[
        "bench",
        "libcamera:Virtual0",
        "--json",
        "--format",
        "NV12",
        "--size",
        "640x480",
        "--frames",
        "100",
    ]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let buffers = v["buffers"].as_u64().unwrap();
    assert_eq!(v["frames"], 100, "{v}");
    assert_eq!(v["planes"], 1, "NV12 in one dma-buf: {v}");
    assert_eq!(v["imports"].as_u64().unwrap(), buffers, "{v}");
    assert_eq!(v["cache_hits"].as_u64().unwrap(), 100 - buffers, "{v}");
    assert!(
        v["source"]
            .as_str()
            .unwrap()
            .starts_with("libcamera:Virtual0 (libcamera): NV12 640x480"),
        "{v}"
    );
}

#[test]
fn lab_libcamera_cli_capture_png_has_the_bars() {
    let _serial = serial();
    let png = std::env::temp_dir().join("zerocam-lab-libcamera.png");
    let out = run(&[
        "capture",
        "libcamera:Virtual0",
        "--frames",
        "2",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(out.contains("wrote"), "{out}");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let info = reader.info().clone();
    assert_eq!((info.width, info.height), (640, 480));
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    reader.next_frame(&mut buf).unwrap();
    // Pixels of row 240: somewhere a white bar and somewhere a black one.
    let row = &buf[240 * 640 * 3..241 * 640 * 3];
    let px: Vec<&[u8]> = row.chunks(3).collect();
    assert!(
        px.iter().any(|p| p.iter().all(|&c| c >= 250)),
        "a white bar"
    );
    assert!(px.iter().any(|p| p.iter().all(|&c| c <= 5)), "a black bar");
}

#[test]
fn lab_libcamera_cli_unknown_camera_is_one_line() {
    let _serial = serial();
    // One line: libcamera's log is quiet.
    let err = fails(&["bench", "libcamera:Nope", "--frames", "5"]);
    assert!(
        err.contains("no camera \"Nope\"") && err.contains("Virtual0"),
        "{err}"
    );
}

#[test]
fn lab_libcamera_cli_fps_is_refused_not_ignored() {
    let _serial = serial();
    let err = fails(&["bench", "libcamera:Virtual0", "--fps", "5", "--frames", "5"]);
    assert!(
        err.contains("--fps") && err.contains("libcamera:Virtual0"),
        "{err}"
    );
}

#[test]
fn lab_libcamera_cli_default_source_is_the_libcamera_camera() {
    let _serial = serial();
    // vivid's /dev/video0 is there too: libcamera's camera comes first.
    let out = run(&["bench", "--json", "--frames", "5"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(
        v["source"]
            .as_str()
            .unwrap()
            .starts_with("libcamera:Virtual0 (libcamera)"),
        "{v}"
    );
}

/// Without `writable_fds`, `zerocam serve` refuses libcamera's read-write
/// buffers at the first frame (before any client could get an fd): one line
/// naming the buffer, exit 1, the socket file removed.
#[test]
fn lab_libcamera_cli_serve_refuses_read_write_buffers() {
    let _serial = serial();
    let dir = socket_dir("refused");
    let socket = dir.join("cam.sock");
    let err = fails(&[
        "serve",
        "libcamera:Virtual0",
        "--socket",
        socket.to_str().unwrap(),
    ]);
    assert!(err.contains("buffer 0 cannot be shared read-only"), "{err}");
    assert!(!socket.exists(), "the socket file is removed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What one client of the virtual camera saw.
#[derive(Debug)]
struct Seen {
    format: StreamFormat,
    shapes: Vec<Vec<usize>>,
    bytes_used: Vec<usize>,
    lumas: Vec<u8>,
    stats: StreamStats,
}

/// A client taking `n` frames from `socket`, reading row 0's first luma of each.
fn take_frames(socket: &Path, n: usize) -> Seen {
    let mut sub = Subscriber::connect(socket).unwrap();
    let format = sub.stream_format().clone();
    let (mut shapes, mut bytes_used, mut lumas) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let f = sub.next_frame(Duration::from_secs(20)).unwrap();
        shapes.push(f.tensor().shape().to_vec());
        bytes_used.push(f.bytes_used());
        lumas.push(f.tensor().plane(0).unwrap().map_read().unwrap()[0]);
    }
    Seen {
        format,
        shapes,
        bytes_used,
        lumas,
        stats: sub.stats(),
    }
}

/// `Virtual0` served the way `zerocam serve` serves it, with `writable_fds`
/// on (its buffers are read-write dma-bufs): two clients each take 12
/// frames of NV12 640x480 — one dma-buf per buffer, shape `[720, 640]`,
/// 460,800 bytes, a bar's luma in row 0 — importing each buffer once.
#[test]
fn lab_libcamera_cli_served_with_writable_fds_to_two_clients() {
    let _serial = serial();
    let dir = socket_dir("writable");
    let socket = dir.join("cam.sock");
    let mut serve = std::process::Command::new(assert_cmd::cargo::cargo_bin("zerocam"))
        .args([
            "serve",
            "libcamera:Virtual0",
            "--format",
            "NV12",
            "--size",
            "640x480",
            "--writable-fds",
            "--lease-ms",
            "10000",
            "--socket",
        ])
        .arg(&socket)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !socket.exists() {
        if let Some(status) = serve.try_wait().unwrap() {
            let out = serve.wait_with_output().unwrap();
            panic!(
                "serve exited ({status}) before listening: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "serve never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let socket = socket.clone();
            std::thread::spawn(move || take_frames(&socket, 12))
        })
        .collect();
    let seen: Vec<Seen> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(serve.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = serve.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!socket.exists(), "the socket file is removed");
    let buffers = 4; // the virtual camera's
    for seen in &seen {
        let f = &seen.format;
        assert_eq!(
            (f.format, f.width, f.height, f.planes.len()),
            ("NV12".parse().unwrap(), 640, 480, 1),
            "{seen:?}"
        );
        assert!(seen.shapes.iter().all(|s| s == &[720, 640]), "{seen:?}");
        assert!(
            seen.bytes_used.iter().all(|&b| b == 640 * 480 * 3 / 2),
            "{seen:?}"
        );
        assert!(
            seen.lumas
                .iter()
                .all(|y| [235, 210, 169, 144, 107, 82, 41, 16].contains(y)),
            "{seen:?}"
        );
        assert_eq!(seen.stats.frames, 12, "{seen:?}");
        let cache = seen.stats.cache;
        assert!(
            (1..=buffers).contains(&cache.misses),
            "each buffer imported once: {seen:?}"
        );
        assert_eq!(cache.hits + cache.misses, 12, "{seen:?}");
    }
    assert!(stdout.contains("violations 0"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn socket_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "zerocam-lab-libcamera-serve-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}
