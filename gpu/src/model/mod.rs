//! The GPU half of model inputs: [`ModelWrite`], what the GL thread writes
//! into one batch element of a model's input tensor, worked out by the
//! caller (zerocam-preprocess turns its `ModelInput` and fit into one); the
//! draw plan of that write ([`draw_plan`]) and
//! [`Gpu::write_model`](crate::Gpu::write_model) ([`convert`]).
//!
//! The GL crate knows no model description of its own: the layout, the
//! affine per channel, the pad and the sampled rectangle arrive worked out,
//! so the CPU path and this one share one description in zerocam-preprocess.

#[cfg(feature = "gl")]
mod convert;
pub(crate) mod draw_plan;

use zerocam_tensor::{DType, Region};

/// The element types a model write renders: `u8`, `i8`, `f16`, `f32`.
pub const WRITE_DTYPES: [DType; 4] = [DType::U8, DType::I8, DType::F16, DType::F32];

/// How the three channels of a model-input tensor are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelLayout {
    /// One plane per channel: `[batch, 3, height, width]` (NCHW).
    Planes,
    /// Channels interleaved in each pixel: `[batch, height, width, 3]` (NHWC).
    Interleaved,
}

/// A rectangle of source pixels with fractional edges: the part of a frame a
/// model write samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleRect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// How a model write resamples the source onto the model pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ModelResample {
    /// One bilinear sample (half-pixel centres) at each model pixel's
    /// centre, filtered in float from four texel fetches.
    #[default]
    Bilinear,
    /// Area averaging: on an axis a plane is shrunk along, each model pixel
    /// is the mean of the plane's texels its footprint covers, each weighted
    /// by the part covered; on an axis it is not shrunk along, the bilinear
    /// tap at the footprint's centre. Output `o` over `start..start + len`
    /// source pixels covers `[(start + o * step) * n / image,
    /// (start + (o + 1) * step) * n / image)` of a plane `n` texels across
    /// (`step = len / outputs`), as zerocam-preprocess's CPU path does. The
    /// taps are taken in pairs, each pair one bilinear sample (filtered in
    /// float) at the offset that weighs its two texels as the footprint
    /// does: a footprint of `kx`x`ky` texels costs `ceil(kx / 2) * ceil(ky
    /// / 2)` samples, at most [`AREA_MAX_SAMPLES`] across and down, within
    /// the CPU path's rounding of exact weights.
    Area,
}

/// The most bilinear samples an [`ModelResample::Area`] footprint takes
/// across (and down): the sampling pass's loop bound. A footprint of up to
/// `2 * AREA_MAX_SAMPLES - 1` texels fits (a downscale of up to 31x on an
/// axis); a wider one is refused ([`GpuError::AreaFootprint`](crate::GpuError::AreaFootprint)).
pub const AREA_MAX_SAMPLES: usize = 16;

/// One model-input write: what [`Gpu::write_model`](crate::Gpu::write_model)
/// renders into a batch element of a tensor of [`shape`](ModelWrite::shape)
/// and element type `dtype`.
///
/// Each output value is `(matrix * rgb)[c] + bias[c]` for the RGB of the
/// source in 0..1 resampled as `resample` says (bilinear with half-pixel
/// centres, or area averages), rounded and clamped to `range` for
/// `u8`/`i8`; model pixels outside `target` hold `pad`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelWrite {
    /// Model width and height, in pixels.
    pub size: (usize, usize),
    /// Images in the tensor (its first dimension).
    pub batch: usize,
    /// Planes (NCHW) or interleaved (NHWC).
    pub layout: ChannelLayout,
    /// The element type: one of [`WRITE_DTYPES`].
    pub dtype: DType,
    /// The 3x3 matrix from RGB (0..1) to output channels, column major:
    /// channel order (RGB, BGR) and scale folded in.
    pub matrix: [f32; 9],
    /// Added to each output channel.
    pub bias: [f32; 3],
    /// The values of the model pixels outside `target` (letterbox bars), in
    /// output channel order, final.
    pub pad: [f32; 3],
    /// Integer outputs are rounded and clamped to this.
    pub range: (f32, f32),
    /// The sampled rectangle, in pixels of the source tensor (relative to
    /// it, as a crop is).
    pub source: SampleRect,
    /// The model pixels it fills; the rest is pad.
    pub target: Region,
    /// Bilinear (one sample a model pixel) or area averages.
    pub resample: ModelResample,
}

impl ModelWrite {
    /// The tensor shape the write targets: `[batch, 3, h, w]` or `[batch, h, w, 3]`.
    pub fn shape(&self) -> [usize; 4] {
        let (w, h) = self.size;
        match self.layout {
            ChannelLayout::Planes => [self.batch, 3, h, w],
            ChannelLayout::Interleaved => [self.batch, h, w, 3],
        }
    }
}
