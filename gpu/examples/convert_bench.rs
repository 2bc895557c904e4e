//! Per-frame cost of the GPU path: a camera-like ring of B 1280x720 NV12
//! dma-bufs converted to a 640x640 RGB model input, three ways in one run:
//!
//! - `cached`: the EGLImage cache hits (zerocam's path: B imports in all);
//! - `reimport`: every frame imported anew (what naive pipelines do: the cache
//!   imports are cleared before each conversion, so each frame pays
//!   eglCreateImage, the texture binding and the destroy);
//! - `upload`: no import at all, the frame uploaded through a CPU map.
//!
//! ```sh
//! cargo build --release -p zerocam-gpu --example convert_bench
//! tests/lab/run --egl -- target/release/examples/convert_bench 60
//! tests/lab/run --egl -- target/release/examples/convert_bench 5 model  # model rows only
//! ```
//!
//! Where there is no DMA heap or no dma-buf import (the host), only `upload`
//! runs, and the first line says so.
//!
//! Then the model-input rows ([`Gpu::write_model`], centre crop): the same
//! frames to a 1x3x640x640 `f32` tensor, ImageNet mean/std, into memory (read
//! back) and into a PBO (timed with a CPU map of it, which waits for the
//! GPU); to 640x640x3 `u8` (NHWC) and to 1x3x299x299 `u8` (NCHW, an odd
//! size: its last texel is shared, read back byte by byte) in memory;
//! uploaded or (with dma-bufs) imported; and the whole frame to a
//! 1x3x192x192 `f32` tensor, bilinear and `ModelResample::Area` (the cost
//! of averaging footprints). Each row gives min, median and p90.
#![allow(clippy::unwrap_used)] // a benchmark: failing loudly is the point

use std::time::{Duration, Instant};

use zerocam_gpu::{
    ChannelLayout, ConvertOptions, Gpu, GpuStats, ImportPolicy, ModelResample, ModelWrite,
    SampleRect,
};
use zerocam_tensor::{Access, DType, PixelFormat, Region, Tensor, TensorDyn, TensorMemory};

const BUFFERS: usize = 4;

fn ring(memory: TensorMemory) -> zerocam_tensor::Result<Vec<Tensor<u8>>> {
    (0..BUFFERS)
        .map(|i| {
            let t = Tensor::<u8>::image(1280, 720, PixelFormat::Nv12, Some(memory))?;
            t.map_write()?
                .iter_mut()
                .enumerate()
                .for_each(|(j, b)| *b = ((i * 31 + j) % 251) as u8);
            Ok(t)
        })
        .collect()
}

fn run(
    gpu: &Gpu,
    frames: &[Tensor<u8>],
    dst: &Tensor<u8>,
    n: usize,
    import: ImportPolicy,
    reimport: bool,
) -> (Vec<Duration>, GpuStats) {
    gpu.clear_caches().unwrap();
    let before = gpu.stats().unwrap();
    let options = ConvertOptions {
        import,
        ..Default::default()
    };
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let frame = &frames[i % frames.len()];
        let t0 = Instant::now();
        if reimport {
            gpu.clear_imports().unwrap();
        }
        gpu.convert(frame, dst, &options).unwrap();
        times.push(t0.elapsed());
    }
    let after = gpu.stats().unwrap();
    let mut delta = after;
    delta.images.imports -= before.images.imports;
    delta.images.hits -= before.images.hits;
    delta.uploads -= before.uploads;
    delta.readbacks -= before.readbacks;
    times.sort();
    (times, delta)
}

/// Like [`run`], into a model input.
fn run_model(
    gpu: &Gpu,
    frames: &[Tensor<u8>],
    dst: &TensorDyn,
    input: &ModelWrite,
    n: usize,
    import: ImportPolicy,
) -> (Vec<Duration>, GpuStats) {
    let before = gpu.stats().unwrap();
    let options = ConvertOptions {
        import,
        ..Default::default()
    };
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let t0 = Instant::now();
        gpu.write_model_dyn(&frames[i % frames.len()], dst, input, &options, 0)
            .unwrap();
        if dst.memory() == TensorMemory::Pbo {
            // A readback into a PBO may still be in flight: a consumer's map
            // waits for it, so the row counts it.
            drop(dst.map_access(Access::Read).unwrap());
        }
        times.push(t0.elapsed());
    }
    let after = gpu.stats().unwrap();
    let mut delta = after;
    delta.images.imports -= before.images.imports;
    delta.images.hits -= before.images.hits;
    delta.uploads -= before.uploads;
    delta.readbacks -= before.readbacks;
    times.sort();
    (times, delta)
}

/// A model-input destination of `input` in memory or (`pbo`) a PBO.
fn model_tensor(gpu: &Gpu, input: &ModelWrite, pbo: bool) -> TensorDyn {
    let shape = input.shape();
    match (input.dtype, pbo) {
        (dtype, false) => TensorDyn::new(&shape, dtype, Some(TensorMemory::Mem), None).unwrap(),
        (DType::U8, true) => gpu.pbo_tensor::<u8>(&shape).unwrap().into(),
        (_, true) => gpu.pbo_tensor::<f32>(&shape).unwrap().into(),
    }
}

