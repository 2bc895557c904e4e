//! The GPU backend (feature `gpu`): a [`ModelInput`] and the placement of
//! its fit as zerocam-gpu's [`ModelWrite`], rendered by the GL thread
//! ([`Gpu::write_model`]).
//!
//! The checks come first, with the description's own errors: the source
//! and crop (as [`Gpu::convert`] checks them), the fit
//! ([`ModelInput::place`]), the destination
//! ([`ModelInput::check_destination`]). Nothing here allocates.

use zerocam_gpu::{ChannelLayout, ConvertOptions, Gpu, ModelResample, ModelWrite, SampleRect};
use zerocam_tensor::{Element, Tensor, TensorDyn};

use crate::{ChannelOrder, Fit, FitPlacement, ModelInput, ModelLayout, PreprocessError, Resample};

/// Converts `src` (any source [`Gpu::convert`] takes, with `options`' crop,
/// colour spec and import policy) into batch element `batch_index` of
/// `dst`, a tensor of `input.shape()` and `input.element_type()`, as
/// [`ModelInput`] says: fitted by its [`Fit`] (letterbox bars hold its pad
/// values), resampled as its [`Resample`] says (bilinear with half-pixel
/// centres, or area averages: each model pixel the mean of the texels its
/// footprint covers in each plane, as the CPU path does, taken as pairs of
/// texels each one hardware bilinear sample), then `p * gain + bias` per
/// channel ([`ModelInput::affine`], channel order
/// included), rounded and clamped for `u8`/`i8`.
///
/// `dst` may live in memory, shared memory, a PBO ([`Gpu::pbo_tensor`],
/// which stays on the GPU) or a dma-buf (rendered in place where EGL
/// imports it); see [`Gpu::write_model`].
///
/// Returns where the source landed, in the source tensor's pixels: the
/// letterbox's scale and offsets and the way back from model boxes.
///
/// ```no_run
/// use zerocam_gpu::{ConvertOptions, Gpu};
/// use zerocam_preprocess::{gpu::convert_model, Fit, ModelInput};
/// use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};
/// let gpu = Gpu::new()?;
/// let frame = Tensor::<u8>::image(1280, 720, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
/// let input = ModelInput::new(640, 640)?
///     .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
///     .fit(Fit::Crop);
/// let tensor = gpu.pbo_tensor::<f32>(&input.shape())?; // 1x3x640x640
/// let placed = convert_model(&gpu, &frame, &tensor, &input, &ConvertOptions::default(), 0)?;
/// assert_eq!(placed.source.x, 280.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`PreprocessError::Model`] with the error of
/// [`ModelInput::check_destination`] for a destination that is not what
/// `input` describes (element type, shape, batch index, packing), or with
/// [`LetterboxTooSmall`](crate::ModelInputError::LetterboxTooSmall);
/// [`PreprocessError::Gpu`] with the errors of [`Gpu::write_model`]
/// (among them [`GpuError::AreaFootprint`](zerocam_gpu::GpuError::AreaFootprint)
/// for a [`Resample::Area`] downscale of more than 31x on an axis) and
/// [`Gpu::convert`] (the source, a destination whose elements do not start
/// on a multiple of their size, the GPU).
pub fn convert_model<T: Element>(
    gpu: &Gpu,
    src: &Tensor<u8>,
    dst: &Tensor<T>,
    input: &ModelInput,
    options: &ConvertOptions,
    batch_index: usize,
) -> Result<FitPlacement, PreprocessError> {
    let placement = place(src, input, options)?;
    input.check_tensor(dst, batch_index)?;
    let write = model_write(input, &placement);
    gpu.write_model(src, dst, &write, options, batch_index)?;
    Ok(placement)
}

/// [`convert_model`] into a [`TensorDyn`] (its element type must be the
/// input's).
///
/// # Errors
/// As [`convert_model`].
pub fn convert_model_dyn(
    gpu: &Gpu,
    src: &Tensor<u8>,
    dst: &TensorDyn,
    input: &ModelInput,
    options: &ConvertOptions,
    batch_index: usize,
) -> Result<FitPlacement, PreprocessError> {
    let placement = place(src, input, options)?;
    input.check_destination(dst, batch_index)?;
    let write = model_write(input, &placement);
    gpu.write_model_dyn(src, dst, &write, options, batch_index)?;
    Ok(placement)
}

