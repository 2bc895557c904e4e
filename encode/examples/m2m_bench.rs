//! CPU per frame of feeding a V4L2 memory-to-memory encoder from a capture
//! stream: the frames' own dma-bufs imported (zerocam's path) against the
//! same frames copied into the encoder's MMAP buffers (`force_copy`), with
//! capturing alone (frames dropped) as the floor.
//!
//! Each configuration opens the capture device afresh, captures and encodes
//! 10 frames of warm-up, then measures FRAMES frames: the process's CPU
//! time (`getrusage(RUSAGE_SELF)`, user + system, every thread) divided by
//! the frames, and the wall-clock frame rate. One line per configuration,
//! or one JSON object per line with `--json`.
//!
//! ```sh
//! cargo build --release -p zerocam-encode --example m2m_bench
//! tests/lab/run -- target/release/examples/m2m_bench /dev/video0 NV12 1280x720 mmap 300
//! # options: --json, --encoder /dev/videoN (default: $ZEROCAM_LAB_VICODEC_ENC,
//! # else the first FWHT encoder), --only capture|import|copy (repeatable)
//! ```
//!
//! vicodec codes heights in multiples of 16 and zerocam copies frames whose
//! layout is not the encoder's (a chroma plane at `stride * 1080` where the
//! encoder reads it at `stride * 1088`), so an import figure needs a height
//! that is a multiple of 16 (480, 720); 1920x1080 is copied whatever is asked,
//! and the line says so (`memory=Copy`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use zerocam_capture::v4l2::m2m::{M2mConfig, OutputMemory};
use zerocam_capture::{
    BufferMode, CaptureFormat, Device, FourCc, FrameSource, Stream, StreamConfig,
};
use zerocam_encode::m2m::M2mVideoEncoder;
use zerocam_encode::{Codec, VideoEncoder};

const WAIT: Duration = Duration::from_secs(20);
const WARMUP: u64 = 10;

/// `struct rusage` (Linux, 64-bit): two `timeval`s, then 14 longs.
#[repr(C)]
#[derive(Default)]
struct Rusage {
    utime: [i64; 2],
    stime: [i64; 2],
    rest: [i64; 14],
}

extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
}

/// User + system CPU time of the whole process so far.
fn cpu_time() -> Duration {
    let mut u = Rusage::default();
    // SAFETY: `u` is a valid, writable `struct rusage`; RUSAGE_SELF is 0.
    let rc = unsafe { getrusage(0, &mut u) };
    assert_eq!(rc, 0, "getrusage failed");
    let us = |t: [i64; 2]| t[0] as u64 * 1_000_000 + t[1] as u64;
    Duration::from_micros(us(u.utime) + us(u.stime))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Capture only: frames dropped as they come (the floor).
    Capture,
    /// Frames queued on the encoder as dma-bufs (falls back to a copy where
    /// the layout does not fit: `memory` says which happened).
    Import,
    /// Every frame copied into the encoder's MMAP buffers.
    Copy,
}

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Capture => "capture",
            Path::Import => "import",
            Path::Copy => "copy",
        }
    }
}

struct Args {
    device: String,
    format: CaptureFormat,
    width: u32,
    height: u32,
    mode: BufferMode,
    frames: u64,
    encoder: PathBuf,
    paths: Vec<Path>,
    json: bool,
}

struct Measured {
    cpu: Duration,
    wall: Duration,
    memory: Option<OutputMemory>,
    imports: u64,
    copied: u64,
    packets: u64,
    bytes: u64,
}

fn usage() -> String {
    "usage: m2m_bench [--json] [--encoder /dev/videoN] [--only capture|import|copy]... \
     DEVICE FORMAT WxH mmap|dmabuf FRAMES"
        .to_owned()
}

fn parse() -> Result<Args, String> {
    let mut pos = Vec::new();
    let mut json = false;
    let mut encoder = None;
    let mut paths = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--encoder" => encoder = Some(PathBuf::from(it.next().ok_or_else(usage)?)),
            "--only" => paths.push(match it.next().as_deref() {
                Some("capture") => Path::Capture,
                Some("import") => Path::Import,
                Some("copy") => Path::Copy,
                _ => return Err(usage()),
            }),
            "-h" | "--help" => return Err(usage()),
            _ => pos.push(a),
        }
    }
    let [device, format, size, mode, frames] = <[String; 5]>::try_from(pos).map_err(|_| usage())?;
    let format: CaptureFormat = format.parse().map_err(|e| format!("{e}"))?;
    let (width, height) = zerocam_capture::format::parse_size(&size).map_err(|e| format!("{e}"))?;
    let mode = match mode.as_str() {
        "mmap" => BufferMode::Mmap,
        "dmabuf" => BufferMode::DmaBuf,
        _ => return Err(usage()),
    };
    let frames = frames.parse().map_err(|_| usage())?;
    let encoder = match encoder {
        Some(e) => e,
        None => std::env::var_os("ZEROCAM_LAB_VICODEC_ENC")
            .map(PathBuf::from)
            .or_else(|| zerocam_encode::m2m::find(Codec::Fwht))
            .ok_or("no FWHT encoder: pass --encoder /dev/videoN")?,
    };
    if paths.is_empty() {
        paths = vec![Path::Capture, Path::Import, Path::Copy];
    }
    Ok(Args {
        device,
        format,
        width,
        height,
        mode,
        frames,
        encoder,
        paths,
        json,
    })
}