/// The model-input rows: 1x3x640x640 f32 NCHW, ImageNet mean/std, centre
/// crop (memory and PBO); 640x640x3 u8 NHWC (whole texels); 1x3x299x299
/// u8 NCHW, an odd size whose element ends inside a texel (its last texel
/// read back byte by byte).
fn model_rows(gpu: &Gpu, frames: &[Tensor<u8>], import: ImportPolicy, name: &str, n: usize) {
    // The centre square of the 1280x720 frames, onto the whole input (what
    // zerocam-preprocess's `Fit::Crop` works out for a square input).
    let write = |w, h, dtype, layout, gain: [f32; 3], bias| ModelWrite {
        size: (w, h),
        batch: 1,
        layout,
        dtype,
        matrix: [gain[0], 0.0, 0.0, 0.0, gain[1], 0.0, 0.0, 0.0, gain[2]],
        bias,
        pad: [0.0; 3],
        range: match dtype {
            DType::U8 => (0.0, 255.0),
            _ => (f32::MIN, f32::MAX),
        },
        source: SampleRect {
            x: 280.0,
            y: 0.0,
            width: 720.0,
            height: 720.0,
        },
        target: Region::new(0, 0, w, h),
        resample: ModelResample::Bilinear,
    };
    // ImageNet mean/std: (rgb - mean) / std.
    let (mean, std) = ([0.485f32, 0.456, 0.406], [0.229f32, 0.224, 0.225]);
    let f32s = write(
        640,
        640,
        DType::F32,
        ChannelLayout::Planes,
        std.map(|s| 1.0 / s),
        [0, 1, 2].map(|c| -mean[c] / std[c]),
    );
    let u8s = |w, h, layout| write(w, h, DType::U8, layout, [255.0; 3], [0.0; 3]);
    let rows = [
        (f32s, false, "f32 mem"),
        (f32s, true, "f32 pbo+map"),
        (
            u8s(640, 640, ChannelLayout::Interleaved),
            false,
            "u8 nhwc mem",
        ),
        (u8s(299, 299, ChannelLayout::Planes), false, "u8 299 mem"),
    ];
    // The whole frame stretched to 1x3x192x192 f32, bilinear and area
    // (footprints of 6.7x3.75 source pixels: 4x3 luma samples a pixel).
    let small = ModelWrite {
        source: SampleRect {
            x: 0.0,
            y: 0.0,
            width: 1280.0,
            height: 720.0,
        },
        ..write(
            192,
            192,
            DType::F32,
            ChannelLayout::Planes,
            std.map(|s| 1.0 / s),
            [0, 1, 2].map(|c| -mean[c] / std[c]),
        )
    };
    let area = ModelWrite {
        resample: ModelResample::Area,
        ..small
    };
    let rows = rows
        .into_iter()
        .chain([(small, false, "f32 192 bil"), (area, false, "f32 192 area")]);
    for (input, pbo, label) in rows {
        let dst = model_tensor(gpu, &input, pbo);
        run_model(gpu, frames, &dst, &input, BUFFERS, import); // warm up: every buffer imported
        report(
            name,
            label,
            &run_model(gpu, frames, &dst, &input, n, import),
        );
    }
}

fn report(name: &str, dst: &str, (times, s): &(Vec<Duration>, GpuStats)) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = times[times.len() / 2];
    let p90 = times[times.len() * 9 / 10];
    println!(
        "{name:<9} -> {dst:<11}: min {:8.3} ms  median {:8.3} ms  p90 {:8.3} ms  ({} frames: {} imports, {} cache hits, {} uploads, {} readbacks)",
        ms(times[0]),
        ms(median),
        ms(p90),
        times.len(),
        s.images.imports,
        s.images.hits,
        s.uploads,
        s.readbacks
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let gpu = Gpu::new().unwrap();
    let info = gpu.info();
    println!("zerocam-gpu convert bench: 1280x720 NV12 -> 640x640 RGB, {n} frames from {BUFFERS} buffers");
    println!(
        "renderer: {} ({}), dma-buf import: {}",
        info.renderer, info.version, info.dma_buf_import
    );
    let dma = ring(TensorMemory::Dma).ok().filter(|_| info.dma_buf_import);
    if dma.is_none() {
        println!("no DMA heap or no dma-buf import here: only `upload` runs");
    }
    let mem_dst = Tensor::<u8>::image(640, 640, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let mem_frames = ring(TensorMemory::Mem).unwrap();
    if std::env::args().nth(2).as_deref() == Some("model") {
        if let Some(frames) = &dma {
            model_rows(&gpu, frames, ImportPolicy::Require, "cached", n);
        }
        model_rows(&gpu, &mem_frames, ImportPolicy::Never, "upload", n);
        return;
    }
    // Warm up: compile the programs, allocate the targets.
    run(&gpu, &mem_frames, &mem_dst, 3, ImportPolicy::Never, false);
    if let Some(frames) = &dma {
        run(&gpu, frames, &mem_dst, 3, ImportPolicy::Require, false);
        let dma_dst =
            Tensor::<u8>::image(640, 640, PixelFormat::Rgb, Some(TensorMemory::Dma)).unwrap();
        // A 16x16 output makes the draw nearly free: what is left is the
        // per-frame import (or cache lookup) and the call itself.
        let tiny = Tensor::<u8>::image(16, 16, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
        for (dst, label) in [(&mem_dst, "mem"), (&dma_dst, "dma"), (&tiny, "16x16")] {
            report(
                "cached",
                label,
                &run(&gpu, frames, dst, n, ImportPolicy::Require, false),
            );
            report(
                "reimport",
                label,
                &run(&gpu, frames, dst, n, ImportPolicy::Require, true),
            );
        }
        report(
            "upload",
            "mem",
            &run(&gpu, frames, &mem_dst, n, ImportPolicy::Never, false),
        );
        model_rows(&gpu, frames, ImportPolicy::Require, "cached", n);
        model_rows(&gpu, frames, ImportPolicy::Never, "upload", n);
    } else {
        report(
            "upload",
            "mem",
            &run(&gpu, &mem_frames, &mem_dst, n, ImportPolicy::Never, false),
        );
        model_rows(&gpu, &mem_frames, ImportPolicy::Never, "upload", n);
    }
}
