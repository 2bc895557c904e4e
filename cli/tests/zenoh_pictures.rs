//! What a Zenoh subscriber sees is what was captured: `zerocam serve
//! pattern:stamp --zenoh` at 1280x720, its `PREFIX/h264` and `PREFIX/jpeg`
//! samples decoded by FFmpeg (a decoder zerocam did not write), every
//! picture's stamp read back and measured against the source's own picture
//! of that frame. Loopback only: `tcp/127.0.0.1:PORT`, scouting off.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use zerocam_capture::ros::{CompressedImage, CompressedVideo, Message};
use zerocam_capture::zenoh_source::zenoh::Wait;
use zerocam_capture::zenoh_source::{open_session, Role, ZenohOptions};
use zerocam_capture::{PatternConfig, PatternSource, CAPTURE_FORMATS};
use zerocam_test_support::picture::{ffmpeg_luma, Pictures};

mod common;

use common::{free_port, serve_zenoh};

const W: usize = 1280;
const H: usize = 720;
/// Samples taken from each topic: three seconds at 30 fps.
const SAMPLES: usize = 90;

/// The first `SAMPLES` samples of `key` (each within 20 s: the publisher's
/// first frames, on a loaded machine), each message's encoded picture
/// (`data`, which also checks the message) one after another.
fn stream(port: u16, key: &str, data: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let options = ZenohOptions {
        connect: vec![format!("tcp/127.0.0.1:{port}")],
        ..ZenohOptions::default()
    };
    let session = open_session(&options, Role::Subscriber).unwrap();
    let subscriber = session.declare_subscriber(key).wait().unwrap();
    (0..SAMPLES)
        .flat_map(|_| {
            let sample = subscriber
                .recv_timeout(Duration::from_secs(20))
                .unwrap()
                .unwrap_or_else(|| panic!("a sample of {key} within 20 s"));
            data(&sample.payload().to_bytes())
        })
        .collect()
}

/// The stamped pattern's source, again: NV12 at 1280x720, as served.
fn source() -> PatternSource {
    PatternSource::new(PatternConfig {
        stamp: true,
        ..PatternConfig::new(CAPTURE_FORMATS[0], W as u32, H as u32)
    })
    .unwrap()
}

/// `stream` (FFmpeg's `format` demuxer) decoded by FFmpeg: `SAMPLES`
/// pictures, every stamp readable, sequences one after another from the
/// first (the publisher drops nothing for one subscriber on loopback), each
/// at least 35 dB from the source's picture of that frame.
fn assert_pictures(stream: &[u8], format: &str, what: &str) {
    let path = std::env::temp_dir().join(format!(
        "zerocam-zenoh-pictures-{}-{what}",
        std::process::id()
    ));
    std::fs::write(&path, stream).unwrap();
    let luma = ffmpeg_luma(&["-f", format], path.to_str().unwrap(), W, H, SAMPLES + 10);
    let _ = std::fs::remove_file(&path);
    let pictures = Pictures::check(&luma, &source(), W, H);
    assert_eq!((luma.len(), pictures.unreadable), (SAMPLES, 0), "{what}");
    let seq = pictures.sequences();
    let first = seq[0];
    assert_eq!(
        seq,
        (first..first + SAMPLES as u32).collect::<Vec<u32>>(),
        "{what}: every frame, in order"
    );
    assert!(
        pictures.min_psnr() >= 35.0,
        "{what}: PSNR {:?}",
        pictures.psnr
    );
}

/// The stamped pattern at 1280x720, served on Zenoh with `extra`.
fn serve(port: u16, extra: &[&str]) -> common::Running {
    serve_zenoh(
        port,
        "pattern:stamp",
        "rt/pic",
        100_000,
        &[&["--size", "1280x720"], extra].concat(),
    )
}

/// `PREFIX/h264` from `encoder` (`--h264`), one access unit a sample,
/// decoded by FFmpeg.
fn h264_pictures(encoder: &str, what: &str) {
    let port = free_port();
    let _server = serve(port, &["--h264", encoder]);
    let h264 = stream(port, "rt/pic/h264", |payload| {
        let msg = CompressedVideo::decode(payload).unwrap();
        assert_eq!(msg.format, "h264");
        msg.data.to_vec()
    });
    assert_pictures(&h264, "h264", what);
}

#[test]
fn every_h264_sample_decodes_to_its_captured_frame() {
    h264_pictures("software", "h264 (OpenH264)");
}

/// x264enc through GStreamer: each frame in as many slices as it has
/// threads, each sample still one whole access unit.
#[cfg(feature = "gstreamer")]
#[test]
fn every_x264enc_sample_decodes_to_its_captured_frame() {
    h264_pictures("gst:x264enc", "h264 (x264enc)");
}