/// Where `src` (its crop, or all of it) lands in `input`, in the source
/// tensor's pixels; the source and crop checked first.
fn place(
    src: &Tensor<u8>,
    input: &ModelInput,
    options: &ConvertOptions,
) -> Result<FitPlacement, PreprocessError> {
    let relative = zerocam_gpu::source_region(src, options.crop)?;
    Ok(input.place(relative)?)
}

/// The GL crate's description of one write of `input`, placed at `placement`.
pub(crate) fn model_write(input: &ModelInput, placement: &FitPlacement) -> ModelWrite {
    let (matrix, bias) = matrix(input);
    let pad = match input.fit_mode() {
        Fit::Letterbox { pad } => input.pad_values(pad),
        Fit::Stretch | Fit::Crop => [0.0; 3],
    };
    let s = placement.source;
    ModelWrite {
        size: (input.width(), input.height()),
        batch: input.batch_size(),
        layout: match input.layout() {
            ModelLayout::Nchw => ChannelLayout::Planes,
            ModelLayout::Nhwc => ChannelLayout::Interleaved,
        },
        dtype: input.element_type(),
        matrix,
        bias,
        pad,
        range: input.value_range(),
        source: SampleRect {
            x: s.x,
            y: s.y,
            width: s.width,
            height: s.height,
        },
        target: placement.target,
        resample: match input.resample_mode() {
            Resample::Bilinear => ModelResample::Bilinear,
            Resample::Area => ModelResample::Area,
        },
    }
}

/// The shader's affine: [`ModelInput::affine`] per output channel, reading
/// the RGB channel the channel order says, scaled for `rgb` in 0..1; column
/// major.
fn matrix(input: &ModelInput) -> ([f32; 9], [f32; 3]) {
    let affine = input.affine();
    let mut m = [0.0; 9];
    let mut bias = [0.0; 3];
    for (c, (gain, b)) in affine.into_iter().enumerate() {
        let rgb = match input.channels() {
            ChannelOrder::Rgb => c,
            ChannelOrder::Bgr => 2 - c,
        };
        m[rgb * 3 + c] = gain * 255.0; // column `rgb`, row `c`
        bias[c] = b;
    }
    (m, bias)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use zerocam_tensor::{DType, ImageLayout, PixelFormat, Region, TensorMemory};

    fn nv12(w: usize, h: usize) -> Tensor<u8> {
        Tensor::builder_image(ImageLayout::new(w, h, PixelFormat::Nv12))
            .memory(TensorMemory::Mem)
            .build()
            .unwrap()
    }

    #[test]
    fn the_placement_is_in_source_pixels() {
        let frame = nv12(1280, 720);
        let view = frame.view(Region::new(640, 0, 640, 720)).unwrap();
        let input = ModelInput::new(64, 64)
            .unwrap()
            .fit(Fit::Letterbox { pad: [114; 3] });
        let p = place(&view, &input, &ConvertOptions::default()).unwrap();
        assert_eq!(p.source.x, 0.0);
        let w = model_write(&input, &p);
        assert_eq!((w.source.x, w.target), (0.0, p.target));
        assert!((w.pad[0] - 114.0 / 255.0).abs() < 1e-6);
        assert_eq!(w.shape(), input.shape());
    }

    /// The checks and the write's description run on the caller's thread
    /// every frame: no heap allocation.
    #[test]
    fn placing_and_describing_allocate_nothing() {
        let frame = nv12(1280, 720);
        let view = frame.view(Region::new(64, 32, 640, 480)).unwrap();
        let input = ModelInput::new(63, 37)
            .unwrap()
            .dtype(DType::U8)
            .unwrap()
            .batch(3)
            .unwrap()
            .fit(Fit::Letterbox { pad: [114; 3] });
        let dst = Tensor::<u8>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        let opts = ConvertOptions::default();
        let (write, allocations) = crate::test_alloc::allocations_during(|| {
            let p = place(&view, &input, &opts).unwrap();
            input.check_tensor(&dst, 1).unwrap();
            model_write(&input, &p)
        });
        assert_eq!(write.batch, 3);
        assert_eq!(allocations, 0);
    }

    #[test]
    fn bgr_reads_blue_into_channel_zero() {
        let input = ModelInput::new(4, 4)
            .unwrap()
            .with_channels(ChannelOrder::Bgr);
        let (m, _) = matrix(&input);
        assert_eq!(m[2 * 3], 1.0, "column blue, row 0");
        assert_eq!(m[0], 0.0);
    }
}
