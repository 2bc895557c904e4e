//! A test run again inside a private network namespace that holds only
//! `lo`: the project's rule is that tests send traffic only to loopback or
//! to namespaces they create, and some programs a test drives (Chromium's
//! component updates, say) reach for the network on their own.
//!
//! ```no_run
//! #[test]
//! fn talks_to_a_local_server() {
//!     if !zerocam_test_support::netns::in_private_network("talks_to_a_local_server") {
//!         return; // the run inside the namespace passed
//!     }
//!     // The test body: only 127.0.0.1 and ::1 can be reached here.
//! }
//! ```

use std::process::Command;

/// The environment variable that marks a run inside the namespace.
const INSIDE: &str = "ZEROCAM_NETNS";

/// Runs the calling `#[test]` again inside a private network namespace
/// (only `lo`, brought up), and returns `false` in the outer process after
/// asserting the inner run passed; returns `true` when already inside (the
/// caller then runs the test body).
///
/// `test_name` is the test's name as libtest prints it (for an integration
/// test's top-level function, the function's name); it is matched with
/// `--exact`, and the inner run must report `1 passed`, so a name that
/// matches nothing fails the test rather than passing it vacuously.
///
/// As root the namespace comes from `unshare --net`; otherwise from
/// `unshare --net --map-root-user`, which needs unprivileged user
/// namespaces. Where neither works this panics and says so.
pub fn in_private_network(test_name: &str) -> bool {
    if std::env::var_os(INSIDE).is_some_and(|v| v == "1") {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path (current_exe)");
    let mut command = Command::new("unshare");
    command.arg("--net");
    if !is_root() {
        command.arg("--map-root-user");
    }
    command
        .args(["--", "sh", "-c", r#"ip link set lo up && exec "$0" "$@""#])
        .arg(&exe)
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1");
    let output = match command.output() {
        Ok(output) => output,
        Err(e) => panic!(
            "{test_name}: cannot run `unshare` ({e}); this test runs inside a private network \
             namespace and needs util-linux's `unshare` and iproute2's `ip` on PATH"
        ),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Printed so that libtest shows the inner run when this test fails.
    print!("{stdout}");
    eprint!("{stderr}");
    if !output.status.success() && stderr.lines().any(|l| l.starts_with("unshare: ")) {
        panic!(
            "{test_name}: `unshare --net` could not create a network namespace ({}); this test \
             needs root or unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, \
             user.max_user_namespaces > 0, and on Ubuntu \
             kernel.apparmor_restrict_unprivileged_userns=0); run it as root, e.g. \
             `sudo -E cargo test ...`, or enable those",
            stderr.trim()
        );
    }
    assert!(
        output.status.success(),
        "{test_name}: the run inside the private network namespace failed ({}); its output is above",
        output.status
    );
    assert!(
        stdout.contains("1 passed"),
        "{test_name}: the run inside the private network namespace did not report `1 passed`: \
         does `{test_name}` name exactly one test of this binary?"
    );
    false
}

/// Whether this process's effective user id is 0, read from
/// `/proc/self/status` (`Uid: real effective saved fs`).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}
