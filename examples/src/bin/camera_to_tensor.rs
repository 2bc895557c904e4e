//! Camera → cached zero-copy tensors → a stand-in inference step, as on an
//! i.MX8M Plus: the ISI speaks the multi-planar API, so NV12M, in DMABUF mode
//! with buffers from the DMA heap (`linux,cma` there). With no camera, the
//! built-in pattern source (NV12M on memfds) stands in.
//!
//! ```sh
//! cargo run --release -p zerocam-examples --bin camera_to_tensor -- [/dev/videoN] [--frames N]
//! ```
//!
//! The "inference" reads the frame through ndarray without copying it: the mean
//! luma of a centre crop (a view: same buffer) and the mean chroma.

#![deny(unsafe_code)]

use std::process::ExitCode;
use std::time::{Duration, Instant};

use zerocam::capture::open::{open_or_fall_back, SourceSpec};
use zerocam::capture::{BufferMode, Frame};
use zerocam::tensor::{Region, TensorMapTrait};

/// Mean of the centre half of the luma plane and of the chroma plane.
fn infer(frame: &Frame) -> Result<(f64, f64), zerocam::tensor::Error> {
    let t = frame.tensor();
    let (w, h) = (t.width().unwrap_or(0), t.height().unwrap_or(0));
    let even = |v: usize| v & !1;
    let centre = t.view(Region::new(
        even(w / 4),
        even(h / 4),
        even(w / 2),
        even(h / 2),
    ))?;
    let luma = centre.plane(0)?;
    let m = luma.map_read()?;
    let y = m.view()?;
    let mean_y = y.iter().map(|&v| f64::from(v)).sum::<f64>() / y.len() as f64;
    let chroma = t.plane(1)?;
    let c = chroma.map_read()?;
    let uv = c.view()?;
    let mean_uv = uv.iter().map(|&v| f64::from(v)).sum::<f64>() / uv.len() as f64;
    Ok((mean_y, mean_uv))
}

fn run(device: Option<String>, frames: u64) -> Result<(), Box<dyn std::error::Error>> {
    let spec = SourceSpec {
        device,
        format: Some("NV12M".parse()?),
        size: Some((640, 480)),
        fps: Some(30.0),
        buffers: 4,
        mode: BufferMode::DmaBuf,
        read_only: false,
        ..SourceSpec::new(None)
    };
    // No DMA heap (or a driver without DMABUF): MMAP + EXPBUF buffers on the
    // same open device, which `Stream::new` hands back with the error.
    let mut opened = open_or_fall_back(&spec, Some(BufferMode::Mmap))?;
    println!("{}", opened.description);
    let mut last: Option<Duration> = None;
    let start = Instant::now();
    for _ in 0..frames {
        let frame = opened.source.next_frame(Duration::from_secs(5))?;
        let t0 = Instant::now();
        let (mean_y, mean_uv) = infer(&frame)?;
        let gap = last.map_or(0.0, |l| {
            (frame.timestamp().saturating_sub(l)).as_secs_f64() * 1e3
        });
        last = Some(frame.timestamp());
        println!(
            "frame {:5}  +{gap:6.1} ms  buffer {}  id {:3}  zerocam {:6.1} µs  infer {:7.1} µs  mean Y {mean_y:5.1}  mean CbCr {mean_uv:5.1}",
            frame.sequence(),
            frame.buffer_index(),
            frame.tensor().buffer_identity().id(),
            frame.dequeue_overhead().as_secs_f64() * 1e6,
            t0.elapsed().as_secs_f64() * 1e6,
        );
    }
    let st = opened.source.stats();
    println!(
        "{} frames in {:.2} s: imports {} (= {} buffers x {} planes), cache hits {}, dropped {}",
        st.frames,
        start.elapsed().as_secs_f64(),
        st.cache.misses,
        st.buffers,
        st.planes,
        st.cache.hits,
        st.dropped
    );
    Ok(())
}

fn main() -> ExitCode {
    zerocam_examples::example_main("camera_to_tensor", 60, run)
}
