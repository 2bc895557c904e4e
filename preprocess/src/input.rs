//! [`ModelInput`]: what a model takes as its input tensor, checked once and
//! shared by every path that makes it (the GPU, the CPU, Python, C).

use zerocam_tensor::DType;

use super::error::ModelInputError;
use super::fit::Fit;

/// Where the channel axis lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ModelLayout {
    /// `[N, C, H, W]`: one plane per channel (PyTorch, ONNX).
    #[default]
    Nchw,
    /// `[N, H, W, C]`: channels interleaved (TFLite, most NPUs).
    Nhwc,
}

/// The order of the three colour channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ChannelOrder {
    /// Red, green, blue.
    #[default]
    Rgb,
    /// Blue, green, red (OpenCV-trained models, Caffe).
    Bgr,
}

/// How the source is resampled to the model's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Resample {
    /// Bilinear with half-pixel centres: each output pixel blends the 2x2
    /// source pixels around its centre. What OpenCV's `INTER_LINEAR`, GPU
    /// texture sampling and MediaPipe's GPU graphs do; fast, but on a large
    /// downscale it reads 4 of the many pixels behind an output pixel, so
    /// fine detail aliases.
    #[default]
    Bilinear,
    /// Area averaging (antialiased): on an axis the source is shrunk along,
    /// each output pixel is the mean of every source pixel it covers,
    /// weighted by how much of each it covers — OpenCV's `INTER_AREA`,
    /// PIL's `BOX`, and close to PIL's `BILINEAR` and torchvision's
    /// `antialias=True`, which many training pipelines use. On an axis that
    /// is enlarged it is bilinear (as `INTER_AREA` is).
    Area,
}

/// Integer quantization of the model's input: `q = round(x / scale) + zero_point`,
/// clamped to the element type, where `x` is the real value the model expects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantization {
    /// The real value of one integer step.
    pub scale: f32,
    /// The integer that stands for 0.0.
    pub zero_point: i32,
}

/// A model's input tensor: size, layout, element type, channel order,
/// normalization and how a frame is fitted into it.
///
/// The value a model sees for channel `c` of a pixel `p` (0..=255, after the
/// frame's YUV → RGB conversion and bilinear resampling with half-pixel
/// centres) is:
///
/// - the real value `x = (p / 255 - mean[c]) / std[c]` with [`mean_std`](ModelInput::mean_std),
///   else `x = p / 255`;
/// - for `f32` and `f16`: `x`;
/// - for `u8` and `i8` with [`quantization`](ModelInput::quantization):
///   `round(x / scale) + zero_point`, clamped; without it, `p` for `u8` and
///   `p - 128` for `i8` (the quantization `1/255, 0` and `1/255, -128` of the
///   `0..1` range that uint8 and int8 image models take).
///
/// [`affine`](ModelInput::affine) gives that as one multiply-add per channel.
///
/// ```
/// use zerocam_preprocess::{Fit, ModelInput, ModelLayout};
/// use zerocam_tensor::DType;
/// // A torchvision classifier: 1x3x224x224 f32, ImageNet mean/std, centre crop.
/// let input = ModelInput::new(224, 224)?
///     .dtype(DType::F32)?
///     .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
///     .fit(Fit::Crop);
/// assert_eq!(input.shape(), [1, 3, 224, 224]);
/// assert_eq!(input.layout(), ModelLayout::Nchw);
/// # Ok::<(), zerocam_preprocess::ModelInputError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInput {
    width: usize,
    height: usize,
    batch: usize,
    layout: ModelLayout,
    dtype: DType,
    channels: ChannelOrder,
    mean_std: Option<([f32; 3], [f32; 3])>,
    quantization: Option<Quantization>,
    fit: Fit,
    resample: Resample,
}

/// The element types a model input can have.
pub const MODEL_DTYPES: [DType; 4] = [DType::U8, DType::I8, DType::F16, DType::F32];

