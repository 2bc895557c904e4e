//! zerocam's own cost per frame of a GStreamer source against GStreamer's
//! own floor on the same input, measured the same way in one process. The
//! input is
//! - natively (default): an `appsrc` cycling a pool of 4 dma-buf frames
//!   (memfds wrapped by GStreamer's dma-buf allocator); no driver, no pixels;
//! - with `--device /dev/videoN` (the kernel lab's vivid):
//!   `v4l2src io-mode=dmabuf num-buffers=…` NV12,
//!
//! at 640x360 and 1920x1080, into
//! 1. `fakesink` (GStreamer's floor: the frames captured and dropped), as
//!    gst-launch has it (holding the last buffer: `enable-last-sample`) and
//!    without,
//! 2. a bare `appsink` pulled on this thread, set up as `GstSource` sets it
//!    (GStreamer's hand-over from its streaming thread to the caller's),
//! 3. `GstSource` (that hand-over, the import-cache hit, the frame's
//!    hand-out and its return).
//!
//! Each line: the process's CPU time (user + system, every thread) per
//! frame over N frames after 100 of warm-up, the median of `ROUNDS` rounds
//! (default 1) run in turn, the ratio to `fakesink`, and how many frames
//! the sink got copied into system memory (all rounds).
//!
//! `cargo run --release -p zerocam-capture --features gstreamer --example gst_overhead [-- FRAMES] [--device DEV]`

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zerocam_capture::gstreamer as gst;
use zerocam_capture::gstreamer::prelude::*;
use zerocam_capture::gstreamer_allocators::DmaBufMemory;
use zerocam_capture::gstreamer_app::AppSink;
use zerocam_capture::{FrameSource, GstSource};

#[path = "../tests/gst_common/mod.rs"]
mod gst_common;

/// Frames pushed before the measurement starts.
const WARM_UP: usize = 100;

/// The process's CPU time so far, every thread (`CLOCK_PROCESS_CPUTIME_ID`).
fn cpu() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

/// CPU and wall time per frame, µs.
struct PerFrame {
    cpu_us: f64,
    wall_us: f64,
    /// Buffers the sink got in system memory, not as dma-bufs (v4l2src
    /// copies a frame when its driver would run out of queued buffers).
    copied: u64,
}

impl PerFrame {
    fn of(cpu: Duration, wall: Duration, frames: usize) -> PerFrame {
        let n = frames.max(1) as f64;
        PerFrame {
            cpu_us: cpu.as_secs_f64() * 1e6 / n,
            wall_us: wall.as_secs_f64() * 1e6 / n,
            copied: 0,
        }
    }
}

/// What the pipelines start from.
#[derive(Clone)]
enum Input {
    /// An `appsrc` cycling 4 dma-buf frames.
    AppSrc,
    /// `v4l2src` on this device, exporting dma-bufs.
    V4l2(String),
}

impl Input {
    /// The source's description for `count` frames of `w`x`h` NV12.
    fn description(&self, w: usize, h: usize, count: usize) -> String {
        match self {
            Input::AppSrc => gst_common::appsrc_description(w, h),
            Input::V4l2(device) => format!(
                "v4l2src device={device} io-mode=dmabuf num-buffers={count} ! video/x-raw,format=NV12,width={w},height={h}"
            ),
        }
    }

    /// Sets up `pipeline` (the `appsrc`'s feed) for `count` frames.
    fn setup(&self, pipeline: &gst::Pipeline, w: usize, h: usize, count: usize) {
        if let Input::AppSrc = self {
            gst_common::feed(pipeline, gst_common::dma_buf_pool_of(4, false, w, h), count);
        }
    }

    /// `self ! tail` for `count` frames, parsed and set up.
    fn pipeline(
        &self,
        tail: &str,
        w: usize,
        h: usize,
        count: usize,
    ) -> Result<gst::Pipeline, Box<dyn std::error::Error>> {
        let desc = format!("{} ! {tail}", self.description(w, h, count));
        let pipeline = gst::parse::launch(&desc)?
            .downcast::<gst::Pipeline>()
            .map_err(|_| "not a pipeline")?;
        self.setup(&pipeline, w, h, count);
        Ok(pipeline)
    }
}

