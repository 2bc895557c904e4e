//! Camera → EGLImage cache → NV12 to RGB model input on the GPU, as a detector
//! on an i.MX8M Plus or a Jetson would be fed: each 1280x720 NV12 frame is
//! cropped to its centre square and scaled to a 640x640 RGB tensor by
//! `zerocam::gpu::Gpu::convert`. A dma-buf frame is imported as an EGLImage once
//! per camera buffer (the cache keys on the tensor's identity and geometry), so
//! the imports stay at the buffer count however many frames flow; frames that
//! are not dma-bufs (the pattern source's memfds) are uploaded instead.
//!
//! ```sh
//! cargo run --release -p zerocam-examples --bin camera_to_gl -- [/dev/videoN] [--frames N]
//! ```
//!
//! The model input is a PBO tensor where the GPU has no dma-buf import (it
//! stays on the GPU until mapped), a dma-buf rendered in place where it has.

#![deny(unsafe_code)]

use std::process::ExitCode;
use std::time::{Duration, Instant};

use zerocam::capture::open::{open, SourceSpec};
use zerocam::capture::BufferMode;
use zerocam::gpu::{ConvertOptions, Gpu};
use zerocam::tensor::{PixelFormat, Region, Tensor, TensorMapTrait, TensorMemory};

const INPUT: usize = 640;

/// The model input: a dma-buf where the GPU can render into one, else a PBO.
fn model_input(gpu: &Gpu) -> Result<Tensor<u8>, Box<dyn std::error::Error>> {
    if gpu.info().dma_buf_import {
        if let Ok(t) = Tensor::image(INPUT, INPUT, PixelFormat::Rgb, Some(TensorMemory::Dma)) {
            return Ok(t);
        }
    }
    Ok(gpu.pbo_image(INPUT, INPUT, PixelFormat::Rgb)?)
}

/// The centre square of a `w`x`h` frame (even edges, as 4:2:0 needs).
fn centre_square(w: usize, h: usize) -> Region {
    let side = w.min(h) & !1;
    Region::new(((w - side) / 2) & !1, ((h - side) / 2) & !1, side, side)
}

fn run(device: Option<String>, frames: u64) -> Result<(), Box<dyn std::error::Error>> {
    let gpu = Gpu::new()?;
    let info = gpu.info();
    println!(
        "GPU: {} ({}), dma-buf import: {}",
        info.renderer,
        info.version,
        if info.dma_buf_import { "yes" } else { "no" }
    );
    let spec = SourceSpec {
        device,
        format: Some("NV12".parse()?),
        size: Some((1280, 720)),
        fps: Some(30.0),
        buffers: 4,
        mode: BufferMode::Mmap,
        read_only: false,
        ..SourceSpec::new(None)
    };
    let mut opened = open(&spec)?;
    println!("{}", opened.description);
    let input = model_input(&gpu)?;
    println!(
        "model input: {INPUT}x{INPUT} RGB in {} memory",
        input.memory()
    );
    let start = Instant::now();
    for _ in 0..frames {
        let frame = opened.source.next_frame(Duration::from_secs(5))?;
        let t = frame.tensor();
        let crop = centre_square(t.width().unwrap_or(0), t.height().unwrap_or(0));
        let options = ConvertOptions {
            crop: Some(crop),
            color: frame.color_spec(),
            ..Default::default()
        };
        let t0 = Instant::now();
        gpu.convert(t, &input, &options)?;
        let convert = t0.elapsed();
        drop(frame); // the buffer goes back to the camera; the model reads its own copy
        let (r, g, b) = {
            let m = input.map_read()?;
            let v = m.view()?;
            let mid = INPUT / 2;
            (v[[mid, mid, 0]], v[[mid, mid, 1]], v[[mid, mid, 2]])
        };
        let st = gpu.stats()?;
        println!(
            "convert {:7.2} ms  centre RGB ({r:3}, {g:3}, {b:3})  imports {}  cache hits {}  uploads {}",
            convert.as_secs_f64() * 1e3,
            st.images.imports,
            st.images.hits,
            st.uploads
        );
    }
    let st = gpu.stats()?;
    let source = opened.source.stats();
    println!(
        "{} frames in {:.2} s from {} buffers: {} EGLImage imports, {} cache hits, {} uploads",
        st.converts,
        start.elapsed().as_secs_f64(),
        source.buffers,
        st.images.imports,
        st.images.hits,
        st.uploads
    );
    Ok(())
}

fn main() -> ExitCode {
    zerocam_examples::example_main("camera_to_gl", 30, run)
}
