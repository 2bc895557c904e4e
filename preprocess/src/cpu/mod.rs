//! The CPU path from a frame to a model input: [`CpuPreprocessor`].
//!
//! # The rule: the GPU's
//! The GPU samples each plane bilinearly with half-pixel centres (luma at
//! luma coordinates; chroma at the same relative position in its own plane,
//! centre-sited, `(x + 0.5) * cw / w - 0.5`; edges clamped per plane, at the
//! edges of the source tensor, so a crop reads the pixels around it and a
//! view does not), then converts YCbCr → RGB, clamps and normalizes. For
//! imported dma-bufs the driver samples external YUV images that way, so
//! that rule cannot change; the CPU follows it, and both are tested against
//! one f64 reference (`tests/common/model_reference.rs`).
//!
//! # How
//! Per output row, straight into the mapped destination:
//! 1. `rows`: each plane row that output rows read is resampled across at the
//!    output columns once (taps worked out once per geometry, `taps`), into
//!    `u16` in 1/256 steps; two such rows are kept per plane, so consecutive
//!    output rows share them. RGB, BGR, RGBA, BGRA and GREY resample their
//!    channels the same way; packed YUYV/UYVY are read with byte offsets.
//! 2. the vertical blend of each value's two rows (`rows::blend_rows`);
//! 3. one fused pass: YCbCr → RGB with the [`ColorSpec`] matrix, clamping to
//!    0..=255 and the [`ModelInput`] affine, in `f32` (`float`: the affine is
//!    folded into the matrix and the clamp), or in 16-bit fixed point for
//!    `u8`/`i8` inputs that are the levels themselves (`fixed`: within 0.6 of
//!    a step of the exact value, 8 lanes a vector); then the element type and
//!    the layout (`write`: NCHW rows in place, NHWC interleaved).
//!
//! Converting at the model's 640x640 rather than the crop's 720x720 is also
//! less work.
//!
//! # Measured (`model_input_bench`, 1280x720 NV12 → centre crop → 640x640)
//! On this project's 2-core AMD EPYC VM (AVX, no AVX2: the build targets
//! x86-64's baseline SSE2), one thread, shared with other builds: so
//! instructions per frame (callgrind, independent of the load), and times of
//! three alternating rounds of 300 runs, load average 4.6–5.2. OpenCV 5.0 +
//! numpy 2.4 with `cv2.setNumThreads(1)`, the code the bench prints. Times:
//! `cargo run --release -p zerocam-gpu --example model_input_bench 300` and
//! `python python/bench/model_input_bench.py 300` (OpenCV), alternated three
//! times; instructions: that example under `valgrind --tool=callgrind` with a
//! case filter (`... model_input_bench 1 f32`). These are the figures the
//! rewrite was judged by; docs/benchmarks.md holds the current ones (they
//! differ by the load of the day):
//!
//! | | instructions | fastest | median |
//! | --- | --- | --- | --- |
//! | OpenCV + numpy, f32 NCHW ImageNet | | 10.3–12.4 ms | 16.0–20.1 ms |
//! | OpenCV, u8 NHWC | | 1.35–1.56 ms | 2.29–2.69 ms |
//! | before (yuvutils-rs, f32 RGB resampling), f32 | 33 M (both cases) | 3.0–3.6 ms | 4.3–7.8 ms |
//! | before, u8 NHWC | | 3.7–3.8 ms | 7.5–8.7 ms |
//! | now, f32 NCHW ImageNet | 11.9 M | 1.3–2.1 ms | 2.1–2.6 ms |
//! | now, u8 NHWC (fixed point) | 11.7 M | 1.1–2.0 ms | 1.5–2.3 ms |
//!
//! And now: u8 NCHW 8.9 M, i8 NHWC 12.9 M, f16 NCHW 14.0 M, f32 letterbox
//! 9.4 M instructions a frame.
//!
//! Of the f32 case's 11.9 M: 5.3 M resampling across (about half of it the
//! scalar gather of each column's bytes, the one loop that does not
//! vectorize), 1.5 M the vertical blends, 4.8 M the f32 conversion and
//! normalization. In the same run the u8 case beat OpenCV's median every
//! round (by 0.3–1.1 ms), not always its fastest.
//!
//! # Libraries, measured before choosing
//! - `yuvutils-rs` 0.8 (SIMD YUV → RGB; the path before this one, 2 M of its
//!   33 M instructions a frame) converts every pixel with its nearest chroma
//!   (tens of steps off the GPU next to a sharp chroma edge), and read
//!   limited-range luma below 16 as 16. The GPU's rule resamples the planes
//!   first, which it has no call for; converting resampled planes with it
//!   would round each to 8 bits first (half a step each, up to 1.6 after the
//!   matrix, past the 0.02 bound of normalized floats). Dropped.
//! - `fast_image_resize` 6.1 (measured before, `docs/benchmarks.md`): on
//!   8-bit samples it rounds after each pass (1.25 steps off), on 16-bit
//!   ones it took half the frame time, and it rebuilt its tables (about 1,300
//!   allocations) every call.
//! - `half`'s slice conversion for `f16` (F16C on x86-64, found at run time):
//!   14 M instructions a frame against 38 M one at a time. On aarch64 it
//!   takes NEON (`fcvtn`, 4 values a call) only where the CPU reports
//!   FEAT_FP16, found at run time (Cortex-A55/A76/A78); on Cortex-A53/A72
//!   (i.MX8M Plus, Raspberry Pi 3/4) it converts in scalar software.
//!
//! So the loops are this module's, written for LLVM to vectorize (contiguous
//! rows, no per-pixel branches) and checked in the generated code on x86-64
//! (SSE2: `pmulhuw`, `paddw`, `mulps`, 8 or 4 lanes) and, by
//! `preprocess/check-aarch64` in CI, on aarch64 (NEON: `umull`/`umull2` +
//! `uzp2` on `.8h` for `mulhi` in the blends and the fixed-point pass,
//! `ucvtf`/`fmul`/`fadd` on `.4s` in the float pass, `st3` for NHWC floats;
//! docs/benchmarks.md lists what it finds). The resampling across is the
//! one loop LLVM cannot vectorize (each column reads at its own offset), so
//! where a geometry lets 8 columns read within 16 bytes it is done with byte
//! shuffles written with `std::arch` (`shuffle`: SSSE3/AVX2 `pshufb`, NEON
//! `tbl`), elsewhere by the scalar gather of `rows::pass`; `u8` NHWC pixels are interleaved 16 at a time
//! (`st3 .16b` on aarch64). What LLVM needed is noted where it matters
//! (`rows::mulhi`, `rows::blend_rows`, the row window of `rows`). On x86-64
//! the float pass, the blends and the resampling across are compiled again
//! for AVX2 by the `multiversion` crate, which picks that copy at run time
//! where the CPU has it (its macro holds the `unsafe` call; the bits are the
//! same, as nothing fuses multiply-adds): 0.62 → 0.52 ms a 640x640 f32
//! frame on one thread here (`model_input_bench 200`, a host with AVX2).

