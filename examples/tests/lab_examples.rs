//! The example binaries on vivid, in the kernel lab (`cargo lab-test`).
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

use zerocam_test_support::cmd::run_ok;

use zerocam_test_support::lab::lock as serial;

#[test]
fn lab_camera_to_tensor_on_vivid_nv12m_dmabuf() {
    let _serial = serial();
    let text = run_ok("camera_to_tensor", &["/dev/video1", "--frames", "40"]);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .starts_with("/dev/video1 (vivid, multi-planar API): NV12M 640x480, dmabuf"),
        "{text}"
    );
    assert!(
        text.contains("imports 8 (= 4 buffers x 2 planes), cache hits 72"),
        "{text}"
    );
}

/// zink on lavapipe (what `tests/lab/run --egl` sets): the one software GL in
/// the guest that imports NV12 dma-bufs.
#[test]
fn lab_camera_to_gl_imports_each_vivid_buffer_once() {
    let _serial = serial();
    let out = assert_cmd::Command::cargo_bin("camera_to_gl")
        .unwrap()
        .args(["/dev/video0", "--frames", "12"])
        .env("LIBGL_ALWAYS_SOFTWARE", "1")
        .env("GALLIUM_DRIVER", "zink")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("dma-buf import: yes"), "{text}");
    assert!(
        text.contains("from 4 buffers: 4 EGLImage imports, 8 cache hits, 0 uploads"),
        "{text}"
    );
}
