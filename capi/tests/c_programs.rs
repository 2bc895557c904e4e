//! The C API from C, on the host: the examples (`examples/c/`) and the C
//! tests of every error path (`capi/tests/c/`) compiled with
//! `cc -Wall -Wextra -Werror` against the library this build made, and run;
//! the header compiled as C++; `capi/install` and its pkg-config file.
//! A missing `cc`, `c++` or `pkg-config` fails these tests (never a skip).

use std::ffi::OsStr;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Compiles the C test program `name` (`capi/tests/c/<name>.c`) and runs it:
/// each of its test functions prints `c-test NAME ... ok`; it exits 0 only
/// when all passed.
fn run_c_tests(name: &str) -> String {
    let dir = workdir(name);
    let source = format!("capi/tests/c/{name}.c");
    let exe = compile(&dir, &source, name, &shared(&dir));
    let out = success(&mut program(&dir, &exe, &[]));
    assert!(out.contains(&format!("{name}: ")), "{out}");
    assert!(!out.contains("FAILED"), "{out}");
    out
}

#[test]
fn capture_example_checksums_30_pattern_frames_and_imports_each_buffer_plane_once() {
    let dir = workdir("capture");
    let exe = compile(&dir, "examples/c/capture.c", "capture", &shared(&dir));
    let out = success(&mut program(&dir, &exe, &[]));
    let frames: Vec<(u32, &str)> = out
        .lines()
        .filter_map(|l| l.strip_prefix("frame "))
        .map(|l| {
            let mut words = l.split_whitespace();
            let sequence = words.next().and_then(|s| s.parse().ok());
            (
                sequence.expect("a sequence number"),
                words.last().expect("a checksum"),
            )
        })
        .collect();
    let sequences: Vec<u32> = frames.iter().map(|f| f.0).collect();
    assert_eq!(sequences, (0..30).collect::<Vec<_>>(), "{out}");
    // The pattern moves: the maps read each frame's own bytes.
    let mut sums: Vec<&str> = frames.iter().map(|f| f.1).collect();
    sums.sort_unstable();
    sums.dedup();
    assert!(sums.len() > 1, "every frame has one checksum:\n{out}");
    assert!(out.contains("frame 0 640x480 bytes 460800 "), "{out}");
    assert!(out.contains("\nframes 30 dropped 0\n"), "{out}");
    assert!(
        out.contains("\nimports 4 cache hits 26 buffers 4 planes 1\n"),
        "{out}"
    );
}

#[test]
fn capture_example_maps_split_nv12m_planes_one_by_one_to_the_same_checksums_as_nv12() {
    let dir = workdir("capture_nv12m");
    let exe = compile(&dir, "examples/c/capture.c", "capture", &shared(&dir));
    let frame_lines = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.starts_with("frame "))
            .map(str::to_owned)
            .collect()
    };
    let nv12 = success(&mut program(&dir, &exe, &["pattern", "6", "NV12"]));
    let nv12m = success(&mut program(&dir, &exe, &["pattern", "6", "NV12M"]));
    assert_eq!(frame_lines(&nv12).len(), 6, "{nv12}");
    assert_eq!(frame_lines(&nv12), frame_lines(&nv12m), "{nv12}\n{nv12m}");
    // Hits count plane lookups: frames 4 and 5, two planes each.
    assert!(
        nv12m.contains("\nimports 8 cache hits 4 buffers 4 planes 2\n"),
        "{nv12m}"
    );
}