mod area;
mod error;
mod fixed;
mod float;
#[allow(unsafe_code)] // a pool's borrowed work, called while `run` waits for it
mod pool;
mod rows;
#[allow(unsafe_code)] // the vector loads and stores of the byte shuffles
mod shuffle;
mod source;
mod taps;
mod write;

pub use error::CpuConvertError;

use zerocam_tensor::{Element, ReadOnly, Region, Tensor, TensorDyn, TensorMap};

use super::{FitPlacement, ModelInput, ModelLayout, Resample};
use fixed::FixedPixels;
use float::FloatPixels;
use rows::{PlaneBytes, StreamRows};
use source::Layout;
use std::sync::{Mutex, PoisonError};
use write::{Band, Frame, OutElem, Pixels, Scratch};
use zerocam_tensor::ColorSpec;

/// Converts frames to model inputs on the CPU, keeping its taps and scratch
/// rows between calls: after the first frame of a geometry, a conversion
/// allocates nothing.
///
/// ```
/// use zerocam_preprocess::{CpuPreprocessor, Fit, ModelInput};
/// use zerocam_tensor::ColorSpec;
/// use zerocam_tensor::{DType, PixelFormat, Tensor, TensorDyn, TensorMemory};
/// let input = ModelInput::new(64, 64)?
///     .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
///     .fit(Fit::Crop);
/// let frame = Tensor::<u8>::image(128, 72, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
/// let dst = TensorDyn::new(&input.shape(), DType::F32, Some(TensorMemory::Mem), None)?;
/// let mut pre = CpuPreprocessor::new();
/// let placed = pre.convert(&frame, None, ColorSpec::default(), &input, &dst, 0)?;
/// assert_eq!(placed.source.x, 28.0); // the centre 72x72 of the frame
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CpuPreprocessor {
    /// One per thread: its streams' taps and kept rows, its scratch rows.
    workers: Vec<Worker>,
    /// What the taps were worked out for.
    geometry: Option<Geometry>,
    /// Threads the output rows are split over.
    threads: usize,
    /// The threads they run on besides the caller's, made once (`None`:
    /// one thread, the caller's).
    pool: Option<pool::Pool>,
}

