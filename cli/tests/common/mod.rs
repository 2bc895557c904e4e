//! Running the `zerocam` binary from the tests.
#![allow(dead_code, clippy::unwrap_used)]

use assert_cmd::Command;

/// Runs binary `bin` with `args`; asserts success and returns its stdout.
pub fn run_ok(bin: &str, args: &[&str]) -> String {
    let out = Command::cargo_bin(bin)
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{bin} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A camera (vivid's nodes, libcamera's virtual camera) takes one streaming
/// user at a time: one test at a time.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the `zerocam` CLI with `args`; asserts success and returns its stdout.
pub fn zerocam(args: &[&str]) -> String {
    run_ok("zerocam", args)
}

/// Runs the `zerocam` CLI with `args`; asserts it fails with one line on stderr,
/// `zerocam: ...`, and no panic, and returns that line.
pub fn fails(args: &[&str]) -> String {
    let out = Command::cargo_bin("zerocam")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with("zerocam: ") && !err.contains("panicked"),
        "{err}"
    );
    err
}
