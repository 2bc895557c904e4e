//! Running the example binaries from the tests.
#![allow(clippy::unwrap_used)]

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
