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
