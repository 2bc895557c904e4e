//! `zerocam` on `gst:PIPELINE` sources (feature `gstreamer`): bench and
//! capture take a GStreamer pipeline like a camera; a bad pipeline is one
//! line with GStreamer's words and a non-zero exit.
#![allow(clippy::unwrap_used)] // tests may panic

mod common;

use assert_cmd::Command;

#[test]
fn bench_and_capture_take_a_gstreamer_pipeline() {
    let spec = "gst:videotestsrc ! video/x-raw,format=NV12,width=320,height=240";
    let out = common::zerocam(&["bench", "--json", "--frames", "30", spec]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["frames"], 30, "{v}");
    assert_eq!(
        v["system_memory_frames"], 30,
        "videotestsrc draws in system memory: {v}"
    );
    assert_eq!(v["imports"], 0, "{v}");
    let png = std::env::temp_dir().join(format!("zerocam-gst-{}.png", std::process::id()));
    let capture = common::zerocam(&["capture", spec, "-o", png.to_str().unwrap()]);
    assert!(capture.contains("320x240"), "{capture}");
    std::fs::remove_file(png).unwrap();
}

#[test]
fn a_bad_pipeline_is_one_line_and_a_failure() {
    let out = Command::cargo_bin("zerocam")
        .unwrap()
        .args(["bench", "gst:no_such_element_zc"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no element \"no_such_element_zc\""), "{err}");
}

/// `record pattern:stamp --encoder gst:x264enc`, decoded by FFmpeg: every
/// picture the frame it claims to be (common::stamped_recording).
#[test]
fn a_stamped_x264enc_recording_decodes_to_every_captured_frame() {
    let d = std::env::temp_dir().join(format!("zerocam-gst-stamp-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    common::stamped_recording(&d.join("clip.mp4"), "gst:x264enc", "x264enc");
    std::fs::remove_dir_all(d).unwrap();
}