impl ModelInput {
    /// A `width`x`height` input, batch 1, NCHW, `f32`, RGB, values `p / 255`,
    /// stretched to fit.
    ///
    /// # Errors
    /// [`ModelInputError::ZeroSize`] when either side is 0.
    pub fn new(width: usize, height: usize) -> Result<ModelInput, ModelInputError> {
        if width == 0 || height == 0 {
            return Err(ModelInputError::ZeroSize { width, height });
        }
        Ok(ModelInput {
            width,
            height,
            batch: 1,
            layout: ModelLayout::Nchw,
            dtype: DType::F32,
            channels: ChannelOrder::Rgb,
            mean_std: None,
            quantization: None,
            fit: Fit::Stretch,
            resample: Resample::Bilinear,
        })
    }

    /// `n` images per tensor (the leading dimension).
    ///
    /// # Errors
    /// [`ModelInputError::ZeroBatch`] for 0.
    pub fn batch(mut self, n: usize) -> Result<ModelInput, ModelInputError> {
        if n == 0 {
            return Err(ModelInputError::ZeroBatch);
        }
        self.batch = n;
        Ok(self)
    }

    /// The layout.
    pub fn with_layout(mut self, layout: ModelLayout) -> ModelInput {
        self.layout = layout;
        self
    }

    /// The element type: `u8`, `i8`, `f16` or `f32`.
    ///
    /// # Errors
    /// [`ModelInputError::UnsupportedDType`] for any other; a quantization
    /// already set with a float type ([`ModelInputError::QuantizedFloat`]).
    pub fn dtype(mut self, dtype: DType) -> Result<ModelInput, ModelInputError> {
        if !MODEL_DTYPES.contains(&dtype) {
            return Err(ModelInputError::UnsupportedDType { dtype });
        }
        self.dtype = dtype;
        self.check_values()?;
        Ok(self)
    }

    /// The channel order.
    pub fn with_channels(mut self, channels: ChannelOrder) -> ModelInput {
        self.channels = channels;
        self
    }

    /// Per-channel mean and standard deviation, applied to `p / 255` (the
    /// torchvision convention), in RGB order whatever the channel order.
    ///
    /// # Errors
    /// [`ModelInputError::BadStd`] for a standard deviation that is 0, negative
    /// or not finite, [`ModelInputError::BadMean`] for a mean that is not finite.
    pub fn mean_std(
        mut self,
        mean: [f32; 3],
        std: [f32; 3],
    ) -> Result<ModelInput, ModelInputError> {
        if let Some(c) = mean.iter().position(|m| !m.is_finite()) {
            return Err(ModelInputError::BadMean {
                channel: c,
                mean: mean[c],
            });
        }
        if let Some(c) = std.iter().position(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(ModelInputError::BadStd {
                channel: c,
                std: std[c],
            });
        }
        self.mean_std = Some((mean, std));
        self.check_values()?;
        Ok(self)
    }

