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

mod bilinear;
mod error;
mod rgb;
mod write;

pub use error::CpuConvertError;

use zerocam_tensor::{Element, Region, Tensor, TensorDyn};

use super::{Fit, FitPlacement, ModelInput};
use crate::ColorSpec;
use bilinear::Resampler;
use write::{OutElem, Tables};

/// Converts frames to model inputs on the CPU, keeping its scratch buffers
/// between calls: after the first frame of a size, a conversion allocates no
/// pixel buffers.
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
pub struct CpuPreprocessor {
    rgb: Vec<u8>,
    tail: Vec<u8>,
    resampler: Resampler,
}

impl Default for CpuPreprocessor {
    fn default() -> Self {
        CpuPreprocessor::new()
    }
}

impl std::fmt::Debug for CpuPreprocessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuPreprocessor")
            .field("rgb_capacity", &self.rgb.capacity())
            .field("resampler", &self.resampler)
            .finish()
    }
}

/// The source pixels bilinear sampling of `p` reads: its rectangle grown by
/// one pixel, clamped to `crop` and aligned outwards to the chroma
/// subsampling `(hs, vs)` (`crop` itself is aligned).
fn bounding_box(p: &FitPlacement, crop: Region, (hs, vs): (usize, usize)) -> Region {
    let s = &p.source;
    let span = |start: f64, len: f64, lo: usize, n: usize, sub: usize| {
        let a = ((start.floor() - 1.0).max(lo as f64) as usize).max(lo);
        let b = ((start + len).ceil() + 1.0).min((lo + n) as f64) as usize;
        let a = lo + (a - lo) / sub * sub;
        let b = (lo + (b - lo).div_ceil(sub) * sub).min(lo + n);
        (a, b - a)
    };
    let (x, w) = span(s.x, s.width, crop.x, crop.width, hs);
    let (y, h) = span(s.y, s.height, crop.y, crop.height, vs);
    Region::new(x, y, w, h)
}

impl CpuPreprocessor {
    /// A preprocessor with empty scratch buffers.
    pub fn new() -> CpuPreprocessor {
        CpuPreprocessor {
            rgb: Vec::new(),
            tail: Vec::new(),
            resampler: Resampler::default(),
        }
    }

    /// Converts `crop` of `src` (all of it for `None`; a rectangle of `src`,
    /// in its pixels) into batch element `batch_index` of `dst` as `input`
    /// describes, reading YUV with `color`. Letterbox bars get the pad
    /// colour. Returns where the source landed (in `src`'s pixels), to map
    /// model-space boxes back.
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
        if !rgb::reads(format) {
            return Err(CpuConvertError::UnsupportedSource {
                format: Some(format),
            });
        }
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
        let bbox = bounding_box(&placed, crop, (hs, vs));
        let viewed;
        let bbox_src = if bbox == Region::new(0, 0, width, height) {
            src
        } else {
            viewed = src.view(bbox)?;
            &viewed
        };
        rgb::to_rgb(
            bbox_src,
            (bbox.width, bbox.height),
            format,
            color,
            &mut self.rgb,
            &mut self.tail,
        )?;
        self.resampler.prepare(&placed, bbox);
        let pad = match input.fit_mode() {
            Fit::Letterbox { pad } => pad,
            _ => [0; 3],
        };
        match dst {
            TensorDyn::U8(t) => self.store(t, input, &placed, pad, batch_index),
            TensorDyn::I8(t) => self.store(t, input, &placed, pad, batch_index),
            TensorDyn::F16(t) => self.store(t, input, &placed, pad, batch_index),
            TensorDyn::F32(t) => self.store(t, input, &placed, pad, batch_index),
            _ => Err(CpuConvertError::DestinationDType {
                expected: input.element_type(),
                actual: dst.dtype(),
            }),
        }?;
        Ok(placed)
    }

    /// Stage 3 into batch element `batch_index` of `dst`.
    fn store<T: Element + OutElem>(
        &mut self,
        dst: &Tensor<T>,
        input: &ModelInput,
        placed: &FitPlacement,
        pad: [u8; 3],
        batch_index: usize,
    ) -> Result<(), CpuConvertError> {
        let element = dst.batch(batch_index)?;
        let mut map = element.map_write()?;
        let (w, h) = (input.width(), input.height());
        let e = std::mem::size_of::<T>();
        let packed = match input.layout() {
            super::ModelLayout::Nchw => [h * w * e, w * e, e],
            super::ModelLayout::Nhwc => [w * 3 * e, 3 * e, e],
        };
        match map.strides_bytes() {
            Some(s) if s == packed => {}
            other => {
                return Err(CpuConvertError::DestinationNotPacked {
                    strides: other.map(<[usize]>::to_vec).unwrap_or_default(),
                })
            }
        }
        let tables = Tables::<T>::new(input, pad);
        write::write(
            &mut map[..3 * w * h],
            input.layout(),
            (w, h),
            placed.target,
            (&mut self.resampler, &self.rgb),
            &tables,
        );
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
            E::DestinationNotPacked { actual, .. } => {
                CpuConvertError::DestinationNotPacked { strides: actual }
            }
            other => CpuConvertError::Model(other),
        })
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