/// What one thread of a conversion keeps between frames.
#[derive(Debug, Default)]
struct Worker {
    /// Each stream's taps and kept rows.
    streams: [StreamRows; 2],
    /// Channel rows for layouts and types not written in place.
    scratch: Scratch,
}

/// One thread's part of a frame: its band and its worker, taken once.
type Part<'b, 'w, T> = Mutex<Option<(Band<'b, T>, &'w mut Worker)>>;

/// The most threads one conversion is split over.
pub const MAX_THREADS: usize = 8;

impl Default for CpuPreprocessor {
    fn default() -> Self {
        CpuPreprocessor::with_threads(default_threads())
    }
}

/// The threads a conversion uses unless told: the cores this process may
/// run on (`sched_getaffinity` and the cgroup's CPU quota, as the standard
/// library reads them), at most [`MAX_THREADS`].
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS)
}

/// Everything the taps depend on.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Geometry {
    layout: Layout,
    size: (usize, usize),
    source: [u64; 4],
    target: Region,
    resample: Resample,
}

/// The mapped tensor planes a conversion reads (one or two).
type Maps = [Option<(TensorMap<u8, ReadOnly>, usize)>; 2];

impl CpuPreprocessor {
    /// A preprocessor with no taps or scratch rows yet, on
    /// [`default_threads`] threads (a pool made here when more than one).
    pub fn new() -> CpuPreprocessor {
        CpuPreprocessor::default()
    }

    /// A preprocessor whose conversions split the output rows over
    /// `threads` threads (1 to [`MAX_THREADS`]; clamped), a pool made once
    /// here. The output is the same, bit for bit, on any number.
    pub fn with_threads(threads: usize) -> CpuPreprocessor {
        let threads = threads.clamp(1, MAX_THREADS);
        // A pool that cannot start (no threads left) leaves the caller's.
        let pool = pool::Pool::new(threads);
        let threads = if pool.is_some() { threads } else { 1 };
        CpuPreprocessor {
            workers: (0..threads).map(|_| Worker::default()).collect(),
            geometry: None,
            threads,
            pool,
        }
    }