fn stream(a: &Args) -> Result<Stream, Box<dyn std::error::Error>> {
    let mut d = Device::open(&a.device)?;
    let _ = d.set_menu("Test Pattern", "75% Colorbar");
    d.set_format(a.format, a.width, a.height)?;
    let _ = d.set_frame_rate(60.0);
    let config = StreamConfig {
        mode: a.mode,
        buffers: 4,
        hold: 3,
        ..Default::default()
    };
    Ok(Stream::new(d, config)?)
}

fn measure(a: &Args, path: Path) -> Result<Measured, Box<dyn std::error::Error>> {
    let mut s = stream(a)?;
    let first = s.next_frame(WAIT)?;
    let mut enc = match path {
        Path::Capture => None,
        Path::Import | Path::Copy => {
            let mut c = M2mConfig::new(FourCc(*b"FWHT"));
            c.force_copy = path == Path::Copy;
            Some(M2mVideoEncoder::open_with(
                &a.encoder,
                Codec::Fwht,
                c,
                &first,
            )?)
        }
    };
    let mut packets = 0u64;
    let mut bytes = 0u64;
    let mut feed =
        |enc: &mut Option<M2mVideoEncoder>, f| -> Result<(), Box<dyn std::error::Error>> {
            if let Some(e) = enc {
                for p in e.encode(f)? {
                    packets += 1;
                    bytes += p.data.len() as u64;
                }
            }
            Ok(())
        };
    feed(&mut enc, first)?;
    for _ in 1..WARMUP {
        feed(&mut enc, s.next_frame(WAIT)?)?;
    }
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    for _ in 0..a.frames {
        feed(&mut enc, s.next_frame(WAIT)?)?;
    }
    let (cpu, wall) = (cpu_time() - cpu0, wall0.elapsed());
    let mut m = Measured {
        cpu,
        wall,
        memory: None,
        imports: 0,
        copied: 0,
        packets,
        bytes,
    };
    if let Some(mut e) = enc {
        for p in e.finish()? {
            m.packets += 1;
            m.bytes += p.data.len() as u64;
        }
        let st = e.stats();
        m.memory = Some(e.inner().memory());
        m.imports = st.imports;
        m.copied = st.copied_frames;
    }
    Ok(m)
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("m2m_bench: {e}");
            return ExitCode::from(2);
        }
    };
    let mut failed = false;
    for &path in &a.paths {
        let size = format!("{}x{}", a.width, a.height);
        match measure(&a, path) {
            Ok(m) => {
                let per_frame_us = m.cpu.as_secs_f64() * 1e6 / a.frames as f64;
                let fps = a.frames as f64 / m.wall.as_secs_f64();
                let memory = m.memory.map_or("-".to_owned(), |x| format!("{x:?}"));
                if a.json {
                    println!(
                        "{{\"device\":\"{}\",\"format\":\"{}\",\"size\":\"{size}\",\"mode\":\"{}\",\
                         \"path\":\"{}\",\"encoder\":\"{}\",\"frames\":{},\"cpu_us_per_frame\":{per_frame_us:.1},\
                         \"fps\":{fps:.2},\"memory\":\"{memory}\",\"imports\":{},\"copied_frames\":{},\
                         \"packets\":{},\"bytes\":{}}}",
                        a.device,
                        a.format.name,
                        a.mode.name(),
                        path.name(),
                        a.encoder.display(),
                        a.frames,
                        m.imports,
                        m.copied,
                        m.packets,
                        m.bytes
                    );
                } else {
                    println!(
                        "{} {} {size} {} {:<7} cpu/frame {per_frame_us:8.0} us  {fps:6.1} fps  \
                         memory={memory} imports={} copied={} packets={} ({} frames)",
                        a.device,
                        a.format.name,
                        a.mode.name(),
                        path.name(),
                        m.imports,
                        m.copied,
                        m.packets,
                        a.frames
                    );
                }
            }
            Err(e) => {
                eprintln!(
                    "m2m_bench: {} {} {size} {} {}: {e}",
                    a.device,
                    a.format.name,
                    a.mode.name(),
                    path.name()
                );
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
