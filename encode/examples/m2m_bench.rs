//! CPU per frame of feeding a V4L2 memory-to-memory encoder from a capture
//! stream: the frames' own dma-bufs imported (zerocam's path) against the
//! same frames copied into the encoder's MMAP buffers (`force_copy`), with
//! capturing alone (frames dropped) as the floor.
//!
//! Each configuration opens the capture device afresh, captures and encodes
//! 10 frames of warm-up, then measures FRAMES frames: the process's CPU
//! time (`getrusage(RUSAGE_SELF)`, user + system, every thread; also
//! apart) divided by the frames, and the wall-clock frame rate. A stateful
//! encoder driver like vicodec encodes in `device_run`, which the kernel
//! calls from the process's `VIDIOC_QBUF` (or, for a job that waited, from a
//! kernel worker): most of the encoder's own work shows as system time here.
//! One line per configuration,
//! or one JSON object per line with `--json`.
//!
//! ```sh
//! cargo build --release -p zerocam-encode --example m2m_bench
//! tests/lab/run -- target/release/examples/m2m_bench /dev/video0 NV12 1280x720 mmap 300
//! # options: --json, --encoder /dev/videoN (default: $ZEROCAM_LAB_VICODEC_ENC,
//! # else the first FWHT encoder), --only capture|import|copy (repeatable),
//! # --interleave: one stream, an importing and a copying encoder context fed
//! # frames in turn, each `encode` call's thread CPU time counted to its path
//! # (host load that drifts during a run falls on both alike; its `fps` is
//! # frames over the time spent inside `encode` calls)
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

use nix::sys::resource::{getrusage, UsageWho};
use zerocam_capture::v4l2::m2m::{M2mConfig, OutputMemory};
use zerocam_capture::{
    BufferMode, CaptureFormat, Device, FourCc, FrameSource, Stream, StreamConfig,
};
use zerocam_encode::m2m::M2mVideoEncoder;
use zerocam_encode::{Codec, VideoEncoder};

const WAIT: Duration = Duration::from_secs(20);
const WARMUP: u64 = 10;

/// User and system CPU time of the whole process so far.
fn cpu_time() -> (Duration, Duration) {
    rusage(UsageWho::RUSAGE_SELF)
}

/// User and system CPU time of the calling thread so far.
fn thread_cpu_time() -> (Duration, Duration) {
    rusage(UsageWho::RUSAGE_THREAD)
}

/// `getrusage(who)`'s user and system time.
fn rusage(who: UsageWho) -> (Duration, Duration) {
    let u = getrusage(who).expect("getrusage");
    let d = |t: nix::sys::time::TimeVal| {
        Duration::from_micros(t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64)
    };
    (d(u.user_time()), d(u.system_time()))
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
    interleave: bool,
}

struct Measured {
    user: Duration,
    sys: Duration,
    wall: Duration,
    memory: Option<OutputMemory>,
    imports: u64,
    copied: u64,
    packets: u64,
    bytes: u64,
}

fn usage() -> String {
    "usage: m2m_bench [--json] [--encoder /dev/videoN] [--only capture|import|copy]... [--interleave] \
     DEVICE FORMAT WxH mmap|dmabuf FRAMES"
        .to_owned()
}

fn parse() -> Result<Args, String> {
    let mut pos = Vec::new();
    let mut json = false;
    let mut interleave = false;
    let mut encoder = None;
    let mut paths = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--interleave" => interleave = true,
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
        interleave,
    })
}

