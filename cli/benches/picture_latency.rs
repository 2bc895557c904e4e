//! Capture → decoded latency of every encoded output, measured from the
//! stamped pattern (`pattern:stamp`) by decoders zerocam did not write.
//!
//! For each output and encoder, at 1280x720 and 30 then 15 fps on loopback:
//! `zerocam` serves the stamped pattern, FFmpeg decodes what a viewer gets,
//! and each picture's stamp says when its frame was captured; the picture's
//! age when FFmpeg hands it over is its latency (both clocks are this
//! machine's `CLOCK_MONOTONIC`). Beside it, the encoder's own time per
//! frame (the same frames encoded in this process) and each picture's PSNR
//! against the source's own picture of that frame.
//!
//!     cargo bench -p zerocam-cli --features gstreamer,zenoh --bench picture_latency
//!
//! `ZEROCAM_BENCH_FRAMES` pictures per row (default 150, after 30 left to
//! settle). docs/benchmarks.md keeps a run's table and what it shows.
#![allow(clippy::unwrap_used, clippy::print_stdout)] // a bench binary: loud is right

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zerocam_capture::pattern::stamp::read_stamp;
use zerocam_capture::{FrameSource, PatternConfig, PatternSource, CAPTURE_FORMATS};
use zerocam_encode::encoder::{open_encoder, EncoderChoice, EncoderConfig};
use zerocam_encode::jpeg::JpegEncoder;
use zerocam_encode::Codec;
use zerocam_test_support::picture::{psnr, FfmpegPictures};

const W: usize = 1280;
const H: usize = 720;
/// Pictures decoded and dropped first: the stream's start (the decoder's
/// probe, the first keyframe) is not its steady latency.
const SETTLE: usize = 30;
/// FFmpeg's options for the least delay a client of its own can have: no
/// input buffering, no frame threading (which holds a frame per thread).
const LOW_DELAY: [&str; 4] = ["-fflags", "nobuffer", "-flags", "low_delay"];

/// A `zerocam` child, killed and reaped when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `zerocam ARGS` once it printed a line with `ready` (its stdout drained
/// after that); that line.
fn start(args: &[&str], ready: &str) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zerocam"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let server = Server(child);
    let line = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("zerocam {args:?} ended before {ready:?}"))
            .unwrap();
        if line.contains(ready) {
            break line;
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (server, line)
}

/// One row's measurements.
struct Row {
    output: String,
    fps: u32,
    latency_ms: Vec<f64>,
    psnr: Vec<f64>,
    unreadable: usize,
    encode_ms: f64,
}

/// Decodes `frames` pictures from `decoder` after [`SETTLE`]: each one's
/// latency and PSNR.
fn measure(
    mut decoder: FfmpegPictures,
    frames: usize,
    source: &PatternSource,
) -> (Vec<f64>, Vec<f64>, usize) {
    let mut taken = Vec::with_capacity(frames);
    for _ in 0..SETTLE + frames {
        let Some(picture) = decoder.next_picture() else {
            break;
        };
        taken.push(picture);
    }
    drop(decoder);
    let (mut latency, mut quality, mut unreadable) = (Vec::new(), Vec::new(), 0);
    for (luma, at) in taken.into_iter().skip(SETTLE) {
        let Some(stamp) = read_stamp(&luma, W, H, W) else {
            unreadable += 1;
            continue;
        };
        // The age now, less the time since FFmpeg handed the picture over.
        let age = stamp.age().saturating_sub(at.elapsed());
        latency.push(age.as_secs_f64() * 1e3);
        if let Some(want) = source.luma(stamp.sequence, Some(&stamp)) {
            quality.push(psnr(&luma, &want));
        }
    }
    (latency, quality, unreadable)
}

/// The stamped pattern as served: NV12 at 1280x720, unpaced.
fn source() -> PatternSource {
    PatternSource::new(PatternConfig {
        stamp: true,
        ..PatternConfig::new(CAPTURE_FORMATS[0], W as u32, H as u32)
    })
    .unwrap()
}