    /// The threads a conversion is split over.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Converts `crop` of `src` (all of it for `None`; a rectangle of `src`,
    /// in its pixels) into batch element `batch_index` of `dst` as `input`
    /// describes, reading YUV with `color`. Letterbox bars get the pad
    /// colour. Returns where the source landed (in `src`'s pixels), to map
    /// model-space boxes back.
    ///
    /// Sampling is the GPU path's: bilinear with half-pixel centres on each
    /// plane (chroma centre-sited, at the same relative position), then
    /// YCbCr → RGB. Edges clamp to `src`'s edges: a crop reads the pixels
    /// just outside it, a view does not.
    ///
    /// `src` is an image tensor of NV12, NV16, YUYV, UYVY, RGB, BGR, RGBA,
    /// BGRA or GREY, any row stride and memory, a view or a batch element
    /// (split NV12M planes too); `dst` has `input.shape()` and
    /// `input.element_type()`, packed, any memory.
    ///
    /// # Errors
    /// [`CpuConvertError::DestinationDType`], [`DestinationShape`](CpuConvertError::DestinationShape),
    /// [`BatchIndex`](CpuConvertError::BatchIndex), [`DestinationNotPacked`](CpuConvertError::DestinationNotPacked)
    /// for a destination that is not the model input's;
    /// [`UnsupportedSource`](CpuConvertError::UnsupportedSource) (an array
    /// tensor, planar RGB), [`BatchedSource`](CpuConvertError::BatchedSource),
    /// [`CropOutOfBounds`](CpuConvertError::CropOutOfBounds) for the source;
    /// [`Model`](CpuConvertError::Model) for an empty crop or a letterbox
    /// below one pixel; [`Tensor`](CpuConvertError::Tensor) for a crop
    /// misaligned on subsampled chroma, or a map the tensor layer refuses.
    pub fn convert(
        &mut self,
        src: &Tensor<u8>,
        crop: Option<Region>,
        color: ColorSpec,
        input: &ModelInput,
        dst: &TensorDyn,
        batch_index: usize,
    ) -> Result<FitPlacement, CpuConvertError> {
        check_destination(input, dst, batch_index)?;
        let placement = src
            .placement()
            .ok_or(CpuConvertError::UnsupportedSource { format: None })?;
        let format = placement.root.format;
        let layout = source::layout(format).ok_or(CpuConvertError::UnsupportedSource {
            format: Some(format),
        })?;
        if placement.frames > 1 {
            return Err(CpuConvertError::BatchedSource {
                frames: placement.frames,
            });
        }
        let (width, height) = (placement.region.width, placement.region.height);
        // The resampler's column offsets are u32 bytes within a row.
        let row_bytes = placement.root.width.saturating_mul(4);
        if u32::try_from(row_bytes).is_err() {
            return Err(CpuConvertError::SourceTooWide {
                width: placement.root.width,
            });
        }
        let crop = crop.unwrap_or(Region::new(0, 0, width, height));
        if !crop.fits(width, height) {
            return Err(CpuConvertError::CropOutOfBounds {
                crop,
                width,
                height,
            });
        }
        let placed = input.place(crop)?;
        let (hs, vs) = format.subsampling();
        if !crop.x.is_multiple_of(hs)
            || !crop.width.is_multiple_of(hs)
            || !crop.y.is_multiple_of(vs)
            || !crop.height.is_multiple_of(vs)
        {
            // The tensor layer's typed error names the misaligned crop.
            src.view(crop)?;
        }
        let mut maps: Maps = [None, None];
        for stream in layout.streams {
            if maps[stream.plane].is_none() {
                maps[stream.plane] = Some(source::plane(src, stream.plane)?);
            }
        }
        self.prepare(layout, (width, height), &placed, input.resample_mode());
        let pad = input.fit_mode().pad();
        let planes = maps.each_ref().map(|m| {
            m.as_ref().map(|(map, stride)| PlaneBytes {
                bytes: &map[..],
                stride: *stride,
            })
        });
        let pixels = if fixed::takes_levels(input) {
            Pixels::Fixed(FixedPixels::new(&layout, color))
        } else {
            Pixels::Float(FloatPixels::new(&layout, color, input))
        };
        let frame = Frame {
            layout,
            planes,
            pixels,
            input,
            target: placed.target,
            pad,
        };
        match dst {
            TensorDyn::U8(t) => self.store(t, &frame, batch_index),
            TensorDyn::I8(t) => self.store(t, &frame, batch_index),
            TensorDyn::F16(t) => self.store(t, &frame, batch_index),
            TensorDyn::F32(t) => self.store(t, &frame, batch_index),
            _ => Err(CpuConvertError::DestinationDType {
                expected: input.element_type(),
                actual: dst.dtype(),
            }),
        }?;
        Ok(placed)
    }

    /// Works out the taps of each stream, unless they are this geometry's.
    fn prepare(
        &mut self,
        layout: Layout,
        size: (usize, usize),
        placed: &FitPlacement,
        resample: Resample,
    ) {
        let s = placed.source;
        let t = placed.target;
        let geometry = Geometry {
            layout,
            size,
            source: [s.x, s.y, s.width, s.height].map(f64::to_bits),
            target: t,
            resample,
        };
        for w in &mut self.workers {
            for rows in &mut w.streams {
                rows.forget();
            }
        }
        if self.geometry == Some(geometry) {
            return;
        }
        for w in &mut self.workers {
            for (stream, rows) in layout.streams.iter().zip(&mut w.streams) {
                let (pw, ph) = stream.size(size);
                rows.columns.fill(
                    (s.x, s.width),
                    t.width,
                    (size.0, pw),
                    (stream.texel, stream.first),
                );
                rows.rows.fill((s.y, s.height), t.height, (size.1, ph));
                rows.prepare(stream, t.width);
                rows.area = (resample == Resample::Area).then(|| {
                    let mut area = rows.area.take().unwrap_or_default();
                    area.columns.fill((s.x, s.width), t.width, (size.0, pw));
                    area.rows.fill((s.y, s.height), t.height, (size.1, ph));
                    area.prepare(stream, t.width);
                    area
                });
            }
        }
        self.geometry = Some(geometry);
    }

