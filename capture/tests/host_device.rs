//! Device errors that need no camera: a missing node, a node that is not V4L2.
//! Everything that needs a real V4L2 device runs in the kernel lab
//! (`tests/lab_capture.rs`).
#![allow(clippy::unwrap_used)] // tests may panic

use zerocam_capture::{CaptureError, Device};

#[test]
fn a_missing_device_is_named() {
    let e = Device::open("/dev/video-nope").unwrap_err();
    assert!(matches!(e, CaptureError::NoDevice { .. }), "{e}");
    assert_eq!(e.to_string(), "/dev/video-nope: no such device");
    assert_eq!(e.errno(), Some(nix::errno::Errno::ENOENT));
}

#[test]
fn a_node_that_is_not_v4l2_is_refused() {
    let e = Device::open("/dev/null").unwrap_err();
    assert!(matches!(e, CaptureError::NotV4l2 { .. }), "{e}");
    assert!(
        e.to_string().starts_with("/dev/null is not a V4L2 device"),
        "{e}"
    );
}

#[test]
fn frame_sizes_display_as_a_list_or_a_range() {
    use zerocam_capture::v4l2::FrameSizes;
    assert_eq!(
        FrameSizes::Discrete(vec![(320, 180), (640, 480)]).to_string(),
        "320x180, 640x480"
    );
    let range = FrameSizes::Stepwise {
        min_width: 16,
        max_width: 1920,
        step_width: 2,
        min_height: 16,
        max_height: 1080,
        step_height: 2,
    };
    assert_eq!(range.to_string(), "16..1920 step 2 x 16..1080 step 2");
}