/// `… ! fakesink`: CPU from the buffer after the warm-up to EOS. With
/// `last_sample` (fakesink's default) it holds the last buffer it got.
fn fakesink(
    input: &Input,
    w: usize,
    h: usize,
    frames: usize,
    last_sample: bool,
) -> Result<PerFrame, Box<dyn std::error::Error>> {
    let tail = format!("fakesink name=sink sync=false enable-last-sample={last_sample}");
    let pipeline = input.pipeline(&tail, w, h, frames + WARM_UP + 1)?;
    let sink = pipeline.by_name("sink").ok_or("no sink")?;
    let pad = sink.static_pad("sink").ok_or("no sink pad")?;
    // The streaming thread stamps the start when the warm-up is done.
    let seen = Arc::new(AtomicUsize::new(0));
    let copied = Arc::new(AtomicU64::new(0));
    let start_cpu = Arc::new(AtomicU64::new(0));
    let start_wall = Arc::new(std::sync::Mutex::new(None::<Instant>));
    {
        let (seen, start_cpu, start_wall) = (seen.clone(), start_cpu.clone(), start_wall.clone());
        let copied = copied.clone();
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if info.buffer().is_some_and(|b| !is_dma_buf(b)) {
                copied.fetch_add(1, Ordering::Relaxed);
            }
            if seen.fetch_add(1, Ordering::Relaxed) == WARM_UP {
                start_cpu.store(cpu().as_nanos() as u64, Ordering::Relaxed);
                if let Ok(mut w) = start_wall.lock() {
                    *w = Some(Instant::now());
                }
            }
            gst::PadProbeReturn::Ok
        });
    }
    pipeline.set_state(gst::State::Playing)?;
    let bus = pipeline.bus().ok_or("no bus")?;
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(600),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .ok_or("no EOS")?;
    let (cpu_end, wall_end) = (cpu(), Instant::now());
    pipeline.set_state(gst::State::Null)?;
    if let gst::MessageView::Error(e) = msg.view() {
        return Err(e.error().message().into());
    }
    let started = start_wall
        .lock()
        .ok()
        .and_then(|w| *w)
        .ok_or("no warm-up")?;
    let cpu_used = cpu_end.saturating_sub(Duration::from_nanos(start_cpu.load(Ordering::Relaxed)));
    // The frames after the one that stamped the start.
    let mut measured = PerFrame::of(cpu_used, wall_end - started, frames);
    measured.copied = copied.load(Ordering::Relaxed);
    Ok(measured)
}

/// `… ! appsink` (as `GstSource` sets it up), pulled on this thread.
fn bare_appsink(
    input: &Input,
    w: usize,
    h: usize,
    frames: usize,
) -> Result<PerFrame, Box<dyn std::error::Error>> {
    let pipeline = input.pipeline(
        "appsink name=sink sync=false max-buffers=2 drop=false",
        w,
        h,
        frames + WARM_UP,
    )?;
    let sink = pipeline
        .by_name("sink")
        .and_then(|s| s.downcast::<AppSink>().ok())
        .ok_or("no sink")?;
    pipeline.set_state(gst::State::Playing)?;
    let timeout = gst::ClockTime::from_seconds(5);
    for _ in 0..WARM_UP {
        sink.try_pull_sample(timeout).ok_or("no sample")?;
    }
    let (cpu0, t0) = (cpu(), Instant::now());
    let mut copied = 0;
    for _ in 0..frames {
        let sample = sink.try_pull_sample(timeout).ok_or("no sample")?;
        copied += u64::from(sample.buffer().is_some_and(|b| !is_dma_buf(b)));
    }
    let mut measured = PerFrame::of(cpu() - cpu0, t0.elapsed(), frames);
    measured.copied = copied;
    pipeline.set_state(gst::State::Null)?;
    Ok(measured)
}

