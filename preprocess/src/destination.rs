//! [`ModelInput::check_destination`]: whether a tensor can take a model
//! input, checked the same way by every path that writes one (the GPU, the
//! CPU), without allocating on success.

use zerocam_tensor::{DType, Element, Tensor, TensorDyn};

use super::error::ModelInputError;
use super::input::ModelInput;

impl ModelInput {
    /// The packed byte strides of [`shape`](ModelInput::shape).
    pub fn packed_strides(&self) -> [usize; 4] {
        let shape = self.shape();
        let mut strides = [0; 4];
        let mut acc = self.element_type().size();
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
    /// use zerocam_preprocess::{ModelInput, ModelInputError};
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
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))] // the GPU backend's
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
        if dtype != self.element_type() {
            return Err(ModelInputError::DestinationDType {
                expected: self.element_type(),
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
        if batch_index >= self.batch_size() {
            return Err(ModelInputError::BatchIndex {
                index: batch_index,
                batch: self.batch_size(),
            });
        }
        let packed = self.packed_strides();
        // Axis 0 only matters between images: at least one element apart.
        let batch_ok = self.batch_size() == 1 || stride(0).is_some_and(|s| s >= packed[0]);
        if !(batch_ok && (1..4).all(|axis| stride(axis) == Some(packed[axis]))) {
            return Err(ModelInputError::DestinationNotPacked {
                expected: packed,
                actual: Vec::new(),
            });
        }
        Ok(())
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
    use crate::ModelLayout;
    use zerocam_tensor::{ImageLayout, PixelFormat, Region, TensorMemory};

    #[test]
    fn a_destination_is_checked_with_the_values_named() {
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
}
