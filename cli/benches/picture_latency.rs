//! Capture → decoded latency of every encoded output, measured from the
//! stamped pattern (`pattern:stamp`) by decoders zerocam did not write.
//!
//! For each output and encoder, at 1280x720 and 30 then 15 fps on loopback:
//! `zerocam` serves the stamped pattern, FFmpeg (and, for RTSP and the
//! view, GStreamer's client too; for Zenoh's H.264, FFmpeg told where each
//! access unit ends) decodes what a viewer gets,
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

use std::time::{Duration, Instant};

use zerocam_capture::pattern::stamp::read_stamp;
use zerocam_capture::{Frame, FrameSource, PatternConfig, PatternSource, CAPTURE_FORMATS};
use zerocam_encode::encoder::{open_encoder, EncoderChoice, EncoderConfig};
use zerocam_encode::jpeg::JpegEncoder;
use zerocam_encode::Codec;
use zerocam_test_support::picture::{DecodedPictures, Pictures};

// The CLI tests' own ways to start `zerocam` (killed when dropped).
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/view/mod.rs"]
mod view;

const W: usize = 1280;
const H: usize = 720;
/// Pictures decoded and dropped first: the stream's start (the decoder's
/// probe, the first keyframe) is not its steady latency.
const SETTLE: usize = 30;
/// FFmpeg's options for the least delay a client of its own can have: no
/// input buffering, no frame threading (which holds a frame per thread).
const LOW_DELAY: [&str; 4] = ["-fflags", "nobuffer", "-flags", "low_delay"];

/// The rows the goals compare.
const VIEW: &str = "view, MJPEG (libjpeg-turbo, q80)";
const VIEW_GST: &str = "view, MJPEG (libjpeg-turbo, q80), GStreamer's client";
const RTSP_OPENH264: &str = "RTSP, OpenH264";
const RTSP_X264: &str = "RTSP, x264enc";
#[cfg(feature = "zenoh")]
const ZENOH_OPENH264_AUD: &str = "Zenoh h264, OpenH264, a delimiter after each sample";
#[cfg(feature = "zenoh")]
const ZENOH_X264_AUD: &str = "Zenoh h264, x264enc, a delimiter after each sample";

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
    mut decoder: DecodedPictures,
    frames: usize,
    source: &PatternSource,
) -> (Vec<f64>, Vec<f64>, usize) {
    let taken: Vec<_> = std::iter::from_fn(|| decoder.next_picture())
        .take(SETTLE + frames)
        .collect();
    drop(decoder);
    let (lumas, at): (Vec<Vec<u8>>, Vec<Instant>) = taken.into_iter().skip(SETTLE).unzip();
    // Each readable picture's age when FFmpeg handed it over: its age now,
    // less the time since then.
    let latency = lumas
        .iter()
        .zip(&at)
        .filter_map(|(luma, at)| {
            read_stamp(luma, W, H, W).map(|s| s.age().saturating_sub(at.elapsed()))
        })
        .map(|age| age.as_secs_f64() * 1e3)
        .collect();
    let pictures = Pictures::check(&lumas, source, W, H);
    (latency, pictures.psnr, pictures.unreadable)
}

/// The stamped pattern as served: NV12 at 1280x720, unpaced.
fn source() -> PatternSource {
    PatternSource::new(PatternConfig {
        stamp: true,
        ..PatternConfig::new(CAPTURE_FORMATS[0], W as u32, H as u32)
    })
    .unwrap()
}

/// The encoder's own time per frame: `encode` timed over 90 frames of the
/// pattern in this process, the median.
fn encode_ms(mut encode: impl FnMut(Frame)) -> f64 {
    let mut frames = source();
    let mut times: Vec<f64> = (0..90)
        .map(|_| {
            let frame = frames.next_frame(Duration::from_secs(1)).unwrap();
            let t = Instant::now();
            encode(frame);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    percentile(&mut times, 0.5)
}

/// [`encode_ms`] of the H.264 encoder `choice`.
fn h264_ms(choice: &EncoderChoice) -> f64 {
    let first = source().next_frame(Duration::from_secs(1)).unwrap();
    let (mut encoder, _) = open_encoder(choice, &EncoderConfig::new(Codec::H264), &first).unwrap();
    drop(first);
    encode_ms(|frame| {
        encoder.encode(frame).unwrap();
    })
}

/// [`encode_ms`] of JPEG at `quality`.
fn jpeg_ms(quality: u8) -> f64 {
    let mut encoder = JpegEncoder::new(quality).unwrap();
    encode_ms(|frame| {
        encoder.encode(&frame).unwrap();
    })
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p).round() as usize]
}

