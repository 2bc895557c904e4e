//! Time per frame of recording H.264 in software: pattern-source NV12
//! frames through the [`Recorder`] (OpenH264, one thread: the caller's,
//! into an MP4). Each `write` is timed (wall clock: the encoder is
//! single-threaded and CPU-bound), and the process CPU time of the whole
//! run is read, less that of drawing the same number of pattern frames
//! alone:
//!
//! ```text
//! cargo run --release -p zerocam-encode --example h264_bench -- [FRAMES] [WxH] [--raw FILE]
//! ```
//!
//! `--raw FILE` also writes the frames' NV12 planes (no padding) to FILE,
//! the same pictures for `ffmpeg -f rawvideo -pix_fmt nv12` and GStreamer's
//! `rawvideoparse` to encode (docs/benchmarks.md, "H.264 recording").

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::{Duration, Instant};

use zerocam_capture::{FrameSource, PatternConfig, PatternSource};
use zerocam_encode::encoder::EncoderChoice;
use zerocam_encode::recorder::{Recorder, RecorderConfig};
use zerocam_tensor::Tensor;

/// The CPU time (user + system) this process has used, from
/// `/proc/self/stat` (clock ticks of 10 ms: read over whole runs only).
fn process_cpu() -> Result<Duration, Box<dyn std::error::Error>> {
    let s = std::fs::read_to_string("/proc/self/stat")?;
    // After the command's closing parenthesis, utime and stime are the
    // 12th and 13th fields.
    let after = s.rsplit_once(')').ok_or("no ) in /proc/self/stat")?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| -> Result<u64, Box<dyn std::error::Error>> {
        Ok(f.get(i).ok_or("short /proc/self/stat")?.parse()?)
    };
    Ok(Duration::from_millis((field(11)? + field(12)?) * 10))
}

/// Writes every plane's rows without their padding.
fn write_raw(out: &mut impl Write, t: &Tensor<u8>) -> Result<(), Box<dyn std::error::Error>> {
    for p in 0..t.plane_count() {
        let plane = t.plane(p)?;
        let (rows, len) = (plane.shape()[0], plane.shape()[1]);
        let stride = plane.stride(0).unwrap_or(len);
        let m = plane.map_read()?;
        for r in 0..rows {
            out.write_all(&m[r * stride..r * stride + len])?;
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut raw = None;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--raw" {
            raw = Some(it.next().ok_or("--raw needs a file")?.clone());
        } else {
            rest.push(a.clone());
        }
    }
    let frames: usize = rest.first().map_or(Ok(300), |a| a.parse())?;
    let (w, h) = zerocam_capture::format::parse_size(rest.get(1).map_or("1920x1080", |s| s))?;
    let mut source = PatternSource::new(PatternConfig::new("NV12".parse()?, w, h))?;
    let out = std::env::temp_dir().join("zerocam_h264_bench.mp4");
    let mut rec = Recorder::create(
        &out,
        RecorderConfig {
            encoder: EncoderChoice::Software,
            ..RecorderConfig::default()
        },
    )?;
    if let Some(path) = raw {
        let mut r = BufWriter::new(File::create(path)?);
        let mut dump = PatternSource::new(PatternConfig::new("NV12".parse()?, w, h))?;
        for _ in 0..frames {
            write_raw(&mut r, dump.next_frame(Duration::from_secs(1))?.tensor())?;
        }
        r.flush()?;
    }
    // The pattern's drawing alone, to subtract from the recording's CPU.
    let mut draw_only = PatternSource::new(PatternConfig::new("NV12".parse()?, w, h))?;
    let c0 = process_cpu()?;
    for _ in 0..frames {
        drop(draw_only.next_frame(Duration::from_secs(1))?);
    }
    let draw_cpu = process_cpu()? - c0;
    let mut times = Vec::with_capacity(frames);
    let c0 = process_cpu()?;
    for _ in 0..frames {
        let frame = source.next_frame(Duration::from_secs(1))?;
        let t0 = Instant::now();
        rec.write(frame)?;
        times.push(t0.elapsed());
    }
    let t0 = Instant::now();
    let stats = rec.finish()?;
    let close = t0.elapsed();
    let cpu = (process_cpu()? - c0).saturating_sub(draw_cpu);
    // The first frame opens the encoder: reported apart.
    let first = times.remove(0);
    times.sort();
    let total: Duration = times.iter().sum();
    let mean = total.as_secs_f64() * 1e3 / times.len().max(1) as f64;
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    let p99 = times
        .get(times.len() * 99 / 100)
        .copied()
        .unwrap_or_default();
    println!("{}", rec.describe());
    println!(
        "{frames} NV12 {w}x{h} frames to {}: time per frame mean {mean:.2} ms, median {:.2} ms, \
         p99 {:.2} ms ({:.1} fps on one core); first frame (opens the encoder) {:.2} ms, \
         finish {:.2} ms; process CPU per frame {:.2} ms (drawing the pattern subtracted)",
        out.display(),
        median.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        1e3 / mean,
        first.as_secs_f64() * 1e3,
        close.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3 / frames as f64,
    );
    println!(
        "{} bytes ({:.2} Mbit/s at 30 fps), frames copied {} (NV12's chroma split)",
        stats.bytes,
        stats.bytes as f64 * 8.0 * 30.0 / frames as f64 / 1e6,
        stats.encoder.copied_frames
    );
    Ok(())
}
