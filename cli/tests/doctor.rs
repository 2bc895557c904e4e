//! `zerocam doctor` on the host: exit 0 whatever it finds, one JSON object
//! with `--json`, a fix line under every warning and failure, and each
//! check agreeing with what this machine has (no camera, DMA heap or
//! udmabuf on CI's host: each of those a ❌ with its fix).
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod common;

use std::path::Path;

use common::zerocam as run;

fn checks(v: &serde_json::Value) -> &Vec<serde_json::Value> {
    v["checks"].as_array().unwrap()
}

use common::doctor_check as find;

#[test]
fn doctor_json_has_a_fix_for_every_warning_and_failure() {
    let v: serde_json::Value =
        serde_json::from_str(run(&["doctor", "--json", "--frames", "0"]).trim()).unwrap();
    let all = checks(&v);
    assert!(all.len() >= 10, "{v}");
    for c in all {
        match c["status"].as_str().unwrap() {
            "ok" => assert!(c["fix"].is_null(), "{c}"),
            "warn" | "fail" => assert!(!c["fix"].as_str().unwrap().is_empty(), "{c}"),
            other => panic!("status {other}: {c}"),
        }
        assert!(!c["detail"].as_str().unwrap().is_empty(), "{c}");
    }
    let count = |s: &str| all.iter().filter(|c| c["status"] == s).count() as u64;
    for s in ["ok", "warn", "fail"] {
        assert_eq!(v[s].as_u64(), Some(count(s)), "{v}");
    }
    assert_eq!(find(&v, "kernel")["section"], "system and memory");
    assert_eq!(find(&v, "memfd")["status"], "ok", "{v}");
    // What this machine has, each way round.
    let udmabuf = find(&v, "udmabuf");
    if Path::new("/dev/udmabuf").exists() {
        assert_ne!(udmabuf["detail"], "no /dev/udmabuf", "{udmabuf}");
    } else {
        assert_eq!(udmabuf["status"], "fail", "{udmabuf}");
        assert!(
            udmabuf["fix"]
                .as_str()
                .unwrap()
                .contains("modprobe udmabuf"),
            "{udmabuf}"
        );
    }
    if zerocam_tensor::dma_heaps().is_empty() {
        let heaps = find(&v, "DMA heaps");
        assert_eq!(heaps["status"], "fail", "{heaps}");
        assert!(
            heaps["fix"]
                .as_str()
                .unwrap()
                .contains("CONFIG_DMABUF_HEAPS"),
            "{heaps}"
        );
        assert_eq!(
            find(&v, "live NV12 dma-buf import")["status"],
            "warn",
            "{v}"
        );
    } else {
        assert!(find(&v, "DMA heap allocation")["status"] != "warn", "{v}");
    }
    if zerocam_capture::capture_devices().is_empty() {
        let cams = find(&v, "V4L2 cameras");
        assert_eq!(cams["status"], "fail", "{cams}");
        assert!(
            cams["fix"].as_str().unwrap().contains("modprobe vivid"),
            "{cams}"
        );
    }
    // --frames 0: no capture check.
    assert!(!all.iter().any(|c| c["section"] == "capture"), "{v}");
}

#[test]
fn doctor_text_marks_each_check_and_counts_them() {
    let out = run(&["doctor"]);
    assert!(out.starts_with("zerocam doctor "), "{out}");
    let marked = out
        .lines()
        .filter(|l| ["  ✅ ", "  ⚠ ", "  ❌ "].iter().any(|m| l.starts_with(m)))
        .count();
    let last = out.lines().last().unwrap();
    let counts: Vec<usize> = last
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(counts.iter().sum::<usize>(), marked, "{out}");
    assert!(last.ends_with(" missing"), "{out}");
    let fixes = out.lines().filter(|l| l.starts_with("      fix: ")).count();
    assert_eq!(fixes, counts[1] + counts[2], "{out}");
    if zerocam_capture::capture_devices().is_empty() {
        assert!(
            out.contains("  ❌ live capture: no camera to capture from\n      fix: "),
            "{out}"
        );
    }
}
