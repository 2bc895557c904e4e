//! `zerocam serve --zenoh` and `zenoh:` subscribers, each in its own
//! process, on loopback only: zerocam's default session has multicast
//! scouting and gossip off, and every endpoint here is
//! `tcp/127.0.0.1:PORT` on a port the test picked.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};
use std::time::Duration;

use zerocam_capture::pattern::BARS_RGB;
use zerocam_capture::ros::{CompressedVideo, Message};
use zerocam_capture::zenoh_source::zenoh::Wait;
use zerocam_capture::zenoh_source::{open_session, Role, ZenohOptions};
use zerocam_capture::{FrameSource, ZenohSource, ZenohSourceConfig};

mod common;

use common::{free_port, serve_zenoh};

const BIN: &str = env!("CARGO_BIN_EXE_zerocam");

fn options(port: u16) -> ZenohOptions {
    ZenohOptions {
        connect: vec![format!("tcp/127.0.0.1:{port}")],
        ..ZenohOptions::default()
    }
}

/// A `zenoh:` source of `key` on loopback `port`, given 20 s for its first
/// sample (the publisher's first frames, on a loaded machine).
fn subscribe(port: u16, key: &str) -> ZenohSource {
    ZenohSource::new(ZenohSourceConfig {
        options: options(port),
        first_sample: Duration::from_secs(20),
        ..ZenohSourceConfig::new(key)
    })
    .unwrap()
}

/// PSNR (dB) of the decoded RGB frame against the pattern's bars for
/// `sequence` (its white line's rows left out: NV12 chroma smears it), on
/// every 8th row and 4th column: the check must keep up with 30 fps in a
/// debug build, or the subscriber itself would lose samples.
fn psnr_against_bars(rgb: &[u8], stride: usize, w: usize, h: usize, sequence: u32) -> f64 {
    let shift = (2 * sequence as usize) % w / 2 * 2;
    let line = (2 * sequence as usize) % h;
    let (mut sum, mut n) = (0f64, 0u64);
    for y in (0..h).step_by(8).filter(|&y| y.abs_diff(line) > 2) {
        for x in (0..w).step_by(4) {
            let want = BARS_RGB[((x + shift) % w) * 8 / w];
            for c in 0..3 {
                let d = f64::from(rgb[y * stride + x * 3 + c]) - f64::from(want[c]);
                sum += d * d;
                n += 1;
            }
        }
    }
    10.0 * (255.0f64 * 255.0 / (sum / n as f64)).log10()
}

#[test]
fn a_subscriber_gets_every_frame_decoded_within_30_db() {
    let port = free_port();
    let _server = serve_zenoh(port, "pattern", "rt/one", 400, &[]);
    let mut source = subscribe(port, "rt/one/jpeg");
    let f = source.stream_format().clone();
    assert_eq!((f.width, f.height), (1280, 720));
    let stride = f.planes[0].bytes_per_line as usize;
    let mut last = None;
    let mut worst = f64::INFINITY;
    for _ in 0..300 {
        let frame = source.next_frame(Duration::from_secs(5)).unwrap();
        if let Some(prev) = last {
            assert_eq!(
                frame.sequence(),
                prev + 1,
                "the capture's sequence, unbroken"
            );
        }
        last = Some(frame.sequence());
        assert!(!frame.synthesized().sequence, "the sender's sequence");
        assert!(!frame.synthesized().timestamp, "the sender's stamp");
        let map = frame.tensor().map_read().unwrap();
        worst = worst.min(psnr_against_bars(&map, stride, 1280, 720, frame.sequence()));
    }
    assert!(worst >= 30.0, "worst PSNR {worst:.1} dB");
    let stats = source.stats();
    assert_eq!(
        (stats.frames, stats.dropped, stats.late, stats.rejected),
        (300, 0, 0, 0),
        "{stats:?}"
    );
}

#[test]
fn four_subscriber_processes_each_get_300_frames_none_lost() {
    let port = free_port();
    let _server = serve_zenoh(port, "pattern", "rt/four", 100_000, &[]);
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let subscribers: Vec<_> = (0..4)
        .map(|_| {
            Command::new(BIN)
                .args(["bench", "zenoh:rt/four/jpeg", "--json", "--frames", "300"])
                .args(["--connect", &endpoint])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for s in subscribers {
        let out = s.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["frames"], 300, "{report}");
        assert_eq!(report["dropped"], 0, "{report}");
        assert_eq!(report["rejected"], 0, "{report}");
    }
}

#[test]
fn nothing_published_is_a_typed_error_naming_the_key_and_endpoint() {
    let port = free_port();
    let e = ZenohSource::new(ZenohSourceConfig {
        options: options(port),
        first_sample: Duration::from_millis(500),
        ..ZenohSourceConfig::new("rt/nobody/jpeg")
    })
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("rt/nobody/jpeg"), "{text}");
    assert!(text.contains(&format!("tcp/127.0.0.1:{port}")), "{text}");
}

