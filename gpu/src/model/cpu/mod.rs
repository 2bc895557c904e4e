//! The CPU path from a frame to a model input: [`CpuPreprocessor`].
//!
//! Three stages, each over the fewest pixels it can:
//! 1. the source pixels the fit samples (its bounding box, clamped to the
//!    crop) to packed 8-bit RGB (`yuvutils-rs`, SIMD);
//! 2. bilinear resampling with half-pixel centres of the fit's (fractional)
//!    source rectangle, one output row at a time in f32, edges clamped to
//!    the crop (`bilinear`: why not `fast_image_resize` is there);
//! 3. normalization, quantization, channel order and layout of each row as
//!    it is made, written straight into the mapped destination.
//!
//! Chroma of 4:2:x sources is the nearest sample (each Cb/Cr pair covers its
//! two or four pixels); every pixel is converted to RGB before resampling.
//! (The GPU path resamples the planes, then converts: on smooth chroma the
//! two agree within the tests' bounds; on chroma edges they may not.)
//!
//! One known difference from [`ColorSpec`]'s equations: in limited range,
//! `yuvutils-rs` 0.8 reads luma below 16 ("footroom", below black) as 16,
//! so such pixels come out up to ~20 steps brighter in a channel that the
//! chroma lifts above 0. Luma in 16..=255 and every chroma value follow the
//! equations within one step.

mod error;
mod fixed;
mod float;
mod rows;
mod source;
mod taps;
mod write;

pub use error::CpuConvertError;

use zerocam_tensor::{Element, ReadOnly, Region, Tensor, TensorDyn, TensorMap};

use super::{Fit, FitPlacement, ModelInput, ModelLayout};
use crate::ColorSpec;
use fixed::FixedPixels;
use float::FloatPixels;
use rows::{PlaneBytes, StreamRows};
use source::Layout;
use write::{Frame, OutElem, Pixels, Scratch};

/// Converts frames to model inputs on the CPU, keeping its taps and scratch
/// rows between calls: after the first frame of a geometry, a conversion
/// allocates nothing.
///
/// ```
/// use zerocam_gpu::{ColorSpec, CpuPreprocessor, Fit, ModelInput};
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
#[derive(Debug, Default)]
pub struct CpuPreprocessor {
    /// Each stream's taps and kept rows.
    streams: [StreamRows; 2],
    /// What the taps were worked out for.
    geometry: Option<Geometry>,
    /// Channel rows for layouts and types not written in place.
    scratch: Scratch,
}

/// Everything the taps depend on.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Geometry {
    layout: Layout,
    size: (usize, usize),
    source: [u64; 4],
    target: Region,
}

/// The mapped tensor planes a conversion reads (one or two).
type Maps = [Option<(TensorMap<u8, ReadOnly>, usize)>; 2];

impl CpuPreprocessor {
    /// A preprocessor with no taps or scratch rows yet.
    pub fn new() -> CpuPreprocessor {
        CpuPreprocessor::default()
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
        if crop.x % hs != 0 || crop.width % hs != 0 || crop.y % vs != 0 || crop.height % vs != 0 {
            // The tensor layer's typed error names the misaligned crop.
            src.view(crop)?;
        }
        let mut maps: Maps = [None, None];
        for stream in layout.streams {
            if maps[stream.plane].is_none() {
                maps[stream.plane] = Some(source::plane(src, stream.plane)?);
            }
        }
        self.prepare(layout, (width, height), &placed);
        let pad = match input.fit_mode() {
            Fit::Letterbox { pad } => pad,
            _ => [0; 3],
        };
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
        let job = Job {
            layout,
            input,
            target: placed.target,
            pad,
            planes,
            pixels: &pixels,
        };
        match dst {
            TensorDyn::U8(t) => self.store(t, &job, batch_index),
            TensorDyn::I8(t) => self.store(t, &job, batch_index),
            TensorDyn::F16(t) => self.store(t, &job, batch_index),
            TensorDyn::F32(t) => self.store(t, &job, batch_index),
            _ => Err(CpuConvertError::DestinationDType {
                expected: input.element_type(),
                actual: dst.dtype(),
            }),
        }?;
        Ok(placed)
    }