/// The encoder's own time per frame, median over 90 frames of the pattern
/// in this process: `choice` for H.264, or JPEG at `jpeg_quality`.
fn encode_ms(choice: Option<&EncoderChoice>, jpeg_quality: u8) -> f64 {
    let mut frames = source();
    let first = frames.next_frame(Duration::from_secs(1)).unwrap();
    let mut times = Vec::new();
    match choice {
        Some(choice) => {
            let config = EncoderConfig::new(Codec::H264);
            let (mut encoder, _) = open_encoder(choice, &config, &first).unwrap();
            drop(first);
            for _ in 0..90 {
                let frame = frames.next_frame(Duration::from_secs(1)).unwrap();
                let t = Instant::now();
                encoder.encode(frame).unwrap();
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        None => {
            let mut encoder = JpegEncoder::new(jpeg_quality).unwrap();
            drop(first);
            for _ in 0..90 {
                let frame = frames.next_frame(Duration::from_secs(1)).unwrap();
                let t = Instant::now();
                encoder.encode(&frame).unwrap();
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    percentile(&mut times, 0.5)
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p).round() as usize]
}

#[cfg(feature = "zenoh")]
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The live view's MJPEG stream at its default quality (80).
fn view(fps: u32, frames: usize) -> (Vec<f64>, Vec<f64>, usize) {
    let (_server, line) = start(
        &[
            "view",
            "pattern:stamp",
            "--size",
            "1280x720",
            "--fps",
            &fps.to_string(),
            "--http",
            "127.0.0.1:0",
        ],
        "live view at http://",
    );
    let addr = line
        .trim_start_matches("live view at http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let url = format!("http://{addr}/stream.mjpg");
    let decoder = FfmpegPictures::spawn(
        &[&LOW_DELAY[..], &["-f", "mpjpeg"]].concat(),
        &url,
        W,
        H,
        SETTLE + frames,
    );
    measure(decoder, frames, &source())
}

/// RTSP with `encoder`, read by FFmpeg over TCP, with its low-delay
/// options or as a player starts by default.
fn rtsp(fps: u32, frames: usize, encoder: &str, low_delay: bool) -> (Vec<f64>, Vec<f64>, usize) {
    let (_server, line) = start(
        &[
            "serve",
            "pattern:stamp",
            "--size",
            "1280x720",
            "--fps",
            &fps.to_string(),
            "--rtsp",
            "127.0.0.1:0/cam",
            "--rtsp-encoder",
            encoder,
        ],
        "RTSP at",
    );
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("rtsp://"))
        .unwrap()
        .to_owned();
    let mut options = vec!["-rtsp_transport", "tcp"];
    if low_delay {
        options.extend(LOW_DELAY);
    }
    measure(
        FfmpegPictures::spawn(&options, &url, W, H, SETTLE + frames),
        frames,
        &source(),
    )
}

/// A Zenoh topic of `serve --zenoh` (`h264` with `--h264 encoder`, or
/// `jpeg`), each sample's picture written to FFmpeg as it arrives.
#[cfg(feature = "zenoh")]
fn zenoh(
    fps: u32,
    frames: usize,
    topic: &'static str,
    encoder: &str,
) -> (Vec<f64>, Vec<f64>, usize) {
    use std::io::Write;
    use zerocam_capture::ros::{CompressedImage, CompressedVideo, Message};
    use zerocam_capture::zenoh_source::zenoh::Wait;
    use zerocam_capture::zenoh_source::{open_session, Role, ZenohOptions};
    let port = free_port();
    let _server = Server(
        Command::new(env!("CARGO_BIN_EXE_zerocam"))
            .args([
                "serve",
                "pattern:stamp",
                "--size",
                "1280x720",
                "--fps",
                &fps.to_string(),
            ])
            .args(["--zenoh", "--topic", "rt/bench", "--h264", encoder])
            .args(["--listen", &format!("tcp/127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let options = ZenohOptions {
        connect: vec![format!("tcp/127.0.0.1:{port}")],
        ..ZenohOptions::default()
    };
    let session = open_session(&options, Role::Subscriber).unwrap();
    let key = format!("rt/bench/{topic}");
    let subscriber = session.declare_subscriber(&key).wait().unwrap();
    let format = if topic == "h264" { "h264" } else { "mjpeg" };
    let mut decoder = FfmpegPictures::spawn(
        &[&LOW_DELAY[..], &["-f", format]].concat(),
        "pipe:0",
        W,
        H,
        SETTLE + frames,
    );
    let mut stdin = decoder.stdin().unwrap();
    let feeder = std::thread::spawn(move || {
        while let Ok(sample) = subscriber.recv_timeout(Duration::from_secs(10)) {
            let Some(sample) = sample else { break };
            let payload = sample.payload().to_bytes();
            let data = if topic == "h264" {
                CompressedVideo::decode(&payload).unwrap().data.to_vec()
            } else {
                CompressedImage::decode(&payload).unwrap().data.to_vec()
            };
            if stdin.write_all(&data).and_then(|()| stdin.flush()).is_err() {
                break; // FFmpeg has its pictures
            }
        }
    });
    let measured = measure(decoder, frames, &source());
    let _ = feeder.join();
    drop(session);
    measured
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this
    // without it: one short row then, so the binary is checked to run.
    let full = std::env::args().any(|a| a == "--bench");
    let frames = std::env::var("ZEROCAM_BENCH_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 150 } else { 10 });
    let openh264 = EncoderChoice::Software;
    let x264 = EncoderChoice::Gst("x264enc".into());
    let (h264_ms, x264_ms, view_jpeg_ms) = (
        encode_ms(Some(&openh264), 0),
        encode_ms(Some(&x264), 0),
        encode_ms(None, 80),
    );
    #[cfg(feature = "zenoh")]
    let zenoh_jpeg_ms = encode_ms(None, 85);
    let mut rows = Vec::new();
    for fps in if full { vec![30, 15] } else { vec![30] } {
        let mut row = |output: &str, measured: (Vec<f64>, Vec<f64>, usize), encode_ms: f64| {
            let (latency_ms, psnr, unreadable) = measured;
            rows.push(Row {
                output: output.into(),
                fps,
                latency_ms,
                psnr,
                unreadable,
                encode_ms,
            });
            let r = rows.last().unwrap();
            eprintln!("{} at {fps} fps: {} pictures", r.output, r.latency_ms.len());
        };
        row(
            "view, MJPEG (libjpeg-turbo, q80)",
            view(fps, frames),
            view_jpeg_ms,
        );
        if !full {
            break;
        }
        row(
            "RTSP, OpenH264",
            rtsp(fps, frames, "software", true),
            h264_ms,
        );
        row(
            "RTSP, x264enc",
            rtsp(fps, frames, "gst:x264enc", true),
            x264_ms,
        );
        row(
            "RTSP, OpenH264, FFmpeg's default buffering",
            rtsp(fps, frames, "software", false),
            h264_ms,
        );
        row(
            "RTSP, x264enc, FFmpeg's default buffering",
            rtsp(fps, frames, "gst:x264enc", false),
            x264_ms,
        );
        #[cfg(feature = "zenoh")]
        {
            row(
                "Zenoh h264, OpenH264",
                zenoh(fps, frames, "h264", "software"),
                h264_ms,
            );
            row(
                "Zenoh h264, x264enc",
                zenoh(fps, frames, "h264", "gst:x264enc"),
                x264_ms,
            );
            row(
                "Zenoh jpeg (libjpeg-turbo, q85)",
                zenoh(fps, frames, "jpeg", "none"),
                zenoh_jpeg_ms,
            );
        }
    }
    println!("| output, encoder | fps | pictures | latency median ms | p95 ms | encode ms/frame | PSNR median dB | min dB |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut medians = Vec::new();
    for r in &mut rows {
        let median = percentile(&mut r.latency_ms, 0.5);
        let p95 = percentile(&mut r.latency_ms, 0.95);
        let psnr_median = percentile(&mut r.psnr, 0.5);
        let psnr_min = r.psnr.first().copied().unwrap_or(f64::NAN);
        let unreadable = if r.unreadable > 0 {
            format!(" ({} unreadable)", r.unreadable)
        } else {
            String::new()
        };
        println!(
            "| {} | {} | {}{unreadable} | {median:.1} | {p95:.1} | {:.2} | {psnr_median:.1} | {psnr_min:.1} |",
            r.output,
            r.fps,
            r.latency_ms.len(),
            r.encode_ms,
        );
        medians.push((r.output.clone(), r.fps, median));
    }
    // The goals, on this run's own figures.
    for fps in [30, 15] {
        let median = |name: &str| {
            medians
                .iter()
                .find(|(output, f, _)| *f == fps && output == name)
                .map(|m| m.2)
        };
        let (Some(view), Some(openh264), Some(x264)) = (
            median("view, MJPEG (libjpeg-turbo, q80)"),
            median("RTSP, OpenH264"),
            median("RTSP, x264enc"),
        ) else {
            continue;
        };
        println!(
            "{fps} fps: RTSP x264enc - OpenH264 = {:+.1} ms (goal within 5); RTSP OpenH264 - view = {:+.1} ms (goal <= encode {h264_ms:.1} + 5); RTSP x264enc - view = {:+.1} ms (goal <= encode {x264_ms:.1} + 5)",
            x264 - openh264,
            openh264 - view,
            x264 - view,
        );
    }
}
