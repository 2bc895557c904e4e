//! `zerocam record` on the pattern source, its files read back by ffprobe
//! (a test requirement: install ffmpeg).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{fails, zerocam};

use zerocam_test_support::media::ffprobe;

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zerocam-cli-record-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn sixty_pattern_frames_make_an_mp4_of_sixty_h264_frames_timed_by_the_pattern() {
    let d = dir("mp4");
    let clip = d.join("clip.mp4");
    let out = zerocam(&[
        "record",
        "pattern",
        "--size",
        "320x240",
        "--fps",
        "30",
        "-o",
        clip.to_str().unwrap(),
        "--frames",
        "60",
    ]);
    assert!(out.contains("wrote ") && out.contains("60 frames"), "{out}");
    assert!(out.contains("OpenH264"), "the encoder is named: {out}");
    let p = ffprobe(&clip);
    assert_eq!(
        (p.codec.as_str(), p.width, p.height, p.frames),
        ("h264", 320, 240, 60)
    );
    // The frames' own timestamps: 60 frames at 30 fps last 2 s.
    assert!((p.duration - 2.0).abs() < 0.2, "duration {} s", p.duration);
}

#[test]
fn an_h264_file_is_the_annex_b_stream() {
    let d = dir("h264");
    let clip = d.join("clip.h264");
    zerocam(&[
        "record",
        "pattern",
        "--size",
        "160x120",
        "-o",
        clip.to_str().unwrap(),
        "--frames",
        "20",
        "--encoder",
        "software",
        "--bitrate",
        "200000",
        "--gop",
        "5",
    ]);
    let p = ffprobe(&clip);
    assert_eq!(
        (p.codec.as_str(), p.width, p.height, p.frames),
        ("h264", 160, 120, 20)
    );
    let head = std::fs::read(&clip).unwrap();
    assert!(head.starts_with(&[0, 0, 0, 1]), "a start code first");
}

#[test]
fn an_unknown_extension_is_refused_naming_the_known_ones_and_creates_nothing() {
    let d = dir("avi");
    let clip = d.join("clip.avi");
    let err = fails(&[
        "record",
        "pattern",
        "-o",
        clip.to_str().unwrap(),
        "--frames",
        "3",
    ]);
    assert!(
        err.contains("\"avi\"") && err.contains(".mp4, .h264, .hevc/.h265, .mjpeg/.mjpg and .fwht"),
        "{err}"
    );
    assert!(!clip.exists());
}

#[test]
fn an_unwritable_path_fails_with_the_path_and_the_reason() {
    let d = dir("unwritable");
    let clip = d.join("no/such/dir/clip.mp4");
    let err = fails(&[
        "record",
        "pattern",
        "-o",
        clip.to_str().unwrap(),
        "--frames",
        "3",
    ]);
    assert!(
        err.contains(clip.to_str().unwrap()) && err.contains("No such file or directory"),
        "{err}"
    );
}

#[test]
fn bad_codec_encoder_and_seconds_are_refused_in_one_line() {
    let d = dir("args");
    let clip = d.join("clip.mp4");
    let o = clip.to_str().unwrap();
    let err = fails(&["record", "pattern", "-o", o, "--codec", "vp9"]);
    assert!(err.contains("vp9") && err.contains("h264"), "{err}");
    let err = fails(&["record", "pattern", "-o", o, "--encoder", "nvenc"]);
    assert!(
        err.contains("nvenc") && err.contains("gst:ELEMENT"),
        "{err}"
    );
    let err = fails(&["record", "pattern", "-o", o, "--seconds=0"]);
    assert!(err.contains("--seconds"), "{err}");
    let err = fails(&["record", "pattern", "-o", o, "--codec", "fwht"]);
    assert!(err.contains("fwht"), "{err}");
    assert!(!clip.exists());
}

#[test]
fn ctrl_c_stops_the_recording_and_finishes_the_file() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    use std::io::BufReader;
    let d = dir("sigint");
    let clip = d.join("clip.mp4");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("zerocam"))
        .args([
            "record", "pattern", "--size", "320x240", "--fps", "30", "-o",
        ])
        .arg(&clip)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    // The first status line: a second of frames is in.
    common::read_until(&mut out, "frames ");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let summary = common::read_until(&mut out, "wrote ");
    assert!(child.wait().unwrap().success());
    assert!(summary.contains("stopped on SIGINT"), "{summary}");
    let p = ffprobe(&clip);
    assert_eq!(p.codec, "h264");
    assert!(p.frames >= 25, "{} frames", p.frames);
}

/// `record pattern:stamp` with OpenH264, decoded by FFmpeg: every picture
/// the frame it claims to be (common::stamped_recording).
#[test]
fn a_stamped_recording_decodes_to_every_captured_frame() {
    let d = dir("stamp");
    common::stamped_recording(&d.join("clip.mp4"), "software", "OpenH264");
}
