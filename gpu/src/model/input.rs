//! [`ModelInput`]: what a model takes as its input tensor, checked once and
//! shared by every path that makes it (the GPU, the CPU, Python, C).

use zerocam_tensor::{DType, Element, Tensor, TensorDyn};

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
/// use zerocam_gpu::{Fit, ModelInput, ModelLayout};
/// use zerocam_tensor::DType;
/// // A torchvision classifier: 1x3x224x224 f32, ImageNet mean/std, centre crop.
/// let input = ModelInput::new(224, 224)?
///     .dtype(DType::F32)?
///     .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
///     .fit(Fit::Crop);
/// assert_eq!(input.shape(), [1, 3, 224, 224]);
/// assert_eq!(input.layout(), ModelLayout::Nchw);
/// # Ok::<(), zerocam_gpu::ModelInputError>(())
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
    /// finite; [`ModelInputError::QuantizedFloat`] on a float element type.
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

    /// Quantization only makes sense for integer outputs; mean/std on an
    /// integer output needs the quantization that maps the real values back.
    fn check_values(&self) -> Result<(), ModelInputError> {
        let float = matches!(self.dtype, DType::F32 | DType::F16);
        if float && self.quantization.is_some() {
            return Err(ModelInputError::QuantizedFloat { dtype: self.dtype });
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

    /// The packed byte strides of [`shape`](ModelInput::shape).
    pub fn packed_strides(&self) -> [usize; 4] {
        let shape = self.shape();
        let mut strides = [0; 4];
        let mut acc = self.dtype.size();
        for (s, d) in strides.iter_mut().zip(shape).rev() {
            *s = acc;
            acc *= d;
        }
        strides
    }

    /// Checks that `dst` can take batch element `batch_index` of this input:
    /// its element type and shape are this input's, `batch_index` is inside
    /// the batch, and each batch element is packed (row-major, no gaps; the
    /// batch stride may be larger, as in a view of a wider batch). Every path
    /// that writes a model input (the GPU, the CPU) checks with this.
    /// It allocates nothing unless it fails.
    ///
    /// ```
    /// use zerocam_gpu::{ModelInput, ModelInputError};
    /// use zerocam_tensor::{DType, TensorDyn, TensorMemory};
    /// let input = ModelInput::new(4, 2)?.dtype(DType::U8)?; // [1, 3, 2, 4]
    /// let mem = Some(TensorMemory::Mem);
    /// let dst = TensorDyn::new(&input.shape(), DType::U8, mem, None)?;
    /// assert!(input.check_destination(&dst, 0).is_ok());
    /// let f32s = TensorDyn::new(&input.shape(), DType::F32, mem, None)?;
    /// assert_eq!(
    ///     input.check_destination(&f32s, 0),
    ///     Err(ModelInputError::DestinationDType { expected: DType::U8, actual: DType::F32 })
    /// );
    /// assert_eq!(
    ///     input.check_destination(&dst, 1),
    ///     Err(ModelInputError::BatchIndex { index: 1, batch: 1 })
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`ModelInputError::DestinationDType`], [`DestinationShape`](ModelInputError::DestinationShape),
    /// [`BatchIndex`](ModelInputError::BatchIndex) and
    /// [`DestinationNotPacked`](ModelInputError::DestinationNotPacked), each
    /// with the expected and the actual values.
    pub fn check_destination(
        &self,
        dst: &TensorDyn,
        batch_index: usize,
    ) -> Result<(), ModelInputError> {
        self.check_parts(dst.dtype(), dst.shape(), batch_index, |axis| {
            dst.stride(axis)
        })
        .map_err(|e| with_strides(e, || dst.strides()))
    }

    /// [`check_destination`](ModelInput::check_destination) of a typed tensor.
    pub(crate) fn check_tensor<T: Element>(
        &self,
        dst: &Tensor<T>,
        batch_index: usize,
    ) -> Result<(), ModelInputError> {
        self.check_parts(T::DTYPE, dst.shape(), batch_index, |axis| dst.stride(axis))
            .map_err(|e| with_strides(e, || dst.strides()))
    }

    /// The checks of `check_destination` on a tensor's parts; a
    /// `DestinationNotPacked` leaves `actual` empty for the caller to fill.
    fn check_parts(
        &self,
        dtype: DType,
        shape: &[usize],
        batch_index: usize,
        stride: impl Fn(usize) -> Option<usize>,
    ) -> Result<(), ModelInputError> {
        if dtype != self.dtype {
            return Err(ModelInputError::DestinationDType {
                expected: self.dtype,
                actual: dtype,
            });
        }
        let expected = self.shape();
        if shape != expected {
            return Err(ModelInputError::DestinationShape {
                expected,
                actual: shape.to_vec(),
            });
        }
        if batch_index >= self.batch {
            return Err(ModelInputError::BatchIndex {
                index: batch_index,
                batch: self.batch,
            });
        }
        let packed = self.packed_strides();
        // Axis 0 only matters between images: at least one element apart.
        let batch_ok = self.batch == 1 || stride(0).is_some_and(|s| s >= packed[0]);
        if !(batch_ok && (1..4).all(|axis| stride(axis) == Some(packed[axis]))) {
            return Err(ModelInputError::DestinationNotPacked {
                expected: packed,
                actual: Vec::new(),
            });
        }
        Ok(())
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

/// Fills in the actual strides of a `DestinationNotPacked` (on the error
/// path only: `strides()` allocates).
fn with_strides(
    e: ModelInputError,
    strides: impl FnOnce() -> Option<Vec<usize>>,
) -> ModelInputError {
    match e {
        ModelInputError::DestinationNotPacked { expected, .. } => {
            ModelInputError::DestinationNotPacked {
                expected,
                actual: strides().unwrap_or_default(),
            }
        }
        other => other,
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
    fn a_destination_is_checked_with_the_values_named() {
        use zerocam_tensor::{ImageLayout, PixelFormat, Region, TensorMemory};
        let mem = Some(TensorMemory::Mem);
        let nchw = ModelInput::new(4, 2).unwrap().batch(2).unwrap();
        let t = TensorDyn::new(&[2, 3, 2, 4], DType::F32, mem, None).unwrap();
        assert_eq!(nchw.packed_strides(), [96, 32, 16, 4]);
        assert_eq!(nchw.check_destination(&t, 1), Ok(()));
        let e = nchw.check_destination(&t, 2).unwrap_err();
        assert_eq!(e, ModelInputError::BatchIndex { index: 2, batch: 2 });
        let flat = TensorDyn::new(&[48], DType::F32, mem, None).unwrap();
        let e = nchw.check_destination(&flat, 0).unwrap_err();
        assert!(e.to_string().contains("[48]") && e.to_string().contains("[2, 3, 2, 4]"));
        // A batch view of a wider tensor: elements packed, further apart.
        let wide = Tensor::<f32>::new(&[2, 5, 2, 4], mem, None).unwrap();
        let view = TensorDyn::F32(wide.view(Region::new(1, 0, 3, 2)).unwrap());
        assert_eq!(nchw.check_destination(&view, 1), Ok(()));
        // Padded image rows are not packed.
        let nhwc = ModelInput::new(4, 2)
            .unwrap()
            .with_layout(ModelLayout::Nhwc)
            .dtype(DType::U8)
            .unwrap();
        let padded = Tensor::<u8>::builder_image(
            ImageLayout::new(4, 2, PixelFormat::Rgb).with_row_stride(16),
        )
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
        let e = nhwc.check_tensor(&padded, 0).unwrap_err();
        assert_eq!(
            e,
            ModelInputError::DestinationShape {
                expected: [1, 2, 4, 3],
                actual: vec![2, 4, 3]
            }
        );
        let batch = Tensor::<u8>::builder_image(
            ImageLayout::new(4, 2, PixelFormat::Rgb)
                .with_row_stride(16)
                .with_batch(2),
        )
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
        let e = nhwc
            .clone()
            .batch(2)
            .unwrap()
            .check_tensor(&batch, 0)
            .unwrap_err();
        assert_eq!(
            e,
            ModelInputError::DestinationNotPacked {
                expected: [24, 12, 3, 1],
                actual: vec![32, 16, 3, 1]
            }
        );
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
            i.clone().dtype(DType::U16),
            Err(ModelInputError::UnsupportedDType { dtype: DType::U16 })
        ));
        assert!(matches!(i.batch(0), Err(ModelInputError::ZeroBatch)));
    }
}
