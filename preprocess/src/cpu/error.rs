//! [`CpuConvertError`]: why a CPU model-input conversion could not run, with
//! the values that say why.

use zerocam_tensor::{DType, PixelFormat, Region};

use crate::ModelInputError;

/// A CPU conversion ([`CpuPreprocessor::convert`](crate::CpuPreprocessor::convert))
/// that cannot run. Checks of the source and destination come before any
/// write, so those errors leave the destination untouched; a failure after
/// the write (the map's sync END) may leave it written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CpuConvertError {
    /// The fit cannot place the source (an empty crop, a letterbox below one
    /// pixel).
    #[error(transparent)]
    Model(#[from] ModelInputError),
    /// The tensor layer refused a view or a map (a misaligned crop on
    /// subsampled chroma, a map conflict, a failed dma-buf sync).
    #[error(transparent)]
    Tensor(#[from] zerocam_tensor::Error),
    /// The source is not an image in a format the CPU path reads (an array
    /// tensor has no format: `None`).
    #[error(
        "the CPU path reads NV12, NV16, YUYV, UYVY, RGB, BGR, RGBA, BGRA and GREY \
         images, not {format:?}"
    )]
    UnsupportedSource {
        /// The source's pixel format, `None` for an array tensor.
        format: Option<PixelFormat>,
    },
    /// A whole batch of images as the source: pick one with `batch(n)`.
    #[error("the source holds {frames} images: convert one of them (`batch(n)`)")]
    BatchedSource {
        /// Images in the source.
        frames: usize,
    },
    /// A source whose rows are too long for this path (over 4 GiB: its
    /// column offsets are 32-bit).
    #[error("a {width}-pixel-wide source is too wide for the CPU path (rows over 4 GiB)")]
    SourceTooWide {
        /// The source frame's width.
        width: usize,
    },
    /// A crop that does not lie inside the source.
    #[error("crop {crop:?} does not lie inside the {width}x{height} source")]
    CropOutOfBounds {
        /// The crop.
        crop: Region,
        /// Source width.
        width: usize,
        /// Source height.
        height: usize,
    },
    /// A destination whose shape is not the model input's.
    #[error("destination shape {actual:?} is not the model input's {expected:?}")]
    DestinationShape {
        /// The model input's shape.
        expected: [usize; 4],
        /// The destination's shape.
        actual: Vec<usize>,
    },
    /// A destination whose element type is not the model input's.
    #[error("destination is {actual:?}, the model input is {expected:?}")]
    DestinationDType {
        /// The model input's element type.
        expected: DType,
        /// The destination's.
        actual: DType,
    },
    /// A batch element past the destination's batch.
    #[error("batch element {index} of a batch of {batch}")]
    BatchIndex {
        /// The element asked for.
        index: usize,
        /// The batch size.
        batch: usize,
    },
    /// A destination whose elements are not packed (a strided view).
    #[error("destination byte strides {actual:?} are not packed (packed: {expected:?})")]
    DestinationNotPacked {
        /// The packed byte strides of the model input's shape.
        expected: Vec<usize>,
        /// The destination's byte strides (empty when they are not uniform).
        actual: Vec<usize>,
    },
    /// A step below this path refused what it was given (a bug in this
    /// crate or the tensor layer: a mapped plane without a row stride): what
    /// and why.
    #[error("{stage} failed: {message}")]
    Library {
        /// The step (`plane map`).
        stage: &'static str,
        /// Its message.
        message: String,
    },
}
