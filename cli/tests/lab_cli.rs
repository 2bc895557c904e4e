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
