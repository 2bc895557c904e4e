//! What lab tests share across crates (feature `lab`): one test at a time,
//! the process's open fds, and the environment that puts EGL on zink over
//! lavapipe without a runner flag. Helpers that need zerocam's own types (a
//! `Gpu`, a vivid stream) stay beside the tests that use them, so this crate
//! depends on no zerocam crate.

use std::sync::{Mutex, MutexGuard, Once};

/// One test at a time: vivid's nodes and the (slow, emulated) GPU.
pub fn lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The environment `tests/lab/run --egl` sets, set here once so a test
/// binary needs no runner flag: zink on lavapipe, surfaceless. Call it before
/// the first `Gpu::new`.
pub fn zink_env() {
    static ENV: Once = Once::new();
    ENV.call_once(|| {
        std::env::set_var("LIBGL_ALWAYS_SOFTWARE", "1");
        std::env::set_var("GALLIUM_DRIVER", "zink");
        std::env::set_var("EGL_PLATFORM", "surfaceless");
    });
}

/// How many fds the process has open (`/proc/self/fd`).
///
/// # Panics
/// Where `/proc/self/fd` cannot be read (a lab test has nothing to check then).
pub fn fd_count() -> usize {
    #[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// The fd count once it is at most `want`, read again every 10 ms until
/// `wait` has passed (then the count as it is): a library thread's fd held
/// for a moment goes, a leaked one stays and the caller's comparison fails.
///
/// # Panics
/// As [`fd_count`].
pub fn fd_count_settled(want: usize, wait: std::time::Duration) -> usize {
    let started = std::time::Instant::now();
    loop {
        let n = fd_count();
        if n <= want || started.elapsed() >= wait {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// What the open fds are, sorted (for failure messages).
///
/// # Panics
/// As [`fd_count`].
pub fn fd_list() -> Vec<String> {
    #[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
    let mut v: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

/// Checks that the package at `manifest_dir` declares `binary` as a lab test
/// target (`tests/BINARY.rs` with `required_features`, e.g. `["lab", "gl"]`)
/// and that the file defines each of `tests`, printing each one: a host
/// test's evidence that what only the lab can run is still there and still
/// wired to it.
///
/// # Panics
/// Where it is not (that is the check).
#[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
pub fn assert_lab_tests(
    manifest_dir: &str,
    binary: &str,
    required_features: &[&str],
    tests: &[&str],
) {
    let dir = std::path::Path::new(manifest_dir);
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let features: Vec<String> = required_features
        .iter()
        .map(|f| format!("\"{f}\""))
        .collect();
    let decl = format!(
        "name = \"{binary}\"\npath = \"tests/{binary}.rs\"\nrequired-features = [{}]",
        features.join(", ")
    );
    assert!(
        manifest.contains(&decl),
        "{binary} is not declared as a lab test target ({decl})"
    );
    let src = std::fs::read_to_string(dir.join(format!("tests/{binary}.rs"))).unwrap();
    for test in tests {
        assert!(
            src.contains(&format!("fn {test}()")),
            "lab test {test} missing"
        );
        println!("runs in the kernel lab (cargo lab-test): {binary}::{test}");
    }
}
