//! The C examples on a real kernel, in the kernel lab (`tests/lab/test-all`
//! compiles them on the host first with `capi/c-build`: the guest has no
//! compiler): `examples/c/import_dmabuf` on a udmabuf, a DMA-heap buffer and
//! vivid's exported buffers (single- and multi-planar), each imported by two
//! fd numbers into one cached tensor; `examples/c/capture` on vivid.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// vivid's nodes, one test at a time (a second opener gets EBUSY).
fn vivid() -> MutexGuard<'static, ()> {
    static VIVID: Mutex<()> = Mutex::new(());
    VIVID.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `TARGET/PROFILE/c`: the test binary is `TARGET/PROFILE/deps/lab_capi-*`.
fn c_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|d| d.parent()).unwrap();
    profile.join("c")
}

/// Runs C example `name` with `args`; its stdout, after asserting it exited 0.
fn run(name: &str, args: &[&str]) -> String {
    let dir = c_dir();
    let program = dir.join(name);
    assert!(
        program.exists(),
        "{} is missing: run capi/c-build on the host first (tests/lab/test-all does)",
        program.display()
    );
    let out = Command::new(&program)
        .args(args)
        .env("LD_LIBRARY_PATH", dir.join("lib"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{name} {args:?}:\n{stdout}{stderr}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name} {args:?} failed (77: the device is missing; it must be here)"
    );
    stdout
}

#[test]
fn lab_c_import_dmabuf_by_two_fd_numbers_is_one_cached_tensor_on_udmabuf() {
    run("import_dmabuf", &["udmabuf"]);
}

#[test]
fn lab_c_import_dmabuf_on_a_dma_heap_buffer() {
    run("import_dmabuf", &["heap"]);
}

#[test]
fn lab_c_import_dmabuf_on_vivids_exported_buffers() {
    let _vivid = vivid();
    run("import_dmabuf", &["/dev/video0"]);
    run("import_dmabuf", &["/dev/video1"]);
}

#[test]
fn lab_c_capture_on_vivid_imports_each_buffer_once() {
    let _vivid = vivid();
    run("capture", &["/dev/video0", "30"]);
}
