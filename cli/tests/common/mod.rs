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

/// Reads a child's stdout lines until one starts with `word`; that line.
pub fn read_until(out: &mut std::io::BufReader<std::process::ChildStdout>, word: &str) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "serve ended before {word:?}"
        );
        if line.starts_with(word) {
            return line;
        }
    }
}

/// A `zerocam` process, killed and reaped when dropped: a failing test
/// leaves none behind.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `zerocam serve ARGS --socket SOCKET`, once it has said it is serving;
/// its stdout, to read its status lines on.
pub fn serve_socket(
    args: &[&str],
    socket: &std::path::Path,
) -> (Running, std::io::BufReader<std::process::ChildStdout>) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_zerocam"))
        .arg("serve")
        .args(args)
        .arg("--socket")
        .arg(socket)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let serve = Running(child);
    read_until(&mut out, "serving at");
    (serve, out)
}

/// `zerocam ARGS`, once a line of its stdout starts with `word`: the
/// process and that line (the rest of its stdout read and dropped, so it
/// never blocks on a full pipe).
pub fn start_until(args: &[&str], word: &str) -> (Running, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_zerocam"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let running = Running(child);
    let line = read_until(&mut out, word);
    std::thread::spawn(move || for _ in out.lines() {});
    (running, line)
}

/// `zerocam serve DEVICE --zenoh` under `PREFIX`, listening on
/// `tcp/127.0.0.1:PORT` only, for `frames` frames, plus `extra` (at 30 fps
/// unless `extra` names `--fps`); its output discarded.
pub fn serve_zenoh(port: u16, device: &str, prefix: &str, frames: u64, extra: &[&str]) -> Running {
    let fps: &[&str] = if extra.contains(&"--fps") {
        &[]
    } else {
        &["--fps", "30"]
    };
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_zerocam"))
        .args(["serve", device, "--zenoh", "--topic", prefix])
        .args(fps)
        .args(["--listen", &format!("tcp/127.0.0.1:{port}")])
        .args(["--frames", &frames.to_string()])
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    Running(child)
}

/// A loopback port nobody listens on now (the Zenoh tests' endpoints).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The check called `name` in a `zerocam doctor --json` report.
pub fn doctor_check<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?}: {report}"))
}

/// `zerocam record pattern:stamp --encoder ENCODER` to `clip` (an .mp4) at
/// 1280x720, then decoded by FFmpeg: 60 pictures, every stamp readable,
/// sequences 0 to 59 in order (none lost, none repeated), each picture at
/// least 35 dB from the source's own picture of that frame. `named`: what
/// the status must call the encoder.
pub fn stamped_recording(clip: &std::path::Path, encoder: &str, named: &str) {
    use zerocam_capture::{PatternConfig, PatternSource, CAPTURE_FORMATS};
    use zerocam_test_support::picture::{ffmpeg_luma, Pictures};

    let (w, h) = (1280, 720);
    let out = zerocam(&[
        "record",
        "pattern:stamp",
        "--size",
        "1280x720",
        "--encoder",
        encoder,
        "-o",
        clip.to_str().unwrap(),
        "--frames",
        "60",
    ]);
    assert!(out.contains("60 frames") && out.contains(named), "{out}");
    // NV12, the pattern's default: the source the frames came from, again.
    let source = PatternSource::new(PatternConfig {
        stamp: true,
        ..PatternConfig::new(CAPTURE_FORMATS[0], w as u32, h as u32)
    })
    .unwrap();
    let luma = ffmpeg_luma(&[], clip.to_str().unwrap(), w, h, 1000);
    let pictures = Pictures::check(&luma, &source, w, h);
    assert_eq!((luma.len(), pictures.unreadable), (60, 0), "{encoder}");
    assert_eq!(
        pictures.sequences(),
        (0..60).collect::<Vec<u32>>(),
        "{encoder}"
    );
    assert!(
        pictures.min_psnr() >= 35.0,
        "{encoder}: PSNR {:?}",
        pictures.psnr
    );
}

/// The number after `label` in a status `line`.
pub fn count(line: &str, label: &str) -> u64 {
    line.split(label)
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no {label:?} in the status {line:?}"))
}

/// Reads `out`'s lines on a thread of its own (the pipe never fills),
/// keeping the latest one that contains `word`.
pub fn keep_latest(
    out: std::io::BufReader<std::process::ChildStdout>,
    word: &'static str,
) -> std::sync::Arc<std::sync::Mutex<String>> {
    use std::io::BufRead;
    let latest = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let kept = latest.clone();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if line.contains(word) {
                *kept.lock().unwrap() = line;
            }
        }
    });
    latest
}
