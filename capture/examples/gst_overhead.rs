//! zerocam's own cost per frame of a GStreamer source, natively: an
//! `appsrc` cycles a pool of 4 dma-buf frames (memfds wrapped by
//! GStreamer's dma-buf allocator) into `GstSource`, and the process's CPU
//! time per frame is measured over N frames at 640x360 and 1920x1080 — the
//! pull from the `appsink`, the import-cache hit, the frame's hand-out and
//! its return, and the `appsrc`'s own push. No driver and no pixels touched:
//! what is left is zerocam's path (and GStreamer's hand-over).
//!
//! `cargo run --release -p zerocam-capture --features gstreamer --example gst_overhead [-- FRAMES]`

use std::time::{Duration, Instant};

use zerocam_capture::FrameSource;

#[path = "../tests/gst_common/mod.rs"]
mod gst_common;

/// The process's CPU time (user + system) from `/proc/self/stat`, in clock ticks of 10 ms.
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let frames: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30_000);
    zerocam_capture::gstreamer::init()?;
    for (w, h) in [(640, 360), (1920, 1080)] {
        let pool = gst_common::dma_buf_pool_of(4, false, w, h);
        let mut src = gst_common::appsrc_source_of(pool, frames + 100, w, h);
        for _ in 0..100 {
            src.next_frame(Duration::from_secs(5))?; // every buffer imported
        }
        let (cpu0, t0) = (cpu(), Instant::now());
        for _ in 0..frames {
            drop(src.next_frame(Duration::from_secs(5))?);
        }
        let (cpu_used, wall) = (cpu() - cpu0, t0.elapsed());
        let st = src.stats();
        println!(
            "{w}x{h}: {frames} frames, CPU {:.1} us/frame, wall {:.1} us/frame, imports {} hits {}",
            cpu_used.as_secs_f64() * 1e6 / frames as f64,
            wall.as_secs_f64() * 1e6 / frames as f64,
            st.cache.misses,
            st.cache.hits
        );
    }
    Ok(())
}