    /// The fused pass into batch element `batch_index` of `dst`.
    fn store<T: Element + OutElem + Send>(
        &mut self,
        dst: &Tensor<T>,
        frame: &Frame<'_>,
        batch_index: usize,
    ) -> Result<(), CpuConvertError> {
        let element = dst.batch(batch_index)?;
        let mut map = element.map_write()?;
        let input = frame.input;
        let (w, h) = (input.width(), input.height());
        let e = std::mem::size_of::<T>();
        let packed = match input.layout() {
            ModelLayout::Nchw => [h * w * e, w * e, e],
            ModelLayout::Nhwc => [w * 3 * e, 3 * e, e],
        };
        // `check_destination` checked the tensor; this checks the element's
        // map, which the write below relies on.
        match map.strides_bytes() {
            Some(s) if s == packed => {}
            other => {
                return Err(CpuConvertError::DestinationNotPacked {
                    expected: packed.to_vec(),
                    actual: other.map(<[usize]>::to_vec).unwrap_or_default(),
                })
            }
        }
        let mut bands: [Option<Band<'_, T>>; MAX_THREADS] = std::array::from_fn(|_| None);
        let n = write::bands(&mut map[..3 * w * h], input, self.threads, &mut bands);
        match (&self.pool, n) {
            (Some(pool), 2..) => {
                // Each part's band and worker, taken by the one thread that
                // runs it (the locks are never contended).
                let mut workers = self.workers.iter_mut();
                let parts: [Part<'_, '_, T>; MAX_THREADS] =
                    std::array::from_fn(|i| Mutex::new(bands[i].take().zip(workers.next())));
                pool.run(n, &|i| {
                    let part = parts
                        .get(i)
                        .and_then(|p| p.lock().unwrap_or_else(PoisonError::into_inner).take());
                    if let Some((band, w)) = part {
                        write::write_band(band, frame, &mut w.streams, &mut w.scratch);
                    }
                });
            }
            _ => {
                if let (Some(band), Some(w)) = (bands[0].take(), self.workers.first_mut()) {
                    write::write_band(band, frame, &mut w.streams, &mut w.scratch);
                }
            }
        }
        map.finish()?;
        Ok(())
    }
}

/// `dst` must be the model input's tensor and `batch_index` one of its images
/// ([`ModelInput::check_destination`], its errors as this path's own).
fn check_destination(
    input: &ModelInput,
    dst: &TensorDyn,
    batch_index: usize,
) -> Result<(), CpuConvertError> {
    use super::ModelInputError as E;
    input
        .check_destination(dst, batch_index)
        .map_err(|e| match e {
            E::DestinationDType { expected, actual } => {
                CpuConvertError::DestinationDType { expected, actual }
            }
            E::DestinationShape { expected, actual } => {
                CpuConvertError::DestinationShape { expected, actual }
            }
            E::BatchIndex { index, batch } => CpuConvertError::BatchIndex { index, batch },
            E::DestinationNotPacked { expected, actual } => CpuConvertError::DestinationNotPacked {
                expected: expected.to_vec(),
                actual,
            },
            other => CpuConvertError::Model(other),
        })
}

/// One conversion with a fresh [`CpuPreprocessor`] on this thread alone
/// (no pool is made for one call; its buffers are dropped after it: keep a
/// `CpuPreprocessor` for a stream of frames).
///
/// # Errors
/// As [`CpuPreprocessor::convert`].
pub fn convert_cpu(
    src: &Tensor<u8>,
    crop: Option<Region>,
    color: ColorSpec,
    input: &ModelInput,
    dst: &TensorDyn,
    batch_index: usize,
) -> Result<FitPlacement, CpuConvertError> {
    CpuPreprocessor::with_threads(1).convert(src, crop, color, input, dst, batch_index)
}