/// `GstSource` on the same input: frames taken and dropped.
fn zerocam(
    input: &Input,
    w: usize,
    h: usize,
    frames: usize,
) -> Result<(PerFrame, zerocam_capture::StreamStats), Box<dyn std::error::Error>> {
    let count = frames + WARM_UP;
    let setup_input = input.clone();
    let mut src = GstSource::with_setup(&input.description(w, h, count), move |pipeline| {
        setup_input.setup(pipeline, w, h, count);
        Ok(())
    })?;
    for _ in 0..WARM_UP {
        src.next_frame(Duration::from_secs(5))?; // every buffer imported
    }
    let (cpu0, t0) = (cpu(), Instant::now());
    for _ in 0..frames {
        drop(src.next_frame(Duration::from_secs(5))?);
    }
    let mut measured = PerFrame::of(cpu() - cpu0, t0.elapsed(), frames);
    let st = src.stats();
    measured.copied = st.system_memory_frames;
    Ok((measured, st))
}

/// Whether `buffer`'s first memory is a dma-buf.
fn is_dma_buf(buffer: &gst::BufferRef) -> bool {
    buffer.n_memory() > 0
        && buffer
            .peek_memory(0)
            .downcast_memory_ref::<DmaBufMemory>()
            .is_some()
}

/// The median of `values` (sorted in place; 0 when empty).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The sinks measured, by name (`--only NAME` runs one).
const MODES: [&str; 4] = [
    "fakesink",
    "fakesink-no-last-sample",
    "appsink",
    "GstSource",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let only = flag("--only");
    let input = flag("--device").map_or(Input::AppSrc, Input::V4l2);
    let frames: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(30_000);
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
        .max(1);
    let modes: Vec<usize> = (0..MODES.len())
        .filter(|&i| only.as_deref().is_none_or(|o| o == MODES[i]))
        .collect();
    if modes.is_empty() {
        return Err(format!("--only: one of {MODES:?}").into());
    }
    zerocam_capture::gstreamer::init()?;
    println!(
        "{}: {frames} frames after {WARM_UP} of warm-up, median of {rounds} round(s); CPU and wall time per frame, µs",
        input.description(0, 0, 0).split(' ').next().unwrap_or("")
    );
    for (w, h) in [(640, 360), (1920, 1080)] {
        let mut cpu = vec![Vec::new(); MODES.len()];
        let mut wall = vec![Vec::new(); MODES.len()];
        let mut copied = vec![0u64; MODES.len()];
        let mut stats = None;
        for round in 0..rounds {
            // Each round starts with the next one, so none always runs first
            // (after the device was idle) or last.
            for k in 0..modes.len() {
                let i = modes[(round + k) % modes.len()];
                let m = match i {
                    0 => fakesink(&input, w, h, frames, true)?,
                    1 => fakesink(&input, w, h, frames, false)?,
                    2 => bare_appsink(&input, w, h, frames)?,
                    _ => {
                        let (m, c) = zerocam(&input, w, h, frames)?;
                        stats = Some(c);
                        m
                    }
                };
                cpu[i].push(m.cpu_us);
                wall[i].push(m.wall_us);
                copied[i] += m.copied;
            }
        }
        // The ratio is to fakesink as gst-launch runs it, when it ran.
        let floor = Some(median(&mut cpu[0].clone())).filter(|f| *f > 0.0);
        for &i in &modes {
            let runs: Vec<String> = cpu[i].iter().map(|c| format!("{c:.0}")).collect();
            let c = median(&mut cpu[i]);
            println!(
                "{w}x{h} {:<24} CPU {c:7.1}  wall {:7.1}  ratio to fakesink {}  copied {}  (rounds: {})",
                MODES[i],
                median(&mut wall[i]),
                floor.map_or("n/a".into(), |f| format!("{:.2}", c / f)),
                copied[i],
                runs.join(" ")
            );
        }
        if let Some(st) = stats {
            println!(
                "{w}x{h} GstSource imports {}, cache hits {}, system-memory frames {}",
                st.cache.misses, st.cache.hits, st.system_memory_frames
            );
        }
    }
    Ok(())
}
