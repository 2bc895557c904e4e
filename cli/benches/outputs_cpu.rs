//! The whole process's CPU per frame of `zerocam serve pattern --rtsp
//! --zenoh` at 1280x720 and 30 fps, with one RTSP player (FFmpeg, decoding
//! to nowhere) and one subscriber of Zenoh's H.264 topic, against the same
//! serve with the RTSP player alone: with one H.264 encoder for both
//! outputs, the second costs the Zenoh samples, not a second encode.
//!
//!     cargo bench -p zerocam-cli --features gstreamer,zenoh --bench outputs_cpu
//!
//! `ZEROCAM_BENCH_BIN` names another `zerocam` binary to measure (a build
//! of an earlier tree: the figure before a change); `ZEROCAM_BENCH_SECONDS`
//! the window measured (default 10 s, after 3 s left to settle).
//! docs/benchmarks.md keeps a run's table.
#![allow(clippy::unwrap_used, clippy::print_stdout)] // a bench binary: loud is right

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zerocam_capture::zenoh_source::zenoh::Wait;
use zerocam_capture::zenoh_source::{open_session, Role, ZenohOptions};

#[path = "../tests/common/mod.rs"]
mod common;

/// The process's user + system CPU time so far (`/proc/PID/stat`).
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's `(...)`: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .unwrap()
        .unwrap() as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / hz)
}

/// The number after `label` in `line`.
fn number_after(line: &str, label: &str) -> Option<u64> {
    line.split(label)
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The sum of the numbers after each `label` in `line` (an earlier tree's
/// outputs each counted their own encoders).
fn sum(line: &str, label: &str) -> Option<u64> {
    let parts = line.split(label).skip(1);
    let numbers = parts.map(|rest| number_after(&format!("{label}{rest}"), label));
    numbers.sum()
}

/// One run: `zerocam serve` with RTSP and Zenoh, an RTSP player and, with
/// `zenoh_client`, an H.264 subscriber; the process's CPU per frame over
/// the window, and the encoders it opened (when its status says).
fn run(bin: &str, zenoh_client: bool, seconds: u64) -> (f64, Option<u64>) {
    let port = common::free_port();
    let mut child = Command::new(bin)
        .args(["serve", "pattern", "--size", "1280x720", "--fps", "30"])
        .args(["--rtsp", "127.0.0.1:0/cam", "--zenoh", "--topic", "rt/cpu"])
        // OpenH264 for both, in every tree: `auto` picks by how the frames
        // are given (x264enc for frames handed over, where the GStreamer
        // feature is built), which changed with the shared encoder.
        .args(["--rtsp-encoder", "software", "--h264", "software"])
        .args(["--listen", &format!("tcp/127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let server = common::Running(child);
    let line = common::read_until(&mut out, "RTSP at");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("rtsp://"))
        .unwrap()
        .to_owned();
    // The latest status line.
    let status = common::keep_latest(out, "rtsp: clients");
    let player = common::Running(
        Command::new("ffmpeg")
            .args([
                "-nostdin",
                "-v",
                "error",
                "-rtsp_transport",
                "tcp",
                "-i",
                &url,
            ])
            .args(["-f", "null", "-"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let samples = Arc::new(AtomicU64::new(0));
    let session = zenoh_client.then(|| {
        let options = ZenohOptions {
            connect: vec![format!("tcp/127.0.0.1:{port}")],
            ..ZenohOptions::default()
        };
        let session = open_session(&options, Role::Subscriber).unwrap();
        let samples = samples.clone();
        let subscriber = session
            .declare_subscriber("rt/cpu/h264")
            .callback(move |_| {
                samples.fetch_add(1, Ordering::Relaxed);
            })
            .wait()
            .unwrap();
        (session, subscriber)
    });
    std::thread::sleep(Duration::from_secs(3));
    let frames = |s: &str| number_after(s, "rtsp: clients 1, frames ").unwrap_or(0);
    let (cpu0, frames0) = (cpu_of(pid), frames(&status.lock().unwrap()));
    std::thread::sleep(Duration::from_secs(seconds));
    let (cpu1, line) = (cpu_of(pid), status.lock().unwrap().clone());
    let frames = frames(&line).saturating_sub(frames0).max(1);
    if zenoh_client {
        assert!(
            samples.load(Ordering::Relaxed) > 0,
            "the subscriber got nothing: {line}"
        );
    }
    drop((player, session, server));
    let per = (cpu1 - cpu0).as_secs_f64() * 1e6 / frames as f64;
    (per, sum(&line, "encoders opened "))
}

fn main() {
    let own = env!("CARGO_BIN_EXE_zerocam").to_owned();
    let bin = std::env::var("ZEROCAM_BENCH_BIN").unwrap_or(own);
    let seconds = std::env::var("ZEROCAM_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    println!(
        "{bin}: serve pattern 1280x720 at 30 fps --rtsp --zenoh (OpenH264), {seconds} s measured"
    );
    println!("| clients | process CPU per frame (µs) | encoders opened |");
    println!("| --- | ---: | ---: |");
    let (alone, opened) = run(&bin, false, seconds);
    println!(
        "| one RTSP player | {alone:.0} | {} |",
        opened.map_or("-".into(), |n| n.to_string())
    );
    let (both, opened) = run(&bin, true, seconds);
    println!(
        "| one RTSP player, one Zenoh H.264 subscriber | {both:.0} | {} |",
        opened.map_or("-".into(), |n| n.to_string())
    );
    println!("both/alone: {:.2}", both / alone);
}
