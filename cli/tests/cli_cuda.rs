//! `zerocam probe` and `zerocam list` report CUDA: unavailable (naming the
//! library) on a machine without the driver, and the device and its paths
//! against the CUDA driver test double (`cuda/tests/double/`).
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used)] // tests may panic

mod common;

use zerocam_test_support::cuda_double as double;

use assert_cmd::Command;

fn zerocam(library: &std::path::Path, args: &[&str]) -> String {
    let out = Command::cargo_bin("zerocam")
        .unwrap()
        .env("ZEROCAM_CUDA_LIBRARY", library)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn without_a_driver_probe_and_list_say_cuda_is_unavailable_and_name_the_library() {
    let missing = std::path::Path::new("/nonexistent/libcuda.so.1");
    let probe = zerocam(missing, &["probe"]);
    assert!(
        probe.contains(
            "CUDA: unavailable (/nonexistent/libcuda.so.1: cannot open shared object file"
        ),
        "{probe}"
    );
    assert!(
        probe.contains("CUDA driver library: /nonexistent/libcuda.so.1"),
        "{probe}"
    );
    let list = zerocam(missing, &["list"]);
    assert!(list.contains("CUDA: unavailable ("), "{list}");
}

#[test]
fn with_a_driver_probe_names_the_device_and_the_paths_that_work() {
    let probe = zerocam(double::library(), &["probe"]);
    assert!(
        probe.contains("CUDA: zerocam test double (compute 8.7, integrated, driver 12.8)"),
        "{probe}"
    );
    assert!(
        probe.contains("CUDA host registration (a): works"),
        "{probe}"
    );
    // The host's Mesa has a GL thread but cannot import dma-bufs.
    assert!(
        probe.contains("CUDA GL buffer interop (c): works"),
        "{probe}"
    );
    assert!(probe.contains("CUDA EGLImage interop (b): no ("), "{probe}");
    // Interop's GL thread: no EGL device of CUDA device 0 here (Mesa's
    // devices are not NVIDIA's), so the default display, Mesa's: said.
    assert!(
        probe.contains("CUDA interop's GL thread: Mesa Project EGL, llvmpipe")
            && probe.contains("(the default display): not NVIDIA's"),
        "{probe}"
    );
    // No DMA heap on the host: said, not skipped (the lab's probe takes one).
    assert!(
        probe.contains("CUDA DMA-heap buffer (camera frames): no (no DMA heap buffer here"),
        "{probe}"
    );
    let list = zerocam(double::library(), &["list"]);
    assert!(list.contains("CUDA: zerocam test double"), "{list}");
}

#[test]
fn doctor_warns_when_cuda_interop_would_run_on_an_egl_that_is_not_nvidias() {
    let json = zerocam(double::library(), &["doctor", "--json", "--frames", "0"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(common::doctor_check(&v, "CUDA")["status"], "ok", "{v}");
    let egl = common::doctor_check(&v, "CUDA interop EGL");
    assert_eq!(egl["status"], "warn", "{egl}");
    let detail = egl["detail"].as_str().unwrap();
    assert!(detail.starts_with("Mesa Project EGL, llvmpipe"), "{detail}");
    assert!(
        detail.ends_with("not NVIDIA's, so GL buffer and EGLImage interop fail"),
        "{detail}"
    );
    assert!(
        egl["fix"].as_str().unwrap().contains("libEGL_nvidia"),
        "{egl}"
    );
}
