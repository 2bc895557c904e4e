//! [`PreprocessError`]: why a [`Preprocessor`](super::Preprocessor) could not
//! be made or could not convert a frame, with the values that say why.

use crate::{CpuConvertError, ModelInputError};
#[cfg(feature = "gpu")]
use zerocam_gpu::GpuError;

/// A [`Preprocessor`](super::Preprocessor) failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreprocessError {
    /// [`Backend::Gpu`](super::Backend::Gpu) was asked for and the GPU cannot
    /// be opened (no EGL, no GLES 3 context).
    #[cfg(feature = "gpu")]
    #[error("device Gpu was asked for, but the GPU cannot be opened: {source}")]
    NoGpu {
        /// `Gpu::new`'s error.
        source: GpuError,
    },
    /// [`Backend::Gpu`](super::Backend::Gpu) in a build without the `gpu` feature.
    #[error("device Gpu was asked for, but zerocam-preprocess was built without its gpu feature")]
    NoGpuFeature,
    /// A ring of 0 destinations.
    #[error("ring depth {depth}: a preprocessor needs at least 1 destination")]
    ZeroRingDepth {
        /// The depth asked for.
        depth: usize,
    },
    /// Every destination of the ring is still held outside it: the next
    /// result has nowhere to go. Nothing was converted or overwritten.
    #[error(
        "all {depth} results of the preprocessor's ring are still held (tensors, views, maps, \
         pins or exports of them): drop one, or make the ring deeper; up to {depth} results \
         may be held at once"
    )]
    RingFull {
        /// The ring's depth.
        depth: usize,
    },
    /// Another number of sources than the model input's batch.
    #[error("the model input takes a batch of {batch} image(s); {sources} given")]
    BatchSize {
        /// The model input's batch.
        batch: usize,
        /// Sources given.
        sources: usize,
    },
    /// The GPU refused the conversion.
    #[cfg(feature = "gpu")]
    #[error("GPU: {0}")]
    Gpu(#[from] GpuError),
    /// The CPU refused the conversion.
    #[error("CPU: {0}")]
    Cpu(#[from] CpuConvertError),
    /// The model input cannot take the source (an empty crop, a letterbox
    /// below one pixel).
    #[error(transparent)]
    Model(#[from] ModelInputError),
    /// A ring destination could not be allocated.
    #[error("cannot allocate a ring destination: {0}")]
    Tensor(#[from] zerocam_tensor::Error),
    /// Under `Auto` on the GPU, the GPU could not take a source and the CPU
    /// refused it too.
    #[cfg(feature = "gpu")]
    #[error("neither device takes this source: the GPU refused it ({gpu}), then the CPU ({cpu})")]
    NoDeviceTakes {
        /// Why the GPU refused.
        gpu: Box<GpuError>,
        /// Why the CPU refused.
        cpu: Box<CpuConvertError>,
    },
}