fn stream(a: &Args) -> Result<Stream, Box<dyn std::error::Error>> {
    let mut d = Device::open(&a.device)?;
    let _ = d.set_menu("Test Pattern", "75% Colorbar");
    d.set_format(a.format, a.width, a.height)?;
    let _ = d.set_frame_rate(60.0);
    let config = StreamConfig {
        mode: a.mode,
        buffers: if a.interleave { 6 } else { 4 },
        hold: if a.interleave { 5 } else { 3 },
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
    let ((user1, sys1), wall) = (cpu_time(), wall0.elapsed());
    let mut m = Measured {
        user: user1 - cpu0.0,
        sys: sys1 - cpu0.1,
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

/// One capture stream, two encoder contexts on the same node (one
/// importing, one forced to copy), frames handed to them in turn; each
/// `encode` call's CPU time (this thread's: the driver encodes in the
/// caller's `VIDIOC_QBUF`) is added to its encoder's account. Host load
/// that drifts over a run (TCG) falls on both alike.
fn measure_interleaved(a: &Args) -> Result<[Measured; 2], Box<dyn std::error::Error>> {
    let mut s = stream(a)?;
    let first = s.next_frame(WAIT)?;
    let mut encs = Vec::new();
    for copy in [false, true] {
        let mut c = M2mConfig::new(FourCc(*b"FWHT"));
        c.force_copy = copy;
        encs.push(M2mVideoEncoder::open_with(
            &a.encoder,
            Codec::Fwht,
            c,
            &first,
        )?);
    }
    let mut m: Vec<Measured> = (0..2)
        .map(|_| Measured {
            user: Duration::ZERO,
            sys: Duration::ZERO,
            wall: Duration::ZERO,
            memory: None,
            imports: 0,
            copied: 0,
            packets: 0,
            bytes: 0,
        })
        .collect();
    let mut frame = Some(first);
    for i in 0..2 * (WARMUP + a.frames) {
        let f = match frame.take() {
            Some(f) => f,
            None => s.next_frame(WAIT)?,
        };
        let k = (i % 2) as usize;
        let ((u0, s0), t0) = (thread_cpu_time(), Instant::now());
        let ps = encs[k].encode(f)?;
        let ((u1, s1), t1) = (thread_cpu_time(), Instant::now());
        if i >= 2 * WARMUP {
            m[k].user += u1 - u0;
            m[k].sys += s1 - s0;
            m[k].wall += t1 - t0;
        }
        for p in ps {
            m[k].packets += 1;
            m[k].bytes += p.data.len() as u64;
        }
    }
    for (e, m) in encs.iter_mut().zip(m.iter_mut()) {
        for p in e.finish()? {
            m.packets += 1;
            m.bytes += p.data.len() as u64;
        }
        let st = e.stats();
        m.memory = Some(e.inner().memory());
        m.imports = st.imports;
        m.copied = st.copied_frames;
    }
    let copy = m.pop().ok_or("no copy")?;
    let import = m.pop().ok_or("no import")?;
    Ok([import, copy])
}

fn report(a: &Args, name: &str, m: &Measured) {
    let size = format!("{}x{}", a.width, a.height);
    let us = |d: Duration| d.as_secs_f64() * 1e6 / a.frames as f64;
    let (user_us, sys_us) = (us(m.user), us(m.sys));
    let per_frame_us = user_us + sys_us;
    let fps = a.frames as f64 / m.wall.as_secs_f64();
    let memory = m.memory.map_or("-".to_owned(), |x| format!("{x:?}"));
    if a.json {
        println!(
            "{{\"device\":\"{}\",\"format\":\"{}\",\"size\":\"{size}\",\"mode\":\"{}\",\
             \"path\":\"{name}\",\"encoder\":\"{}\",\"frames\":{},\"cpu_us_per_frame\":{per_frame_us:.1},\
             \"user_us_per_frame\":{user_us:.1},\"sys_us_per_frame\":{sys_us:.1},\
             \"fps\":{fps:.2},\"memory\":\"{memory}\",\"imports\":{},\"copied_frames\":{},\
             \"packets\":{},\"bytes\":{}}}",
            a.device,
            a.format.name,
            a.mode.name(),
            a.encoder.display(),
            a.frames,
            m.imports,
            m.copied,
            m.packets,
            m.bytes
        );
    } else {
        println!(
            "{} {} {size} {} {name:<11} cpu/frame {per_frame_us:8.0} us (user {user_us:.0}, sys {sys_us:.0})  \
             {fps:6.1} fps  memory={memory} imports={} copied={} packets={} ({} frames)",
            a.device,
            a.format.name,
            a.mode.name(),
            m.imports,
            m.copied,
            m.packets,
            a.frames
        );
    }
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
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        eprintln!(
            "m2m_bench: {} {} {}x{} {} {what}: {e}",
            a.device,
            a.format.name,
            a.width,
            a.height,
            a.mode.name()
        );
    };
    if a.interleave {
        match measure_interleaved(&a) {
            Ok([import, copy]) => {
                report(&a, "import-alt", &import);
                report(&a, "copy-alt", &copy);
            }
            Err(e) => {
                fail("interleaved", &e);
                failed = true;
            }
        }
    } else {
        for &path in &a.paths {
            match measure(&a, path) {
                Ok(m) => report(&a, path.name(), &m),
                Err(e) => {
                    fail(path.name(), &e);
                    failed = true;
                }
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