#[test]
fn every_jpeg_sample_decodes_to_its_captured_frame() {
    let port = free_port();
    let _server = serve(port, &[]);
    let jpegs = stream(port, "rt/pic/jpeg", |payload| {
        let msg = CompressedImage::decode(payload).unwrap();
        assert_eq!(msg.format, "jpeg");
        msg.data.to_vec()
    });
    // One JPEG after another: FFmpeg's MJPEG demuxer splits them.
    assert_pictures(&jpegs, "mjpeg", "jpeg");
}

/// The stamped pattern at 1280x720 and 30 fps, served on Zenoh under
/// `prefix` with `extra`, its standard output piped.
fn serve_piped(
    port: u16,
    prefix: &str,
    extra: &[&str],
) -> (
    common::Running,
    std::io::BufReader<std::process::ChildStdout>,
) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_zerocam"))
        .args([
            "serve",
            "pattern:stamp",
            "--size",
            "1280x720",
            "--fps",
            "30",
        ])
        .args(["--zenoh", "--topic", prefix, "--listen"])
        .arg(format!("tcp/127.0.0.1:{port}"))
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    (common::Running(child), out)
}

/// `serve --zenoh --http`, a browser's MJPEG and a `PREFIX/jpeg`
/// subscriber at once: one JPEG encode a frame serves both (frames encoded
/// no more than captured, fewer than the pictures the two were sent), and
/// what each decodes is the captured picture.
#[test]
fn the_view_and_the_jpeg_topic_share_one_encode_a_frame() {
    let port = free_port();
    let (_server, mut out) = serve_piped(port, "rt/shared", &["--http", "127.0.0.1:0"]);
    let line = common::read_until(&mut out, "live view at http://");
    let url = format!(
        "{}stream.mjpg",
        line.trim().trim_start_matches("live view at ")
    );
    // Without a socket, every output's status is one line.
    let status = common::keep_latest(out, "jpeg: frames encoded");
    let jpegs = std::thread::spawn(move || {
        stream(port, "rt/shared/jpeg", |payload| {
            CompressedImage::decode(payload).unwrap().data.to_vec()
        })
    });
    let view = ffmpeg_luma(&["-f", "mpjpeg"], &url, W, H, SAMPLES);
    assert_pictures(&jpegs.join().unwrap(), "mjpeg", "jpeg, beside the view");
    let pictures = Pictures::check(&view, &source(), W, H);
    assert_eq!((view.len(), pictures.unreadable), (SAMPLES, 0), "the view");
    assert!(pictures.min_psnr() >= 35.0, "the view: {:?}", pictures.psnr);
    std::thread::sleep(Duration::from_millis(1500));
    let status = status.lock().unwrap().clone();
    let count = |label| common::count(&status, label);
    let (encoded, frames) = (count("jpeg: frames encoded "), count("zenoh: frames "));
    let sent = count("parts sent ") + count("jpeg sent ");
    assert!(
        encoded <= frames,
        "each frame encoded once at most: {status}"
    );
    assert!(
        sent >= 2 * SAMPLES as u64 && encoded < sent,
        "frames lent to both: {status}"
    );
}

/// `serve --zenoh --record X.mp4 --frames 300` (ten seconds: time for the
/// subscriber to come on a loaded machine): the recording and a
/// `PREFIX/h264` subscriber take the one encoder (opened once; the
/// subscriber's keyframe asked of it); serve finishes the file as it ends,
/// and FFmpeg decodes every frame from it, each its captured picture.
#[test]
fn a_recording_beside_the_h264_topic_takes_the_same_encoder() {
    use std::io::BufRead;
    let port = free_port();
    let file = std::env::temp_dir().join(format!("zerocam-serve-{}.mp4", std::process::id()));
    let record = ["--h264", "software", "--frames", "300", "--record"];
    let extra: Vec<&str> = record.into_iter().chain([file.to_str().unwrap()]).collect();
    let (server, out) = serve_piped(port, "rt/rec", &extra);
    let h264 = stream(port, "rt/rec/h264", |payload| {
        CompressedVideo::decode(payload).unwrap().data.to_vec()
    });
    // Its last line is the status at the end, after the file is finished.
    let last = out.lines().map_while(Result::ok).last().unwrap_or_default();
    let mut server = server;
    assert!(server.0.wait().unwrap().success(), "{last}");
    assert_pictures(&h264, "h264", "h264 beside a recording");
    assert_eq!(common::count(&last, "encoders opened "), 1, "{last}");
    assert_eq!(
        common::count(&last, "record: access units written "),
        300,
        "{last}"
    );
    let luma = ffmpeg_luma(&[], file.to_str().unwrap(), W, H, 400);
    let _ = std::fs::remove_file(&file);
    let pictures = Pictures::check(&luma, &source(), W, H);
    assert_eq!((luma.len(), pictures.unreadable), (300, 0), "the recording");
    assert_eq!(pictures.sequences(), (0..300).collect::<Vec<u32>>());
    assert!(pictures.min_psnr() >= 35.0, "{:?}", pictures.psnr);
}
