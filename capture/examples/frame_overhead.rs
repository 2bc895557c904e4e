//! Per-frame SDK overhead of zerocam capture, next to a copying loop.
//!
//! For each size: frames are dequeued as zero-copy tensors and re-queued
//! (zerocam), then the same with a copy of every frame into a fresh buffer
//! (what copying capture libraries do). Overhead = `Frame::dequeue_overhead`
//! (DQBUF → cached tensor) + the re-queue (and the copy); the wait for the
//! driver is excluded. Prints a table and the 1080p / smallest ratio.
//!
//! ```sh
//! cargo run --release -p zerocam-capture --example frame_overhead                  # pattern source
//! tests/lab/run -- target/release/examples/frame_overhead /dev/video1 [FRAMES]     # vivid, in the lab
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use zerocam_capture::{
    CaptureError, CaptureFormat, Device, Frame, FrameSource, PatternConfig, PatternSource, Stream,
    StreamConfig,
};

const WAIT: Duration = Duration::from_secs(10);

fn source(
    device: &str,
    format: CaptureFormat,
    w: u32,
    h: u32,
) -> Result<Box<dyn FrameSource>, CaptureError> {
    if device == "pattern" {
        return Ok(Box::new(PatternSource::new(PatternConfig::new(
            format, w, h,
        ))?));
    }
    let mut d = Device::open(device)?;
    d.set_format(format, w, h)?;
    let _ = d.set_frame_rate(120.0);
    Ok(Box::new(Stream::new(d, StreamConfig::default())?))
}

fn copy_out(f: &Frame) -> Vec<u8> {
    let t = f.tensor();
    let mut out = Vec::new();
    for p in 0..t.plane_count() {
        if let Ok(plane) = t.plane(p) {
            if let Ok(m) = plane.map_read() {
                out.extend_from_slice(&m);
            }
        }
    }
    out
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn run(
    device: &str,
    format: CaptureFormat,
    w: u32,
    h: u32,
    frames: usize,
    copy: bool,
) -> Result<(Duration, Duration, u64), CaptureError> {
    let mut s = source(device, format, w, h)?;
    for _ in 0..10 {
        s.next_frame(WAIT)?;
    }
    let mut times = Vec::with_capacity(frames);
    let mut checksum = 0u64;
    for _ in 0..frames {
        let f = s.next_frame(WAIT)?;
        let t = Instant::now();
        if copy {
            let owned = copy_out(&f);
            checksum += u64::from(owned[owned.len() / 2]);
        }
        let deq = f.dequeue_overhead();
        drop(f);
        times.push(deq + t.elapsed());
    }
    std::hint::black_box(checksum);
    let st = s.stats();
    times.sort();
    Ok((
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        st.cache.misses,
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let device = args.first().map_or("pattern", String::as_str).to_owned();
    let frames = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(300);
    let format: CaptureFormat = match "NV12".parse() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("frame_overhead: {e}");
            return ExitCode::FAILURE;
        }
    };
    let sizes: &[(u32, u32)] = if device == "pattern" {
        &[(320, 240), (1280, 720), (1920, 1080)]
    } else {
        &[(320, 180), (1280, 720), (1920, 1080)] // vivid's webcam sizes
    };
    println!("{device} NV12, {frames} frames per row; overhead per frame, median / p99 (µs)");
    println!("| size | zerocam median | zerocam p99 | copying median | copying p99 | imports |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut medians = Vec::new();
    for &(w, h) in sizes {
        let zero = run(&device, format, w, h, frames, false);
        let copy = run(&device, format, w, h, frames, true);
        match (zero, copy) {
            (Ok((zm, zp, imports)), Ok((cm, cp, _))) => {
                let us = |d: Duration| d.as_secs_f64() * 1e6;
                println!(
                    "| {w}x{h} | {:.2} | {:.2} | {:.2} | {:.2} | {imports} |",
                    us(zm),
                    us(zp),
                    us(cm),
                    us(cp)
                );
                medians.push((zm, cm));
            }
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("frame_overhead: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let (Some(first), Some(last)) = (medians.first(), medians.last()) {
        println!(
            "largest/smallest median: zerocam {:.2}, copying {:.2}",
            last.0.as_secs_f64() / first.0.as_secs_f64(),
            last.1.as_secs_f64() / first.1.as_secs_f64()
        );
    }
    ExitCode::SUCCESS
}
