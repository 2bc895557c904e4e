//! [`CudaError`]: what can go wrong between a tensor and a CUDA device pointer.

use zerocam_tensor::TensorMemory;

/// The CUDA driver library could not be used: not installed, not loadable,
/// or missing an entry point. Names the library tried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CUDA is unavailable: {reason}")]
pub struct CudaUnavailable {
    /// The library (a path or a soname) that was loaded.
    pub library: String,
    /// What `dlopen` or the symbol lookup said (naming the library).
    pub reason: String,
}

/// Errors of the CUDA path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// No usable driver library (see [`CudaUnavailable`]).
    #[error(transparent)]
    Unavailable(#[from] CudaUnavailable),
    /// A driver call failed; `name` is `cuGetErrorName`'s (e.g.
    /// `CUDA_ERROR_INVALID_VALUE`).
    #[error("{call} failed: {name} ({code})")]
    Driver {
        /// The entry point, e.g. `cuMemHostRegister_v2`.
        call: &'static str,
        /// The `CUresult`.
        code: i32,
        /// `cuGetErrorName(code)`, or `CUDA error <code>` when it has none.
        name: String,
    },
    /// The device ordinal asked for does not exist.
    #[error("no CUDA device {ordinal}: the driver reports {count}")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: i32,
        /// `cuDeviceGetCount`.
        count: i32,
    },
    /// The tensor's memory cannot take this path (a PBO without a GPU
    /// attached, heap memory for the EGLImage path...).
    #[error("{memory} memory cannot reach CUDA by {path}: {reason}")]
    UnsupportedMemory {
        /// The tensor's memory.
        memory: TensorMemory,
        /// The import path tried.
        path: &'static str,
        /// Why not.
        reason: &'static str,
    },
    /// The driver answered with something that does not fit the tensor (a
    /// mapped GL buffer shorter than it, an EGL frame with other planes).
    #[error("{call} returned {what}")]
    Mismatch {
        /// The entry point.
        call: &'static str,
        /// What did not fit.
        what: String,
    },
    /// A tensor operation failed (a map conflict, a multi-buffer image...).
    #[error(transparent)]
    Tensor(#[from] zerocam_tensor::Error),
    /// The GL thread refused or failed (GL buffer and EGLImage paths).
    #[cfg(feature = "gl")]
    #[error(transparent)]
    Gpu(#[from] zerocam_gpu::GpuError),
}

impl CudaError {
    /// A copy of an error [`Driver::load`](crate::Driver::load) returns
    /// (kept once per process by [`Driver::shared`](crate::Driver::shared)).
    pub(crate) fn clone_load_error(&self) -> CudaError {
        match self {
            CudaError::Unavailable(u) => CudaError::Unavailable(u.clone()),
            CudaError::Driver { call, code, name } => CudaError::Driver {
                call,
                code: *code,
                name: name.clone(),
            },
            other => CudaError::Unavailable(CudaUnavailable {
                library: crate::default_library().display().to_string(),
                reason: other.to_string(),
            }),
        }
    }

    /// The `CUresult` of a failed driver call.
    pub fn driver_code(&self) -> Option<i32> {
        match self {
            CudaError::Driver { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// The result of CUDA operations.
pub type Result<T, E = CudaError> = std::result::Result<T, E>;
