//! Running the `zerocam` binary from the tests.
#![allow(dead_code, unused_imports, clippy::unwrap_used)] // each test binary uses its part

use assert_cmd::Command;

pub use zerocam_test_support::cmd::run_ok;
pub use zerocam_test_support::lab::lock as serial;

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
