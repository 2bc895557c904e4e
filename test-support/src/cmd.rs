//! Running a package's binaries from its tests (feature `cmd`, through
//! `assert_cmd`, which finds them by the `CARGO_BIN_EXE_*` cargo sets).

/// Runs binary `bin` of the package under test with `args`; asserts success
/// and returns its stdout.
///
/// # Panics
/// Where the binary cannot run or fails (that is the check), naming the
/// command and its stderr.
#[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
pub fn run_ok(bin: &str, args: &[&str]) -> String {
    let out = assert_cmd::Command::cargo_bin(bin)
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