#[test]
fn serve_without_the_socket_or_zenoh_says_what_it_needs() {
    let out = Command::new(BIN)
        .args(["serve", "pattern"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--zenoh"), "{err}");
}

/// Whether an Annex-B access unit holds an SPS (NAL type 7) and an IDR
/// slice (type 5).
fn is_keyframe_with_parameter_sets(au: &[u8]) -> bool {
    let types: Vec<u8> = au
        .windows(4)
        .filter(|w| w[..3] == [0, 0, 1])
        .map(|w| w[3] & 0x1f)
        .collect();
    types.contains(&7) && types.contains(&5)
}

#[test]
fn the_h264_topic_starts_at_a_keyframe_and_plays() {
    let port = free_port();
    let _server = serve_zenoh(port, "pattern", "rt/video", 100_000, &[]);
    let session = open_session(&options(port), Role::Subscriber).unwrap();
    let subscriber = session.declare_subscriber("rt/video/h264").wait().unwrap();
    let mut stream = Vec::new();
    let mut first = true;
    for _ in 0..60 {
        let sample = subscriber
            .recv_timeout(Duration::from_secs(20))
            .unwrap()
            .expect("an H.264 sample within 20 s");
        let payload = sample.payload().to_bytes();
        let msg = CompressedVideo::decode(&payload).unwrap();
        assert_eq!((msg.format, msg.frame_id), ("h264", "camera"));
        if first {
            assert!(
                is_keyframe_with_parameter_sets(msg.data),
                "the first is a keyframe"
            );
            first = false;
        }
        stream.extend_from_slice(msg.data);
    }
    let path = std::env::temp_dir().join(format!("zerocam-zenoh-{}.h264", std::process::id()));
    std::fs::write(&path, &stream).unwrap();
    let probe = zerocam_test_support::media::ffprobe(&path);
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        (
            probe.codec.as_str(),
            probe.width,
            probe.height,
            probe.frames
        ),
        ("h264", 1280, 720, 60),
        "{probe:?}"
    );
}

#[test]
fn serve_refuses_to_re_publish_a_zenoh_source() {
    let out = Command::new(BIN)
        .args(["serve", "zenoh:rt/x/jpeg", "--zenoh"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("re-publish"), "{err}");
}

#[test]
fn an_h264_topic_is_a_source_of_nv12_frames() {
    let port = free_port();
    let _server = serve_zenoh(port, "pattern", "rt/h264src", 100_000, &[]);
    let mut source = subscribe(port, "rt/h264src/h264");
    let f = source.stream_format().clone();
    assert_eq!((f.width, f.height, f.format.name), (1280, 720, "NV12"));
    let stride = f.planes[0].bytes_per_line as usize;
    let mut last = None;
    for _ in 0..60 {
        let frame = source.next_frame(Duration::from_secs(5)).unwrap();
        if let Some(prev) = last {
            assert_eq!(
                frame.sequence(),
                prev + 1,
                "the capture's sequence, unbroken"
            );
        }
        last = Some(frame.sequence());
        // Luma of the bars (BT.601 limited, as the pattern draws it) at a
        // row away from the white line: within a few codes of the source.
        let map = frame.tensor().map_read().unwrap();
        let line = (2 * frame.sequence() as usize) % 720;
        let y = if line.abs_diff(100) > 8 { 100 } else { 300 };
        let shift = (2 * frame.sequence() as usize) % 1280 / 2 * 2;
        // Each bar's centre, wherever the scroll put it.
        for (b, bar) in BARS_RGB.iter().enumerate() {
            let x = (b * 160 + 80 + 1280 - shift) % 1280;
            let want = zerocam_capture::pattern::rgb_to_yuv(*bar)[0];
            let got = map[y * stride + x];
            assert!(got.abs_diff(want) <= 12, "x {x}: luma {got}, bar {want}");
        }
    }
    let st = source.stats();
    assert_eq!((st.dropped, st.rejected), (0, 0), "{st:?}");
}

/// `frames` frames of `source`; their sequences.
fn sequences(source: &mut ZenohSource, frames: usize) -> Vec<u32> {
    (0..frames)
        .map(|_| {
            source
                .next_frame(Duration::from_secs(5))
                .unwrap()
                .sequence()
        })
        .collect()
}

#[test]
fn a_reader_held_up_a_moment_loses_no_h264_and_sees_the_newest_jpeg() {
    let port = free_port();
    let _server = serve_zenoh(port, "pattern", "rt/held", 100_000, &["--size", "320x240"]);
    // H.264: 200 ms without reading (6 access units at 30 fps) costs
    // nothing: each one is decoded in order, none refused.
    let mut video = subscribe(port, "rt/held/h264");
    let mut seq = sequences(&mut video, 10);
    std::thread::sleep(Duration::from_millis(200));
    seq.extend(sequences(&mut video, 20));
    let want: Vec<u32> = (seq[0]..seq[0] + 30).collect();
    assert_eq!(seq, want, "the capture's sequence, unbroken");
    let st = video.stats();
    assert_eq!((st.dropped, st.rejected), (0, 0), "{st:?}");
    // JPEG: after 200 ms without reading, the next frame is the newest
    // there, not the oldest; those passed over are counted lost.
    let mut stills = subscribe(port, "rt/held/jpeg");
    let before = sequences(&mut stills, 5)[4];
    std::thread::sleep(Duration::from_millis(200));
    let after = sequences(&mut stills, 1)[0];
    let st = stills.stats();
    assert!(
        after >= before + 5,
        "the newest after the pause: {before} then {after}"
    );
    assert_eq!(st.dropped, u64::from(after - before - 1), "{st:?}");
}
