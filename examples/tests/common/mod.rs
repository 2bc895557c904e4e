//! Running the example binaries from the tests.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses its part

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

/// A camera (vivid's nodes) takes one streaming user at a time: one test at a
/// time.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}