    /// Works out the taps of each stream, unless they are this geometry's.
    fn prepare(&mut self, layout: Layout, size: (usize, usize), placed: &FitPlacement) {
        let s = placed.source;
        let t = placed.target;
        let geometry = Geometry {
            layout,
            size,
            source: [s.x, s.y, s.width, s.height].map(f64::to_bits),
            target: t,
        };
        for rows in &mut self.streams {
            rows.forget();
        }
        if self.geometry == Some(geometry) {
            return;
        }
        for (stream, rows) in layout.streams.iter().zip(&mut self.streams) {
            let (pw, ph) = stream.size(size);
            rows.columns.fill(
                (s.x, s.width),
                t.width,
                (size.0, pw),
                (stream.texel, stream.first),
            );
            rows.rows.fill((s.y, s.height), t.height, (size.1, ph));
            rows.prepare(stream, t.width);
        }
        self.geometry = Some(geometry);
    }

    /// The fused pass into batch element `batch_index` of `dst`.
    fn store<T: Element + OutElem>(
        &mut self,
        dst: &Tensor<T>,
        job: &Job<'_>,
        batch_index: usize,
    ) -> Result<(), CpuConvertError> {
        let element = dst.batch(batch_index)?;
        let mut map = element.map_write()?;
        let input = job.input;
        let (w, h) = (input.width(), input.height());
        let e = std::mem::size_of::<T>();
        let packed = match input.layout() {
            ModelLayout::Nchw => [h * w * e, w * e, e],
            ModelLayout::Nhwc => [w * 3 * e, 3 * e, e],
        };
        match map.strides_bytes() {
            Some(s) if s == packed => {}
            other => {
                return Err(CpuConvertError::DestinationNotPacked {
                    strides: other.map(<[usize]>::to_vec).unwrap_or_default(),
                })
            }
        }
        let frame = Frame {
            layout: job.layout,
            planes: job.planes,
            pixels: job.pixels,
            size: (w, h),
            target: job.target,
            model_layout: input.layout(),
            channels: input.channels(),
            pad: input.pad_values(job.pad).map(T::from_value),
        };
        write::write(
            &mut map[..3 * w * h],
            &frame,
            &mut self.streams,
            &mut self.scratch,
        );
        map.finish()?;
        Ok(())
    }
}

/// What one conversion reads and how.
struct Job<'a> {
    layout: Layout,
    input: &'a ModelInput,
    target: Region,
    pad: [u8; 3],
    planes: [Option<PlaneBytes<'a>>; 2],
    pixels: &'a Pixels,
}

/// `dst` must be the model input's tensor and `batch_index` one of its images.
fn check_destination(
    input: &ModelInput,
    dst: &TensorDyn,
    batch_index: usize,
) -> Result<(), CpuConvertError> {
    if dst.dtype() != input.element_type() {
        return Err(CpuConvertError::DestinationDType {
            expected: input.element_type(),
            actual: dst.dtype(),
        });
    }
    if dst.shape() != input.shape() {
        return Err(CpuConvertError::DestinationShape {
            expected: input.shape(),
            actual: dst.shape().to_vec(),
        });
    }
    if batch_index >= input.batch_size() {
        return Err(CpuConvertError::BatchIndex {
            index: batch_index,
            batch: input.batch_size(),
        });
    }
    Ok(())
}

/// One conversion with a fresh [`CpuPreprocessor`] (its buffers are dropped
/// after the call; keep a `CpuPreprocessor` for a stream of frames).
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
    CpuPreprocessor::new().convert(src, crop, color, input, dst, batch_index)
}
