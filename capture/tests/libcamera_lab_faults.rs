//! libcamera capture on the virtual camera `Virtual0` where things go wrong
//! or are refused: the camera's borrow of queued buffers (as V4L2's), no
//! camera at all, a failed reconfigure (buffers released, counters kept).
//! Built against the guest root's libcamera by `tests/lab/libcamera-build`,
//! run in the VM by `tests/lab/test-all` (see docs/testing.md).
#![cfg(all(feature = "lab", feature = "libcamera"))]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod libcamera_common;

use libcamera_common::{fd_count, frames, lock, nv12, WAIT};

use std::process::Command;

use zerocam_capture::{
    libcamera_cameras, CaptureError, FrameSource, LibcameraConfig, LibcameraSource,
};

/// Set in the child process that runs with no camera.
const CHILD: &str = "ZEROCAM_LAB_LIBCAMERA_NO_CAMERA_CHILD";

#[test]
fn lab_libcamera_a_queued_buffers_tensor_cannot_be_mapped() {
    let _g = lock();
    let mut cam = LibcameraSource::open(nv12(640, 480)).unwrap();
    let f = cam.next_frame(WAIT).unwrap();
    assert!(f.tensor().map_read().is_ok(), "a held frame is readable");
    let t = f.tensor().clone();
    drop(f); // queued to the camera again
    let e = t.map_read().unwrap_err();
    assert!(
        matches!(e, zerocam_tensor::Error::MapConflict { .. }),
        "{e}"
    );
}

#[test]
fn lab_libcamera_a_buffer_whose_tensor_is_mapped_is_not_queued() {
    let _g = lock();
    let mut cam = LibcameraSource::open(nv12(640, 480)).unwrap();
    let buffers = cam.stats().buffers;
    let first = cam.next_frame(WAIT).unwrap();
    let (kept, index) = (first.tensor().clone(), first.buffer_index());
    let map = kept.map_read().unwrap();
    let before = map.to_vec();
    drop(first); // its buffer waits: the map is alive
    for _ in 0..3 * buffers {
        assert_ne!(cam.next_frame(WAIT).unwrap().buffer_index(), index);
    }
    // The bars scroll: a refill would have changed the bytes.
    assert!(map.to_vec() == before, "no frame written under a live map");
    drop(map);
    let seen: Vec<_> = (0..2 * buffers)
        .map(|_| cam.next_frame(WAIT).unwrap().buffer_index())
        .collect();
    assert!(seen.contains(&index), "queued once unmapped: {seen:?}");
    assert_eq!(cam.stats().buffer_errors, 0);
}

/// Runs in the child only (ignored otherwise), which
/// `lab_libcamera_no_camera_is_no_camera_and_leaks_nothing` starts with
/// libcamera restricted to a pipeline with no camera.
#[test]
#[ignore = "run by lab_libcamera_no_camera_is_no_camera_and_leaks_nothing"]
fn lab_libcamera_no_camera_child() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "run by lab_libcamera_no_camera_is_no_camera_and_leaks_nothing, with {CHILD} set"
    );
    assert_eq!(libcamera_cameras().unwrap(), []);
    let before = fd_count();
    for _ in 0..3 {
        let e = LibcameraSource::open(LibcameraConfig::new("NV12".parse().unwrap(), 640, 480));
        assert!(matches!(e, Err(CaptureError::NoCamera)), "{:?}", e.err());
        let e = LibcameraSource::open(nv12(640, 480));
        assert!(matches!(e, Err(CaptureError::NoCamera)), "{:?}", e.err());
        assert_eq!(libcamera_cameras().unwrap(), []);
    }
    assert_eq!(fd_count(), before, "no fd growth with no camera");
    println!("no-camera child: ok");
}

#[test]
fn lab_libcamera_no_camera_is_no_camera_and_leaks_nothing() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "lab_libcamera_no_camera_child",
            "--nocapture",
        ])
        .env(CHILD, "1")
        // Only UVC cameras: the lab has none (vivid is not UVC).
        .env("LIBCAMERA_PIPELINES_MATCH_LIST", "uvcvideo")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("no-camera child: ok") && text.contains("1 passed"),
        "{text}"
    );
}

#[test]
fn lab_libcamera_a_failed_reconfigure_releases_the_buffers_and_keeps_the_counters() {
    let _g = lock();
    drop(libcamera_cameras().unwrap()); // warm up libcamera's process-wide state
    let before = fd_count();
    {
        let mut cam = LibcameraSource::open(nv12(640, 480)).unwrap();
        let b = cam.stats().buffers as u64;
        frames(&mut cam, 10);
        let s1 = cam.stats();
        assert_eq!((s1.frames, s1.cache.misses, s1.cache.hits), (10, b, 10 - b));
        assert!(fd_count() > before, "the open camera holds fds");
        let e = cam.reconfigure(nv12(1000, 1002)).unwrap_err();
        assert!(matches!(e, CaptureError::ConfigAdjusted { .. }), "{e}");
        assert_eq!(
            fd_count(),
            before,
            "a failed reconfigure leaves no buffer open"
        );
        assert_eq!(cam.stats().buffers, 0);
        assert!(matches!(
            cam.next_frame(WAIT),
            Err(CaptureError::NotStreaming { .. })
        ));
        cam.reconfigure(nv12(640, 480)).unwrap();
        let b2 = cam.stats().buffers as u64;
        frames(&mut cam, 10);
        let s2 = cam.stats();
        assert_eq!(s2.frames, 20, "frames go on");
        assert_eq!(s2.cache.misses, b + b2, "imports go on: {:?}", s2.cache);
        assert_eq!(s2.cache.hits, (10 - b) + (10 - b2), "{:?}", s2.cache);
        assert_eq!(s2.cache.live as u64, b2);
    }
    assert_eq!(fd_count(), before, "fds after close == before open");
}
