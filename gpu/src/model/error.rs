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
