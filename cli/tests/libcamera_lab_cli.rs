//! The `zerocam` CLI on libcamera's virtual camera `Virtual0`, in the kernel
//! lab; built against the guest root's libcamera (`tests/lab/libcamera-build`,
//! run by `tests/lab/test-all`).
#![cfg(all(feature = "lab", feature = "libcamera"))]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod common;

use common::{fails, serial, zerocam as run};

#[test]
fn lab_libcamera_cli_list_shows_the_virtual_camera() {
    let _serial = serial();
    let out = run(&["list"]);
    assert!(
        out.contains("libcamera:Virtual0: Virtual Video Device (front)"),
        "{out}"
    );
    assert!(out.contains("  NV12 (NV12) [zerocam: NV12]"), "{out}");
}

#[test]
fn lab_libcamera_cli_bench_imports_each_buffer_once() {
    let _serial = serial();
    let out = run(&[
        "bench",
        "libcamera:Virtual0",
        "--json",
        "--format",
        "NV12",
        "--size",
        "640x480",
        "--frames",
        "100",
    ]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let buffers = v["buffers"].as_u64().unwrap();
    assert_eq!(v["frames"], 100, "{v}");
    assert_eq!(v["planes"], 1, "NV12 in one dma-buf: {v}");
    assert_eq!(v["imports"].as_u64().unwrap(), buffers, "{v}");
    assert_eq!(v["cache_hits"].as_u64().unwrap(), 100 - buffers, "{v}");
    assert!(
        v["source"]
            .as_str()
            .unwrap()
            .starts_with("libcamera:Virtual0 (libcamera): NV12 640x480"),
        "{v}"
    );
}

#[test]
fn lab_libcamera_cli_capture_png_has_the_bars() {
    let _serial = serial();
    let png = std::env::temp_dir().join("zerocam-lab-libcamera.png");
    let out = run(&[
        "capture",
        "libcamera:Virtual0",
        "--frames",
        "2",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(out.contains("wrote"), "{out}");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let info = reader.info().clone();
    assert_eq!((info.width, info.height), (640, 480));
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    reader.next_frame(&mut buf).unwrap();
    // Pixels of row 240: somewhere a white bar and somewhere a black one.
    let row = &buf[240 * 640 * 3..241 * 640 * 3];
    let px: Vec<&[u8]> = row.chunks(3).collect();
    assert!(
        px.iter().any(|p| p.iter().all(|&c| c >= 250)),
        "a white bar"
    );
    assert!(px.iter().any(|p| p.iter().all(|&c| c <= 5)), "a black bar");
}

#[test]
fn lab_libcamera_cli_unknown_camera_is_one_line() {
    let _serial = serial();
    // One line: libcamera's log is quiet.
    let err = fails(&["bench", "libcamera:Nope", "--frames", "5"]);
    assert!(
        err.contains("no camera \"Nope\"") && err.contains("Virtual0"),
        "{err}"
    );
}

#[test]
fn lab_libcamera_cli_fps_is_refused_not_ignored() {
    let _serial = serial();
    let err = fails(&["bench", "libcamera:Virtual0", "--fps", "5", "--frames", "5"]);
    assert!(
        err.contains("--fps") && err.contains("libcamera:Virtual0"),
        "{err}"
    );
}

#[test]
fn lab_libcamera_cli_default_source_is_the_libcamera_camera() {
    let _serial = serial();
    // vivid's /dev/video0 is there too: libcamera's camera comes first.
    let out = run(&["bench", "--json", "--frames", "5"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(
        v["source"]
            .as_str()
            .unwrap()
            .starts_with("libcamera:Virtual0 (libcamera)"),
        "{v}"
    );
}
