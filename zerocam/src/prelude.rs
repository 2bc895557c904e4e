//! What a camera-to-inference program uses: `use zerocam::prelude::*;`.
//!
//! Tensors and their maps, sources and frames, model inputs; with the
//! feature `gpu`, the GL path; with `encode`, JPEG, video encoders and the
//! recorder; with `cuda`, CUDA and frames as device pointers. Where model inputs are made is a [`Backend`] (a camera device
//! is a [`capture::Device`](crate::capture::Device)).

pub use crate::open;
pub use zerocam_capture::open::{Opened, SourceSpec};
pub use zerocam_capture::{CaptureError, Frame, FrameSource};
pub use zerocam_preprocess::{
    Backend, Fit, ModelInput, PreprocessError, Preprocessed, Preprocessor,
};
pub use zerocam_tensor::{
    Access, ColorSpec, DType, PixelFormat, Region, Tensor, TensorDyn, TensorMapTrait, TensorMemory,
    TensorTrait,
};

#[cfg(feature = "encode")]
pub use zerocam_encode::{
    jpeg::JpegEncoder,
    recorder::{Recorder, RecorderConfig},
    EncoderChoice, VideoEncoder,
};

#[cfg(feature = "cuda")]
pub use zerocam_cuda::{Cuda, CudaFrameExt};
#[cfg(feature = "gpu")]
pub use zerocam_gpu::{ConvertOptions, Gpu};
