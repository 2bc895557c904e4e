//! [`ModelInputError`]: a model input description that cannot work, with the
//! values that say why.

use zerocam_tensor::DType;

/// A bad [`ModelInput`](crate::ModelInput) or fit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelInputError {
    /// A width or height of 0 (of the model input or of the source).
    #[error("size {width}x{height} is empty: both sides must be at least 1")]
    ZeroSize {
        /// Width.
        width: usize,
        /// Height.
        height: usize,
    },
    /// A batch of 0 images.
    #[error("batch 0 is empty: give at least 1")]
    ZeroBatch,
    /// An element type a model input cannot have.
    #[error("model inputs are u8, i8, f16 or f32, not {dtype:?}")]
    UnsupportedDType {
        /// The type asked for.
        dtype: DType,
    },
    /// A standard deviation that is 0, negative or not finite.
    #[error("std of channel {channel} is {std}: it must be finite and above 0")]
    BadStd {
        /// The channel (0 = red).
        channel: usize,
        /// Its value.
        std: f32,
    },
    /// A mean that is not finite.
    #[error("mean of channel {channel} is {mean}: it must be finite")]
    BadMean {
        /// The channel (0 = red).
        channel: usize,
        /// Its value.
        mean: f32,
    },
    /// Mean or standard deviation with other than three values.
    #[error("{what} has {len} values: give one per channel (3)")]
    WrongChannelCount {
        /// `mean`, `std` or `pad`.
        what: &'static str,
        /// How many were given.
        len: usize,
    },
    /// A quantization scale that is 0, negative or not finite.
    #[error("quantization scale {scale}: it must be finite and above 0")]
    BadScale {
        /// Its value.
        scale: f32,
    },
    /// Quantization asked of a float element type.
    #[error("quantization is for u8 and i8 inputs; this input is {dtype:?}")]
    QuantizedFloat {
        /// The element type.
        dtype: DType,
    },
    /// A zero point the element type cannot hold (u8: 0..=255, i8: -128..=127).
    #[error("quantization zero point {zero_point} is outside {dtype:?}'s {min}..={max}")]
    ZeroPointOutOfRange {
        /// Its value.
        zero_point: i32,
        /// The element type.
        dtype: DType,
        /// The smallest value of the element type.
        min: i32,
        /// The largest.
        max: i32,
    },
    /// A destination tensor whose element type is not the model input's.
    #[error("the destination holds {actual:?} elements; the model input is {expected:?}")]
    DestinationDType {
        /// The model input's element type.
        expected: DType,
        /// The destination's.
        actual: DType,
    },
    /// A destination tensor whose shape is not the model input's.
    #[error("the destination's shape {actual:?} is not the model input's {expected:?}")]
    DestinationShape {
        /// The model input's shape.
        expected: [usize; 4],
        /// The destination's.
        actual: Vec<usize>,
    },
    /// A batch element past the end of the model input's batch.
    #[error("batch index {index} is outside the model input's batch of {batch}")]
    BatchIndex {
        /// The element asked for.
        index: usize,
        /// Images in the batch.
        batch: usize,
    },
    /// A destination whose batch elements are not packed (a strided view, a
    /// padded image row) or overlap.
    #[error(
        "the destination's byte strides {actual:?} are not packed: the model input \
         needs {expected:?} (a larger batch stride is fine)"
    )]
    DestinationNotPacked {
        /// The packed byte strides of the input's shape.
        expected: [usize; 4],
        /// The destination's byte strides (empty when they are not uniform).
        actual: Vec<usize>,
    },
    /// A letterbox that would scale one side of the source below one pixel.
    #[error(
        "a {source_width}x{source_height} source letterboxed into {width}x{height} \
         is less than one pixel on one side"
    )]
    LetterboxTooSmall {
        /// Source width.
        source_width: usize,
        /// Source height.
        source_height: usize,
        /// Model width.
        width: usize,
        /// Model height.
        height: usize,
    },
}