/// The live view's MJPEG stream at its default quality (80), read by
/// FFmpeg's multipart demuxer or by GStreamer's (`souphttpsrc !
/// multipartdemux ! jpegdec`).
fn view(fps: u32, frames: usize, client: Client) -> (Vec<f64>, Vec<f64>, usize) {
    let view = view::View::start_device("pattern:stamp", "1280x720", &["--fps", &fps.to_string()]);
    let addr = &view.addr;
    let url = format!("http://{addr}/stream.mjpg");
    let decoder = match client {
        Client::Gstreamer => DecodedPictures::gstreamer(
            &format!("souphttpsrc location={url} is-live=true ! multipartdemux ! jpegdec"),
            W,
            H,
        ),
        _ => DecodedPictures::spawn(
            &[&LOW_DELAY[..], &["-f", "mpjpeg"]].concat(),
            &url,
            W,
            H,
            SETTLE + frames,
        ),
    };
    measure(decoder, frames, &source())
}

/// Which RTSP client reads the stream.
#[derive(Clone, Copy)]
enum Client {
    /// FFmpeg with its low-delay options.
    FfmpegLowDelay,
    /// FFmpeg as a player starts it.
    FfmpegDefault,
    /// GStreamer's `rtspsrc latency=0 ! rtph264depay ! h264parse !
    /// openh264dec`: the depayloader ends an access unit on the RTP marker
    /// bit, where FFmpeg's parser waits for the next one to begin.
    Gstreamer,
}

/// The GStreamer client's H.264 decoder: `ZEROCAM_BENCH_GST_DECODER`
/// (e.g. `avdec_h264 max-threads=1`, from gstreamer1.0-libav), by default
/// `openh264dec` (gst-plugins-bad, which the tests install).
fn gst_decoder() -> String {
    std::env::var("ZEROCAM_BENCH_GST_DECODER").unwrap_or_else(|_| "openh264dec".into())
}

