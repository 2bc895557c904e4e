//! `zerocam serve` on the host's pattern source, with `zerocam bench` and
//! `zerocam capture` subscribing to it as `unix:SOCKET`, unchanged.
#![allow(clippy::unwrap_used)] // tests may panic

mod common;

use std::io::BufRead;

#[test]
fn bench_and_capture_subscribe_to_serve() {
    let dir = std::env::temp_dir().join(format!("zerocam-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("cam.sock");
    let (serve, mut out) =
        common::serve_socket(&["pattern", "--size", "320x240", "--fps", "100"], &socket);
    let sock = format!("unix:{}", socket.display());
    let bench = common::run_ok("zerocam", &["bench", "--json", "--frames", "50", &sock]);
    let v: serde_json::Value = serde_json::from_str(bench.trim()).unwrap();
    assert_eq!(v["frames"], 50);
    assert_eq!(v["imports"], 4, "4 buffers x 1 plane, imported once");
    assert!(v["source"].as_str().unwrap().starts_with(&sock), "{v}");
    let png = dir.join("x.png");
    let captured = common::run_ok(
        "zerocam",
        &[
            "capture",
            "--frames",
            "2",
            &sock,
            "-o",
            png.to_str().unwrap(),
        ],
    );
    assert!(captured.contains("wrote"), "{captured}");
    assert!(std::fs::metadata(&png).unwrap().len() > 100);
    // A status line a second names the clients that came.
    let mut status = String::new();
    while !status.contains("connections 2") {
        status.clear();
        assert!(out.read_line(&mut status).unwrap() > 0, "serve ended early");
    }
    assert!(status.contains("violations 0"), "{status}");
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}
