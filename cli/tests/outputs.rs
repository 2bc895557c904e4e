//! `zerocam serve` with every output at once (features `gstreamer` and
//! `zenoh`): the Unix socket, RTSP and Zenoh's H.264 topic from one
//! capture. One H.264 encoder serves RTSP and Zenoh, x264enc through
//! GStreamer, which keeps the frames it encodes on its own thread: each
//! frame is shared between it and the socket's clients, no copy; what each
//! client decodes (FFmpeg, a decoder zerocam did not write) is the captured
//! picture. Loopback only: RTSP on 127.0.0.1, Zenoh on
//! `tcp/127.0.0.1:PORT`, scouting off.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{count, free_port, keep_latest, read_until, serve_socket};
use zerocam_capture::ros::{CompressedVideo, Message};
use zerocam_capture::zenoh_source::zenoh::Wait;
use zerocam_capture::zenoh_source::{open_session, Role, ZenohOptions};
use zerocam_capture::{PatternConfig, PatternSource, CAPTURE_FORMATS};
use zerocam_test_support::picture::{ffmpeg_luma, Pictures};

const W: usize = 1280;
const H: usize = 720;
/// Pictures each client takes: three seconds at 30 fps.
const PICTURES: usize = 90;

/// The first `PICTURES` access units of the Zenoh topic `key`, one after
/// another (an Annex-B stream).
fn zenoh_h264(port: u16, key: &str) -> Vec<u8> {
    let options = ZenohOptions {
        connect: vec![format!("tcp/127.0.0.1:{port}")],
        ..ZenohOptions::default()
    };
    let session = open_session(&options, Role::Subscriber).unwrap();
    let subscriber = session.declare_subscriber(key).wait().unwrap();
    (0..PICTURES)
        .flat_map(|_| {
            let sample = subscriber
                .recv_timeout(Duration::from_secs(20))
                .unwrap()
                .unwrap_or_else(|| panic!("a sample of {key} within 20 s"));
            let payload = sample.payload().to_bytes();
            CompressedVideo::decode(&payload).unwrap().data.to_vec()
        })
        .collect()
}

/// Every one of `luma` has a readable stamp and is at least 35 dB from the
/// stamped pattern's own picture of its frame; their count.
fn assert_pictures(luma: &[Vec<u8>], what: &str) {
    let source = PatternSource::new(PatternConfig {
        stamp: true,
        ..PatternConfig::new(CAPTURE_FORMATS[0], W as u32, H as u32)
    })
    .unwrap();
    let pictures = Pictures::check(luma, &source, W, H);
    assert_eq!(
        (luma.len(), pictures.unreadable),
        (PICTURES, 0),
        "{what}: {PICTURES} pictures, every stamp readable"
    );
    assert!(
        pictures.min_psnr() >= 35.0,
        "{what}: PSNR {:?}",
        pictures.psnr
    );
}

#[test]
fn rtsp_and_zenoh_take_one_encoder_beside_the_socket() {
    let port = free_port();
    let socket = std::env::temp_dir().join(format!("zerocam-outputs-{}.sock", std::process::id()));
    let listen = format!("tcp/127.0.0.1:{port}");
    let (_server, mut out) = serve_socket(
        &[
            "pattern:stamp",
            "--size",
            "1280x720",
            "--fps",
            "30",
            "--rtsp",
            "127.0.0.1:0/cam",
            "--rtsp-encoder",
            "gst:x264enc",
            "--zenoh",
            "--topic",
            "rt/both",
            "--listen",
            &listen,
        ],
        &socket,
    );
    let line = read_until(&mut out, "RTSP at");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("rtsp://127.0.0.1:"))
        .unwrap()
        .to_owned();
    // The encoder's status line, the latest one.
    let status = keep_latest(out, "h264: frames encoded");
    // A client of the socket, the Zenoh subscriber and the RTSP player,
    // all at once.
    let bench = {
        let spec = format!("unix:{}", socket.display());
        std::thread::spawn(move || common::zerocam(&["bench", "--json", "--frames", "150", &spec]))
    };
    let zenoh = std::thread::spawn(move || zenoh_h264(port, "rt/both/h264"));
    let rtsp = ffmpeg_luma(&["-rtsp_transport", "tcp"], &url, W, H, PICTURES);
    let zenoh = zenoh.join().unwrap();
    let bench: serde_json::Value = serde_json::from_str(bench.join().unwrap().trim()).unwrap();
    assert_eq!(bench["frames"], 150, "the socket's client: {bench}");

    let file = std::env::temp_dir().join(format!("zerocam-outputs-{}.h264", std::process::id()));
    std::fs::write(&file, &zenoh).unwrap();
    let zenoh = ffmpeg_luma(&["-f", "h264"], file.to_str().unwrap(), W, H, PICTURES + 10);
    let _ = std::fs::remove_file(&file);
    assert_pictures(&rtsp, "RTSP (FFmpeg)");
    assert_pictures(&zenoh, "Zenoh's h264 topic (FFmpeg)");

    std::thread::sleep(Duration::from_millis(1500));
    let status = status.lock().unwrap().clone();
    assert_eq!(
        count(&status, "encoders opened "),
        1,
        "one H.264 encoder for RTSP and Zenoh: {status}"
    );
    // Each frame encoded once: at most one frame per frame captured, and
    // both clients' pictures came from it.
    assert!(
        count(&status, "frames encoded ") >= PICTURES as u64,
        "{status}"
    );
}
