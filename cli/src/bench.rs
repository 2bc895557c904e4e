//! `zerocam bench`: frames per second, SDK overhead, imports vs hits, drops,
//! CPU time per frame.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::{TimeVal, TimeValLike};

use crate::CliError;
use zerocam_capture::open::{open, SourceSpec};

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// What ran.
    pub source: String,
    /// Frames captured.
    pub frames: u64,
    /// Wall-clock seconds the frames took.
    pub seconds: f64,
    /// Frames per second.
    pub fps: f64,
    /// Imports (cache misses).
    pub imports: u64,
    /// Cache hits.
    pub cache_hits: u64,
    /// Frames the driver dropped (a network source: samples lost).
    pub dropped: u64,
    /// A network source's samples that came after a newer one (dropped).
    pub late: u64,
    /// A network source's samples refused (malformed, not decodable).
    pub rejected: u64,
    /// Median SDK overhead per frame, µs.
    pub overhead_us_median: f64,
    /// 99th percentile SDK overhead per frame, µs.
    pub overhead_us_p99: f64,
    /// Median age of a frame when the caller got it, µs: `CLOCK_MONOTONIC`
    /// then minus the frame's timestamp (the driver's, or the publisher's
    /// source's for `unix:`), so it includes the capture pipeline's latency.
    pub latency_us_median: f64,
    /// 99th percentile of the frame age, µs.
    pub latency_us_p99: f64,
    /// Process CPU time per frame, µs.
    pub cpu_us_per_frame: f64,
    /// Buffers.
    pub buffers: usize,
    /// Memory planes per buffer.
    pub planes: usize,
    /// Frames that came in system memory, not as dma-bufs (a GStreamer
    /// software element's, or its copy): the GPU path uploads them.
    pub system_memory_frames: u64,
}

impl BenchReport {
    /// The report as one JSON object.
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "source": self.source,
            "frames": self.frames,
            "seconds": self.seconds,
            "fps": self.fps,
            "imports": self.imports,
            "cache_hits": self.cache_hits,
            "dropped": self.dropped,
            "late": self.late,
            "rejected": self.rejected,
            "overhead_us_median": self.overhead_us_median,
            "overhead_us_p99": self.overhead_us_p99,
            "latency_us_median": self.latency_us_median,
            "latency_us_p99": self.latency_us_p99,
            "cpu_us_per_frame": self.cpu_us_per_frame,
            "buffers": self.buffers,
            "planes": self.planes,
            "system_memory_frames": self.system_memory_frames,
        })
        .to_string()
    }

    /// The report for people.
    pub fn to_text(&self) -> String {
        format!(
            "{} frames in {:.2} s ({:.1} fps)\nSDK overhead per frame: median {:.1} µs, p99 {:.1} µs\n\
             imports {} (buffers {} x planes {}), cache hits {}{}\ndropped {}\nframe age when received: median {:.1} µs, p99 {:.1} µs\n\
             CPU time per frame {:.1} µs\n",
            self.frames,
            self.seconds,
            self.fps,
            self.overhead_us_median,
            self.overhead_us_p99,
            self.imports,
            self.buffers,
            self.planes,
            self.cache_hits,
            if self.system_memory_frames > 0 {
                format!(
                    "; {} frames in system memory (not dma-bufs: the GPU path uploads them)",
                    self.system_memory_frames
                )
            } else {
                String::new()
            },
            self.dropped,
            self.latency_us_median,
            self.latency_us_p99,
            self.cpu_us_per_frame
        )
    }
}

/// The process's CPU time so far, user plus system (`getrusage(RUSAGE_SELF)`,
/// through nix's safe wrapper); zero if the kernel refuses.
pub(crate) fn cpu_time() -> Duration {
    let Ok(usage) = getrusage(UsageWho::RUSAGE_SELF) else {
        return Duration::ZERO;
    };
    let micros =
        |t: TimeVal| Duration::from_micros(u64::try_from(t.num_microseconds()).unwrap_or(0));
    micros(usage.user_time()) + micros(usage.system_time())
}

/// The `q` quantile of sorted durations, µs (0 when there are none).
fn quantile_us(sorted: &[Duration], q: f64) -> f64 {
    sorted
        .get(((sorted.len().saturating_sub(1)) as f64 * q).round() as usize)
        .map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

/// Captures `frames` frames, timing zerocam's part of each.
pub fn bench(
    spec: &SourceSpec,
    frames: u64,
    progress: bool,
) -> Result<(String, BenchReport), CliError> {
    let mut opened = open(spec)?;
    let bar = if progress {
        ProgressBar::new(frames)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames {per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut overhead = Vec::with_capacity(frames as usize);
    let mut age = Vec::with_capacity(frames as usize);
    let (start, cpu0) = (Instant::now(), cpu_time());
    // A Zenoh topic's frames are stamped on the sender's system clock: their
    // age is capture to received and decoded, across the network.
    let clock = opened.source.clock();
    for _ in 0..frames {
        let f = opened.source.next_frame(Duration::from_secs(5))?;
        let t = Instant::now();
        age.push(clock.now().saturating_sub(f.timestamp()));
        let deq = f.dequeue_overhead();
        drop(f);
        overhead.push(deq + t.elapsed());
        bar.inc(1);
    }
    let (wall, cpu) = (start.elapsed(), cpu_time().saturating_sub(cpu0));
    bar.finish_and_clear();
    overhead.sort();
    age.sort();
    let st = opened.source.stats();
    let n = frames.max(1) as f64;
    let report = BenchReport {
        source: opened.description.clone(),
        frames: st.frames,
        seconds: wall.as_secs_f64(),
        fps: st.frames as f64 / wall.as_secs_f64().max(1e-9),
        imports: st.cache.misses,
        cache_hits: st.cache.hits,
        dropped: st.dropped,
        late: st.late,
        rejected: st.rejected,
        overhead_us_median: quantile_us(&overhead, 0.5),
        overhead_us_p99: quantile_us(&overhead, 0.99),
        latency_us_median: quantile_us(&age, 0.5),
        latency_us_p99: quantile_us(&age, 0.99),
        cpu_us_per_frame: cpu.as_secs_f64() * 1e6 / n,
        buffers: st.buffers,
        planes: st.planes,
        system_memory_frames: st.system_memory_frames,
    };
    Ok((opened.description, report))
}