#[test]
fn capture_example_reports_a_missing_device_by_its_status_name_and_exits_1() {
    let dir = workdir("capture_missing");
    let exe = compile(&dir, "examples/c/capture.c", "capture", &shared(&dir));
    let out = output(&mut program(&dir, &exe, &["/dev/zerocam-no-such-video"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ZEROCAM_ERROR_NOT_FOUND"), "{stderr}");
    assert!(stderr.contains("/dev/zerocam-no-such-video"), "{stderr}");
}

/// With the `gstreamer` feature (tests/run: `cargo test -p zerocam-capi
/// --features gstreamer --test c_programs gst`): a `gst:` spec from C, its
/// system-memory frames counted as such, and its end a status code.
#[cfg(feature = "gstreamer")]
#[test]
fn gst_capture_example_reads_a_pipeline_from_c_and_its_end_is_end_of_stream() {
    let dir = workdir("capture_gst");
    let exe = compile(&dir, "examples/c/capture.c", "capture", &shared(&dir));
    let spec = "gst:videotestsrc num-buffers=5 ! video/x-raw,format=NV12,width=64,height=48";
    let out = success(&mut program(&dir, &exe, &[spec, "5"]));
    assert!(out.contains("frame 4 64x48 "), "{out}");
    assert!(out.contains("\nframes 5 dropped 0\n"), "{out}");
    // videotestsrc draws into system memory: nothing to import.
    assert!(out.contains("\nimports 0 cache hits 0 "), "{out}");
    let end = output(&mut program(&dir, &exe, &[spec, "6"]));
    let stderr = String::from_utf8_lossy(&end.stderr);
    assert_eq!(end.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ZEROCAM_ERROR_END_OF_STREAM"), "{stderr}");
}

/// A Zenoh topic of JPEG `CompressedImage`s published from this process
/// (zerocam's default session: scouting and gossip off, listening on
/// `tcp/127.0.0.1:port` only) until the returned flag is set.
#[cfg(feature = "zenoh")]
#[allow(clippy::unwrap_used)] // a test's publisher: failing loudly is the point
fn publish_jpegs(port: u16, key: &'static str) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use zerocam_capture::ros::{CompressedImage, Header, Message, Time};
    use zerocam_capture::zenoh_source::zenoh::Wait;
    use zerocam_capture::zenoh_source::{open_session, Role, ZenohOptions};
    use zerocam_capture::{FrameSource, PatternConfig, PatternSource};

    let mut pattern =
        PatternSource::new(PatternConfig::new("NV12".parse().unwrap(), 320, 240)).unwrap();
    let frame = pattern
        .next_frame(std::time::Duration::from_secs(1))
        .unwrap();
    let jpeg = zerocam_encode::jpeg::encode_frame(&frame, 85).unwrap();
    let options = ZenohOptions {
        listen: vec![format!("tcp/127.0.0.1:{port}")],
        ..ZenohOptions::default()
    };
    let session = open_session(&options, Role::Publisher).unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let done = stop.clone();
    std::thread::spawn(move || {
        let publisher = session.declare_publisher(key).wait().unwrap();
        let mut payload = Vec::new();
        for sec in 1.. {
            if done.load(Ordering::Relaxed) {
                break;
            }
            let header = Header {
                stamp: Time { sec, nanosec: 0 },
                frame_id: "c",
            };
            CompressedImage {
                header,
                format: "jpeg",
                data: &jpeg,
            }
            .encode_into(&mut payload);
            publisher.put(payload.clone()).wait().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
    });
    stop
}

#[cfg(feature = "zenoh")]
#[test]
#[allow(clippy::unwrap_used)] // tests may panic
fn capture_example_reads_a_zenoh_topic_named_in_its_spec_string() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let stop = publish_jpegs(port, "rt/c/jpeg");
    let dir = workdir("capture_zenoh");
    let exe = compile(&dir, "examples/c/capture.c", "capture", &shared(&dir));
    let spec = format!("zenoh:rt/c/jpeg?connect=tcp/127.0.0.1:{port}");
    let out = success(&mut program(&dir, &exe, &[&spec, "10"]));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(out.contains(" 320x240 "), "{out}");
    assert!(out.contains("\nframes 10 dropped 0\n"), "{out}");
    // A parameter zerocam does not know: refused before any session opens.
    let bad = output(&mut program(
        &dir,
        &exe,
        &["zenoh:rt/c/jpeg?mode=client", "1"],
    ));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("ZEROCAM_ERROR_INVALID_ARGUMENT"),
        "{stderr}"
    );
    assert!(stderr.contains("mode=client"), "{stderr}");
}

#[test]
fn import_bench_example_times_cache_hits_and_imports_each_pool_buffer_once() {
    let dir = workdir("import_bench");
    let exe = compile(
        &dir,
        "examples/c/import_bench.c",
        "import_bench",
        &shared(&dir),
    );
    let out = success(&mut program(&dir, &exe, &["1000"]));
    assert!(out.contains("get_or_import hit + unref"), "{out}");
    // 4 imports, then 1,000 hits in the loop and 1 for the maps.
    assert!(out.contains("cache: misses 4 hits 1001 live 4"), "{out}");
}

#[test]
fn capture_example_links_statically_against_libzerocam_a() {
    let dir = workdir("capture_static");
    let archive = library_dir().join("libzerocam_capi.a");
    let link = [
        archive.as_os_str(),
        "-lpthread".as_ref(),
        "-ldl".as_ref(),
        "-lm".as_ref(),
        // OpenH264 (the encoders', and the zenoh: source's decoder) is C++.
        "-lstdc++".as_ref(),
    ];
    let exe = compile(&dir, "examples/c/capture.c", "capture", &link);
    // No library path: a program that needed libzerocam.so.1 would not load.
    let out = success(
        Command::new(&exe)
            .args(["pattern", "8"])
            .env_remove("LD_LIBRARY_PATH"),
    );
    assert!(
        out.contains("\nimports 4 cache hits 4 buffers 4 planes 1\n"),
        "{out}"
    );
}

#[test]
fn import_dmabuf_example_finds_one_memfd_by_two_fd_numbers_as_one_cached_tensor() {
    let dir = workdir("import_dmabuf");
    let exe = compile(
        &dir,
        "examples/c/import_dmabuf.c",
        "import_dmabuf",
        &shared(&dir),
    );
    let out = success(&mut program(&dir, &exe, &["memfd"]));
    assert!(out.contains("\ncache: misses 1 hits 1 live 1\n"), "{out}");
    assert!(
        out.contains("read them back through the other: same\n"),
        "{out}"
    );
    assert!(out.ends_with("ok\n"), "{out}");
}

#[test]
fn import_dmabuf_example_exits_77_only_for_a_device_this_machine_lacks() {
    let dir = workdir("import_dmabuf_devices");
    let exe = compile(
        &dir,
        "examples/c/import_dmabuf.c",
        "import_dmabuf",
        &shared(&dir),
    );
    for (source, device) in [
        ("udmabuf", "/dev/udmabuf"),
        ("heap", "/dev/dma_heap/system"),
        ("/dev/zerocam-no-such-video", "/dev/zerocam-no-such-video"),
    ] {
        let out = output(&mut program(&dir, &exe, &[source]));
        let expected = if Path::new(device).exists() { 0 } else { 77 };
        assert_eq!(
            out.status.code(),
            Some(expected),
            "{source} ({device} exists: {})\n{}{}",
            expected == 0,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn c_handle_errors_null_wrong_type_garbage_and_released_handles_return_their_codes() {
    let out = run_c_tests("errors_handles");
    assert!(
        out.contains("c-test the_last_error_is_per_thread ... ok"),
        "{out}"
    );
    assert!(
        out.contains("c-test out_parameters_are_untouched_on_failure ... ok"),
        "{out}"
    );
}

#[test]
fn c_value_errors_enums_shapes_fds_bounds_maps_and_cache_arguments_return_their_codes() {
    let out = run_c_tests("errors_values");
    assert!(out.contains("c-test a_closed_fd_is_bad_fd ... ok"), "{out}");
}

#[test]
fn c_capture_and_model_input_errors_return_their_codes() {
    let out = run_c_tests("errors_capture");
    assert!(
        out.contains("c-test next_frame_with_every_buffer_held_is_busy ... ok"),
        "{out}"
    );
}

#[test]
fn c_hostile_counts_views_cache_lengths_crops_and_calls_at_exit_get_status_codes() {
    let out = run_c_tests("hostile");
    for test in [
        "failed_calls_while_a_thread_exits_return_their_status",
        "counts_and_capacities_are_checked_before_anything_is_read_or_reserved",
        "an_nv12_view_maps_per_plane_not_whole_with_zero_strides",
        "a_cache_hit_serves_any_length_the_file_holds",
        "crops_plain_tensors_and_ring_depths_get_their_codes",
        "a_shrinkable_memfd_is_refused_with_what_c_can_do_about_it",
        "stats_come_while_another_thread_waits_for_a_frame",
    ] {
        assert!(out.contains(&format!("c-test {test} ... ok")), "{out}");
    }
    // The atexit handler ran after main, its failed call a status, not an abort.
    assert!(
        out.contains("atexit: ZEROCAM_ERROR_INVALID_HANDLE (a message)"),
        "{out}"
    );
}

#[test]
fn c_four_threads_share_tensors_and_a_cache_and_leave_no_handle_or_fd() {
    run_c_tests("threads");
}

#[test]
fn the_header_compiles_as_cpp17_and_as_c11_without_warnings() {
    let header = repo().join("capi/include/zerocam.h");
    let strict = ["-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only"];
    success(
        Command::new("c++")
            .args(["-std=c++17", "-x", "c++"])
            .args(strict)
            .arg(&header),
    );
    success(
        Command::new("cc")
            .args(["-std=c11", "-x", "c"])
            .args(strict)
            .arg(&header),
    );
}

#[test]
fn install_script_makes_a_prefix_that_pkg_config_builds_the_capture_example_against() {
    let dir = workdir("install");
    let prefix = dir.join("prefix");
    success(
        Command::new(repo().join("capi/install"))
            .arg("--prefix")
            .arg(&prefix)
            .arg("--from")
            .arg(library_dir()),
    );
    let lib = prefix.join("lib");
    assert!(lib.join("libzerocam.so.1").is_file());
    assert!(lib.join("libzerocam.a").is_file());
    let link = std::fs::read_link(lib.join("libzerocam.so")).expect("lib/libzerocam.so is a link");
    assert_eq!(link, Path::new("libzerocam.so.1"));
    let installed = std::fs::read(prefix.join("include/zerocam.h")).expect("include/zerocam.h");
    assert_eq!(
        installed,
        std::fs::read(repo().join("capi/include/zerocam.h")).expect("header")
    );

    let pkg_config = |args: &[&str]| {
        success(
            Command::new("pkg-config")
                .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
                .args(args)
                .arg("zerocam"),
        )
    };
    assert_eq!(
        pkg_config(&["--modversion"]).trim(),
        env!("CARGO_PKG_VERSION")
    );
    let static_libs = pkg_config(&["--libs", "--static"]);
    assert!(
        static_libs.contains("-lzerocam -lpthread -ldl -lm -lstdc++"),
        "{static_libs}"
    );
    let flags = pkg_config(&["--cflags", "--libs"]);
    let flags: Vec<&str> = flags.split_whitespace().collect();
    let out = dir.join("capture");
    success(
        Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
            .arg(repo().join("examples/c/capture.c"))
            .arg("-o")
            .arg(&out)
            .args(&flags),
    );
    let run = success(
        Command::new(&out)
            .args(["pattern", "6"])
            .env("LD_LIBRARY_PATH", &lib),
    );
    assert!(
        run.contains("\nimports 4 cache hits 2 buffers 4 planes 1\n"),
        "{run}"
    );
}

// Compiling and running C programs against the library this build made.

/// The workspace root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("capi/ has a parent")
        .to_path_buf()
}

/// `target/<profile>/deps/`, where the build of this test put
/// `libzerocam_capi.so` and `libzerocam_capi.a`, the C library before
/// `capi/install` names it (beside this test executable; `cargo test` leaves
/// them there, only `cargo build` copies them up a level).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe
        .parent()
        .expect("the test executable is in target/<profile>/deps/");
    for lib in ["libzerocam_capi.so", "libzerocam_capi.a"] {
        assert!(
            dir.join(lib).is_file(),
            "{} has no {lib}: cargo builds it with the zerocam-capi crate",
            dir.display()
        );
    }
    dir.to_path_buf()
}

/// A fresh directory for test `name`, holding `libzerocam.so.1` (what
/// programs load: the soname) and `libzerocam.so` (what `-lzerocam` finds),
/// both links to the built `libzerocam_capi.so`.
fn workdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("c_programs")
        .join(name);
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != ErrorKind::NotFound => panic!("removing {}: {e}", dir.display()),
        _ => {}
    }
    std::fs::create_dir_all(&dir).expect("creating the test's directory");
    let so = library_dir().join("libzerocam_capi.so");
    for link in ["libzerocam.so.1", "libzerocam.so"] {
        std::os::unix::fs::symlink(&so, dir.join(link)).expect("linking libzerocam.so");
    }
    dir
}

/// Runs `cmd` to completion; a missing program fails the test, naming it
/// (the C API's tests need a C toolchain: they never skip without one).
fn output(cmd: &mut Command) -> Output {
    let program = cmd.get_program().to_string_lossy().into_owned();
    match cmd.output() {
        Ok(out) => out,
        Err(e) if e.kind() == ErrorKind::NotFound => panic!(
            "`{program}` is not on PATH: the C API's tests compile and run C programs; \
             install a C toolchain (gcc, g++, pkg-config)"
        ),
        Err(e) => panic!("running {program}: {e}"),
    }
}

/// `cmd`'s stdout; fails the test with both streams unless it exits 0.
fn success(cmd: &mut Command) -> String {
    let out = output(cmd);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} exited with {}\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The flags that link a program against the library in `dir` (a workdir).
fn shared(dir: &Path) -> Vec<String> {
    vec![
        format!("-L{}", dir.display()),
        "-lzerocam".into(),
        "-lpthread".into(),
    ]
}

/// Compiles `source` (from the workspace root) into `dir/exe` with
/// `cc -std=c11 -Wall -Wextra -Werror`, the header's directory and
/// `capi/tests/c/` on the include path, then `link`.
fn compile<S: AsRef<OsStr>>(dir: &Path, source: &str, exe: &str, link: &[S]) -> PathBuf {
    let out = dir.join(exe);
    success(
        Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
            .arg("-I")
            .arg(repo().join("capi/include"))
            .arg("-I")
            .arg(repo().join("capi/tests/c"))
            .arg(repo().join(source))
            .arg("-o")
            .arg(&out)
            .args(link),
    );
    out
}

/// `exe` with `args`, loading libzerocam from `dir`.
fn program(dir: &Path, exe: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(args).env("LD_LIBRARY_PATH", dir).current_dir(dir);
    cmd
}
