//! The example binaries on the host, where there is no camera: each runs on
//! the pattern source and says so; imports = buffers x planes.
#![allow(clippy::unwrap_used)] // tests may panic

use zerocam_test_support::cmd::run_ok;

#[test]
fn camera_to_tensor_runs_on_the_pattern_source() {
    let text = run_ok("camera_to_tensor", &["--frames", "12"]);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("built-in pattern source (NV12M 640x480)"),
        "{text}"
    );
    assert_eq!(text.lines().filter(|l| l.starts_with("frame ")).count(), 12);
    assert!(
        text.contains("imports 8 (= 4 buffers x 2 planes), cache hits 16"),
        "{text}"
    );
}

#[test]
fn camera_to_gl_runs_on_the_pattern_source() {
    let text = run_ok("camera_to_gl", &["--frames", "6"]);
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("GPU: "), "{text}");
    assert!(
        lines
            .next()
            .unwrap()
            .contains("built-in pattern source (NV12 1280x720)"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("convert ")).count(),
        6
    );
    // The pattern's buffers are memfds: uploaded, never imported.
    assert!(
        text.contains("6 frames in")
            && text.contains("from 4 buffers: 0 EGLImage imports, 0 cache hits, 6 uploads"),
        "{text}"
    );
}
