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

/// The number after `word ` in `out` (`planes imported 4`).
fn count_after(out: &str, word: &str) -> u64 {
    out.split(word)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no {word:?} count in: {out}"))
}

#[test]
fn lab_cli_record_picks_vicodec_and_imports_vivid_dma_bufs() {
    // `zerocam record` with the default encoder (auto) finds vicodec's
    // stateful FWHT encoder, feeds it vivid's buffers by dma-buf import
    // (each plane once, no frame copied), and the file it writes is a
    // stream vicodec's decoder plays back frame by frame.
    let _serial = serial();
    let enc = std::env::var("ZEROCAM_LAB_VICODEC_ENC").expect("the lab names vicodec's encoder");
    let dec = std::env::var("ZEROCAM_LAB_VICODEC_DEC").expect("the lab names vicodec's decoder");
    let clip = std::env::temp_dir().join("zerocam-lab.fwht");
    let out = run(&[
        "record",
        "/dev/video0",
        "--format",
        "NV12",
        "--size",
        "640x480",
        "--frames",
        "30",
        "-o",
        clip.to_str().unwrap(),
    ]);
    assert!(out.contains(&enc), "auto names the hardware encoder: {out}");
    assert!(
        out.contains("wrote") && out.contains(": 30 frames"),
        "{out}"
    );
    assert_eq!(count_after(&out, "frames copied"), 0, "{out}");
    let imports = count_after(&out, "planes imported");
    assert!(
        (1..=8).contains(&imports),
        "one import per vivid buffer: {out}"
    );
    let decoded = std::env::temp_dir().join("zerocam-lab.nv12");
    let status = std::process::Command::new("v4l2-ctl")
        .args([
            "-d",
            &dec,
            "--set-fmt-video=pixelformat=NV12",
            "--stream-mmap",
            "--stream-out-mmap",
        ])
        .arg(format!("--stream-from={}", clip.display()))
        .arg(format!("--stream-to={}", decoded.display()))
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = std::fs::metadata(&decoded).unwrap().len();
    assert_eq!(
        bytes,
        30 * 640 * 480 * 3 / 2,
        "30 decoded 640x480 NV12 frames"
    );
}

/// `zerocam doctor` in the lab reports what the lab has: both vivid nodes
/// (with dmabuf import in their queues), udmabuf, vgem, zink's dma-buf
/// import, every media controller in sysfs, and 60 frames captured with each
/// buffer plane imported once; CUDA is missing (no NVIDIA driver) and says
/// so. The x86 lab has the system heap (an allocation from it, and a live
/// NV12 import of one through zink) and vicodec; the arm64 lab's kernel has
/// neither, and the report says so with its fixes.
#[test]
fn lab_cli_doctor_reports_vivid_the_heap_udmabuf_and_zinks_import() {
    let _serial = serial();
    zerocam_test_support::lab::zink_env(); // inherited by the child
    let out = run(&["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let find = |name: &str| common::doctor_check(&v, name);
    let ok = |name: &str| {
        let c = find(name);
        assert_eq!(c["status"], "ok", "{c}");
        c["detail"].as_str().unwrap().to_owned()
    };
    let arm64 = cfg!(target_arch = "aarch64");
    for node in ["/dev/video0", "/dev/video1"] {
        let d = ok(node);
        assert!(
            d.contains("(vivid)") && d.contains("dmabuf") && d.contains("NV12"),
            "{d}"
        );
    }
    assert!(ok("/dev/video1").contains("MPLANE"), "{v}");
    assert!(ok("kernel").contains(std::env::consts::ARCH), "{v}");
    ok("udmabuf");
    ok("memfd");
    assert!(ok("/dev/dri/renderD128").starts_with("vgem"), "{v}");
    ok("EGL_EXT_image_dma_buf_import");
    // zink on lavapipe is a software renderer: a caveat, not a failure.
    let egl = find("EGL");
    assert_eq!(egl["status"], "warn", "{egl}");
    assert!(egl["detail"].as_str().unwrap().contains("zink"), "{egl}");
    assert_eq!(find("CUDA")["status"], "fail", "{v}");
    let m2m = find("V4L2 M2M encoders")["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    if arm64 {
        let heaps = find("DMA heaps");
        assert_eq!(heaps["status"], "fail", "{heaps}");
        let import = find("live NV12 dma-buf import");
        assert_eq!(import["status"], "warn", "no heap to import from: {import}");
        assert!(m2m.starts_with("none"), "{m2m}");
    } else {
        ok("DMA heap system");
        ok("DMA heap allocation");
        assert!(
            ok("live NV12 dma-buf import").contains("imported as an EGLImage"),
            "{v}"
        );
        // vicodec is an M2M encoder, of FWHT only.
        assert!(m2m.contains("fwht on /dev/video"), "{m2m}");
    }
    for mc in std::fs::read_dir("/sys/bus/media/devices").unwrap() {
        let name = format!("/dev/{}", mc.unwrap().file_name().to_string_lossy());
        let d = ok(&name);
        if d.starts_with("vivid (vivid)") {
            assert!(d.ends_with("nodes on its device: video0, video1"), "{d}");
        }
    }
    let capture = ok("60 frames from /dev/video0");
    assert!(
        capture.contains("imports 4 (buffers 4 x planes 1)"),
        "{capture}"
    );
    assert!(capture.contains("cache hits 56"), "{capture}");
    // Missing: CUDA; on arm64 the heaps too.
    assert_eq!(v["fail"], if arm64 { 2 } else { 1 }, "{v}");
}