    /// Quantization of an integer input (`u8` or `i8`).
    ///
    /// # Errors
    /// [`ModelInputError::BadScale`] for a scale that is 0, negative or not
    /// finite; [`ModelInputError::QuantizedFloat`] on a float element type;
    /// [`ModelInputError::ZeroPointOutOfRange`] for a zero point the element
    /// type cannot hold.
    pub fn quantization(
        mut self,
        scale: f32,
        zero_point: i32,
    ) -> Result<ModelInput, ModelInputError> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(ModelInputError::BadScale { scale });
        }
        self.quantization = Some(Quantization { scale, zero_point });
        self.check_values()?;
        Ok(self)
    }

    /// How a frame is fitted into the input.
    pub fn fit(mut self, fit: Fit) -> ModelInput {
        self.fit = fit;
        self
    }

    /// How the source is resampled to the input's size (default
    /// [`Resample::Bilinear`]): [`Resample::Area`] to match a model trained
    /// on PIL- or `INTER_AREA`-resized images.
    pub fn resample(mut self, resample: Resample) -> ModelInput {
        self.resample = resample;
        self
    }

    /// How the source is resampled.
    pub fn resample_mode(&self) -> Resample {
        self.resample
    }

    /// Quantization only makes sense for integer outputs; mean/std on an
    /// integer output needs the quantization that maps the real values back.
    fn check_values(&self) -> Result<(), ModelInputError> {
        let float = matches!(self.dtype, DType::F32 | DType::F16);
        if float && self.quantization.is_some() {
            return Err(ModelInputError::QuantizedFloat { dtype: self.dtype });
        }
        if let Some(q) = self.quantization {
            let (min, max) = match self.dtype {
                DType::I8 => (-128, 127),
                _ => (0, 255),
            };
            if !(min..=max).contains(&q.zero_point) {
                return Err(ModelInputError::ZeroPointOutOfRange {
                    zero_point: q.zero_point,
                    dtype: self.dtype,
                    min,
                    max,
                });
            }
        }
        Ok(())
    }

    /// Width in pixels.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Images per tensor.
    pub fn batch_size(&self) -> usize {
        self.batch
    }

    /// The layout.
    pub fn layout(&self) -> ModelLayout {
        self.layout
    }

    /// The element type.
    pub fn element_type(&self) -> DType {
        self.dtype
    }

    /// The channel order.
    pub fn channels(&self) -> ChannelOrder {
        self.channels
    }

    /// Mean and standard deviation, if set (RGB order).
    pub fn normalization(&self) -> Option<([f32; 3], [f32; 3])> {
        self.mean_std
    }

    /// The quantization, if set.
    pub fn quantization_params(&self) -> Option<Quantization> {
        self.quantization
    }

    /// The fit.
    pub fn fit_mode(&self) -> Fit {
        self.fit
    }

    /// The tensor's shape: `[N, 3, H, W]` or `[N, H, W, 3]`.
    pub fn shape(&self) -> [usize; 4] {
        match self.layout {
            ModelLayout::Nchw => [self.batch, 3, self.height, self.width],
            ModelLayout::Nhwc => [self.batch, self.height, self.width, 3],
        }
    }

    /// The value of each output channel as `p * gain + bias` for a pixel value
    /// `p` in 0..=255 (before rounding and clamping for integer types), in
    /// output channel order (BGR swaps red and blue).
    pub fn affine(&self) -> [(f32, f32); 3] {
        let mut out = [(0.0, 0.0); 3];
        for (rgb, slot) in out.iter_mut().enumerate() {
            // x = p * a + b
            let (a, b) = match self.mean_std {
                Some((mean, std)) => (1.0 / (255.0 * std[rgb]), -mean[rgb] / std[rgb]),
                None => (1.0 / 255.0, 0.0),
            };
            *slot = match (self.dtype, self.quantization) {
                (DType::F32 | DType::F16, _) => (a, b),
                (_, Some(q)) => (a / q.scale, b / q.scale + q.zero_point as f32),
                (DType::I8, None) => (a * 255.0, b * 255.0 - 128.0),
                (_, None) => (a * 255.0, b * 255.0),
            };
        }
        if self.channels == ChannelOrder::Bgr {
            out.swap(0, 2);
        }
        out
    }

    /// The value range of the element type (`f32::MIN..=f32::MAX` for floats):
    /// integer outputs are rounded to nearest and clamped to it.
    pub fn value_range(&self) -> (f32, f32) {
        match self.dtype {
            DType::U8 => (0.0, 255.0),
            DType::I8 => (-128.0, 127.0),
            DType::F16 => (-65504.0, 65504.0),
            _ => (f32::MIN, f32::MAX),
        }
    }

    /// The output value of each channel for the pad colour `rgb`, in output
    /// channel order (what a letterbox's bars hold).
    pub fn pad_values(&self, rgb: [u8; 3]) -> [f32; 3] {
        let rgb = match self.channels {
            ChannelOrder::Rgb => rgb,
            ChannelOrder::Bgr => [rgb[2], rgb[1], rgb[0]],
        };
        let (lo, hi) = self.value_range();
        let integer = matches!(self.dtype, DType::U8 | DType::I8);
        let mut out = [0.0; 3];
        for ((o, (g, b)), p) in out.iter_mut().zip(self.affine()).zip(rgb) {
            let v = f32::from(p) * g + b;
            *o = if integer { v.round().clamp(lo, hi) } else { v };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_matches_the_written_rule() {
        let i = ModelInput::new(4, 4).unwrap();
        assert_eq!(i.affine()[0], (1.0 / 255.0, 0.0));
        let u8_plain = i.clone().dtype(DType::U8).unwrap();
        assert_eq!(u8_plain.affine()[1], (1.0, 0.0));
        let i8_plain = i.clone().dtype(DType::I8).unwrap();
        assert_eq!(i8_plain.pad_values([0, 128, 255]), [-128.0, 0.0, 127.0]);
        let torch = i
            .clone()
            .mean_std([0.5, 0.5, 0.5], [0.25, 0.5, 1.0])
            .unwrap();
        let [(g, b), _, (g2, b2)] = torch.affine();
        assert!((255.0 * g + b - 2.0).abs() < 1e-6, "(1 - 0.5) / 0.25");
        assert!((g2 * 0.0 + b2 + 0.5).abs() < 1e-6, "(0 - 0.5) / 1");
        // MobileNet uint8: scale 1/128, zero point 128 on x in -1..1.
        let q = i
            .dtype(DType::U8)
            .unwrap()
            .mean_std([0.5; 3], [0.5; 3])
            .unwrap()
            .quantization(1.0 / 128.0, 128)
            .unwrap();
        // 128 → x = 1/255 → 128.5 → 129 (round half away from zero); 255 → 256, clamped.
        assert_eq!(q.pad_values([0, 128, 255]), [0.0, 129.0, 255.0]);
    }

    #[test]
    fn bgr_swaps_red_and_blue() {
        let i = ModelInput::new(2, 2)
            .unwrap()
            .dtype(DType::U8)
            .unwrap()
            .with_channels(ChannelOrder::Bgr);
        assert_eq!(i.pad_values([10, 20, 30]), [30.0, 20.0, 10.0]);
    }

    #[test]
    fn bad_values_are_named() {
        assert!(matches!(
            ModelInput::new(0, 3),
            Err(ModelInputError::ZeroSize {
                width: 0,
                height: 3
            })
        ));
        let i = ModelInput::new(8, 8).unwrap();
        assert!(matches!(
            i.clone().mean_std([0.0; 3], [1.0, 0.0, 1.0]),
            Err(ModelInputError::BadStd { channel: 1, .. })
        ));
        assert!(matches!(
            i.clone().mean_std([f32::NAN, 0.0, 0.0], [1.0; 3]),
            Err(ModelInputError::BadMean { channel: 0, .. })
        ));
        assert!(matches!(
            i.clone().quantization(0.5, 0),
            Err(ModelInputError::QuantizedFloat { dtype: DType::F32 })
        ));
        assert!(matches!(
            i.clone().dtype(DType::U8).unwrap().quantization(0.0, 0),
            Err(ModelInputError::BadScale { .. })
        ));
        assert!(matches!(
            i.clone().dtype(DType::U8).unwrap().quantization(0.5, 256),
            Err(ModelInputError::ZeroPointOutOfRange {
                zero_point: 256,
                dtype: DType::U8,
                min: 0,
                max: 255
            })
        ));
        assert!(matches!(
            i.clone().dtype(DType::I8).unwrap().quantization(0.5, -129),
            Err(ModelInputError::ZeroPointOutOfRange {
                zero_point: -129,
                min: -128,
                max: 127,
                ..
            })
        ));
        assert!(i
            .clone()
            .dtype(DType::I8)
            .unwrap()
            .quantization(0.5, -128)
            .is_ok());
        assert!(matches!(
            i.clone().dtype(DType::U16),
            Err(ModelInputError::UnsupportedDType { dtype: DType::U16 })
        ));
        assert!(matches!(i.batch(0), Err(ModelInputError::ZeroBatch)));
    }
}