/// RTSP with `encoder` over TCP, read by `client`.
fn rtsp(fps: u32, frames: usize, encoder: &str, client: Client) -> (Vec<f64>, Vec<f64>, usize) {
    let fps = fps.to_string();
    let (_server, line) = common::start_until(
        &[
            "serve",
            "pattern:stamp",
            "--size",
            "1280x720",
            "--fps",
            &fps,
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
    let decoder = match client {
        Client::FfmpegLowDelay | Client::FfmpegDefault => {
            if matches!(client, Client::FfmpegLowDelay) {
                options.extend(LOW_DELAY);
            }
            DecodedPictures::spawn(&options, &url, W, H, SETTLE + frames)
        }
        Client::Gstreamer => DecodedPictures::gstreamer(
            &format!(
                "rtspsrc location={url} protocols=tcp latency=0 ! rtph264depay ! h264parse ! {}",
                gst_decoder()
            ),
            W,
            H,
        ),
    };
    measure(decoder, frames, &source())
}

/// An access unit delimiter (H.264 7.3.2.4, any slice types): written
/// after each sample, it tells FFmpeg's parser that the access unit before
/// it is whole, where otherwise it waits for the next one to begin.
#[cfg(feature = "zenoh")]
const DELIMITER: [u8; 6] = [0, 0, 0, 1, 0x09, 0xf0];

/// A Zenoh topic of `serve --zenoh` (`h264` with `--h264 encoder`, or
/// `jpeg`), each sample's picture written to FFmpeg as it arrives; with
/// `delimit`, an H.264 sample followed by [`DELIMITER`] (a client that
/// ends an access unit on its sample, as a player fed from Zenoh can).
#[cfg(feature = "zenoh")]
fn zenoh(
    fps: u32,
    frames: usize,
    topic: &'static str,
    encoder: &str,
    delimit: bool,
) -> (Vec<f64>, Vec<f64>, usize) {
    use std::io::Write;
    use zerocam_capture::ros::{CompressedImage, CompressedVideo, Message};
    use zerocam_capture::zenoh_source::zenoh::Wait;
    use zerocam_capture::zenoh_source::{open_session, Role, ZenohOptions};
    let port = common::free_port();
    let fps = fps.to_string();
    let _server = common::serve_zenoh(
        port,
        "pattern:stamp",
        "rt/bench",
        u64::MAX,
        &["--size", "1280x720", "--fps", &fps, "--h264", encoder],
    );
    let options = ZenohOptions {
        connect: vec![format!("tcp/127.0.0.1:{port}")],
        ..ZenohOptions::default()
    };
    let session = open_session(&options, Role::Subscriber).unwrap();
    let key = format!("rt/bench/{topic}");
    let subscriber = session.declare_subscriber(&key).wait().unwrap();
    let format = if topic == "h264" { "h264" } else { "mjpeg" };
    let mut decoder = DecodedPictures::spawn(
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
                let mut data = CompressedVideo::decode(&payload).unwrap().data.to_vec();
                if delimit {
                    data.extend_from_slice(&DELIMITER);
                }
                data
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
    let openh264 = h264_ms(&EncoderChoice::Software);
    let x264 = h264_ms(&EncoderChoice::Gst("x264enc".into()));
    let view_jpeg = jpeg_ms(80);
    #[cfg(feature = "zenoh")]
    let zenoh_jpeg = jpeg_ms(85);
    let mut rows = Vec::new();
    for fps in if full { vec![30, 15] } else { vec![30] } {
        let mut row = |output: &str, measured: (Vec<f64>, Vec<f64>, usize), encode_ms: f64| {
            let (latency_ms, psnr, unreadable) = measured;
            eprintln!("{output} at {fps} fps: {} pictures", latency_ms.len());
            rows.push(Row {
                output: output.into(),
                fps,
                latency_ms,
                psnr,
                unreadable,
                encode_ms,
            });
        };
        row(VIEW, view(fps, frames, Client::FfmpegLowDelay), view_jpeg);
        if !full {
            break;
        }
        row(VIEW_GST, view(fps, frames, Client::Gstreamer), view_jpeg);
        // (row, --rtsp-encoder, the encoder's time, the client)
        for (name, encoder, ms, client) in [
            (RTSP_OPENH264, "software", openh264, Client::FfmpegLowDelay),
            (RTSP_X264, "gst:x264enc", x264, Client::FfmpegLowDelay),
            (
                "RTSP, OpenH264, FFmpeg's default buffering",
                "software",
                openh264,
                Client::FfmpegDefault,
            ),
            (
                "RTSP, x264enc, FFmpeg's default buffering",
                "gst:x264enc",
                x264,
                Client::FfmpegDefault,
            ),
            (
                "RTSP, OpenH264, GStreamer's client",
                "software",
                openh264,
                Client::Gstreamer,
            ),
            (
                "RTSP, x264enc, GStreamer's client",
                "gst:x264enc",
                x264,
                Client::Gstreamer,
            ),
        ] {
            row(name, rtsp(fps, frames, encoder, client), ms);
        }
        #[cfg(feature = "zenoh")]
        for (name, topic, encoder, ms, delimit) in [
            ("Zenoh h264, OpenH264", "h264", "software", openh264, false),
            ("Zenoh h264, x264enc", "h264", "gst:x264enc", x264, false),
            (ZENOH_OPENH264_AUD, "h264", "software", openh264, true),
            (ZENOH_X264_AUD, "h264", "gst:x264enc", x264, true),
            (
                "Zenoh jpeg (libjpeg-turbo, q85)",
                "jpeg",
                "none",
                zenoh_jpeg,
                false,
            ),
        ] {
            row(name, zenoh(fps, frames, topic, encoder, delimit), ms);
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
        // (what, the view's row it is held against, OpenH264's, x264enc's):
        // each client against the view as the same client reads it (FFmpeg
        // holds every picture one frame interval, GStreamer does not).
        #[cfg_attr(not(feature = "zenoh"), allow(unused_mut))]
        let mut compared = vec![
            (
                "RTSP, FFmpeg",
                VIEW,
                RTSP_OPENH264.to_owned(),
                RTSP_X264.to_owned(),
            ),
            (
                "RTSP, GStreamer",
                VIEW_GST,
                format!("{RTSP_OPENH264}, GStreamer's client"),
                format!("{RTSP_X264}, GStreamer's client"),
            ),
        ];
        #[cfg(feature = "zenoh")]
        compared.push((
            "Zenoh h264, a delimiter after each sample",
            VIEW,
            ZENOH_OPENH264_AUD.to_owned(),
            ZENOH_X264_AUD.to_owned(),
        ));
        for (what, view_row, openh264_row, x264_row) in compared {
            let (Some(view), Some(with_openh264), Some(with_x264)) =
                (median(view_row), median(&openh264_row), median(&x264_row))
            else {
                continue;
            };
            println!(
                "{fps} fps, {what}: x264enc - OpenH264 = {:+.1} ms (goal within 5); OpenH264 - view = {:+.1} ms (goal <= encode {openh264:.1} + 5); x264enc - view = {:+.1} ms (goal <= encode {x264:.1} + 5)",
                with_x264 - with_openh264,
                with_openh264 - view,
                with_x264 - view,
            );
        }
    }
}
