//! The `zerocam` CLI on vivid, in the kernel lab (`cargo lab-test`).
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod common;

use common::{serial, zerocam as run};

#[test]
fn lab_cli_list_shows_both_vivid_devices() {
    let _serial = serial();
    let out = run(&["list"]);
    assert!(
        out.contains("/dev/video0: ") && out.contains("single-planar API"),
        "{out}"
    );
    assert!(
        out.contains("/dev/video1: ") && out.contains("multi-planar API"),
        "{out}"
    );
    assert!(
        out.contains("NM12") && out.contains("[zerocam: NV12M]"),
        "{out}"
    );
    assert!(out.contains("640x480: "), "{out}");
    assert!(out.contains("DMA heaps: system"), "{out}");
    let info = run(&["info", "/dev/video0"]);
    assert!(info.contains("Test Pattern = "), "{info}");
}

#[test]
fn lab_cli_bench_json_on_vivid_in_both_modes() {
    let _serial = serial();
    for (device, format, memory) in [
        ("/dev/video0", "NV12", "mmap"),
        ("/dev/video1", "NV12M", "mmap"),
        ("/dev/video1", "NV12M", "dmabuf"),
    ] {
        let out = run(&[
            "bench", device, "--json", "--format", format, "--size", "640x480", "--frames", "60",
            "--fps", "60", "--memory", memory,
        ]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        let (buffers, planes) = (
            v["buffers"].as_u64().unwrap(),
            v["planes"].as_u64().unwrap(),
        );
        assert_eq!(v["frames"], 60, "{v}");
        assert_eq!(
            v["imports"].as_u64().unwrap(),
            buffers * planes,
            "{device} {memory}: {v}"
        );
        assert_eq!(
            v["cache_hits"].as_u64().unwrap(),
            60 * planes - buffers * planes,
            "{v}"
        );
        assert!(v["source"].as_str().unwrap().starts_with(device), "{v}");
    }
}

#[test]
fn lab_cli_capture_png_from_vivid() {
    let _serial = serial();
    let png = std::env::temp_dir().join("zerocam-lab.png");
    let out = run(&[
        "capture",
        "/dev/video1",
        "--format",
        "NV12M",
        "--size",
        "640x480",
        "--frames",
        "3",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(out.contains("wrote"), "{out}");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let info = decoder.read_info().unwrap().info().clone();
    assert_eq!((info.width, info.height), (640, 480));
}

#[test]
fn lab_camera_to_tensor_on_vivid_nv12m_dmabuf() {
    let _serial = serial();
    let text = common::run_ok("camera_to_tensor", &["/dev/video1", "--frames", "40"]);
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
