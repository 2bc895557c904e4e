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
    /// CUDA was loaded by another process, of which this one is a `fork()`
    /// child: the driver does not support its state there, so zerocam
    /// calls nothing (what the parent registered is left to the parent).
    #[error(
        "this process ({child}) is a fork() child of the one that loaded CUDA ({parent}): \
         the driver's state does not survive fork; use CUDA in the parent, or start the child \
         with exec (Python: multiprocessing's \"spawn\" or \"forkserver\" start method) and \
         load CUDA there"
    )]
    Forked {
        /// The process that loaded the driver.
        parent: u32,
        /// This process.
        child: u32,
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
    /// Host registration (path a) refused before or instead of a driver
    /// error: see [`HostRegisterError`].
    #[error(transparent)]
    HostRegister(#[from] HostRegisterError),
    /// A tensor operation failed (a map conflict, a multi-buffer image...).
    #[error(transparent)]
    Tensor(#[from] zerocam_tensor::Error),
    /// The GL thread refused or failed (GL buffer and EGLImage paths).
    #[cfg(feature = "gl")]
    #[error(transparent)]
    Gpu(#[from] zerocam_gpu::GpuError),
}

/// Why a buffer cannot be registered with `cuMemHostRegister` (path a):
/// what the device reports, and what works instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostRegisterError {
    /// The device cannot register host memory at all:
    /// `CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED` (99) is 0. (A driver
    /// older than the attribute, before CUDA 11.0, is not refused: it is
    /// asked, as those drivers could register.)
    #[error(
        "CUDA device {ordinal} cannot register host memory \
         (CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED is {}): map PBO tensors \
         through an attached GPU (GL buffer interop), dma-buf frames with \
         map_egl (EGLImage interop), or copy the data into device memory",
        attribute_value(.reported)
    )]
    Unsupported {
        /// The device ordinal.
        ordinal: i32,
        /// The attribute's value; `None` when the driver does not know it.
        reported: Option<i32>,
    },
    /// The buffer is mapped read-only (a dma-buf opened read-only, memory
    /// lent read-only) and the device cannot register read-only memory:
    /// `CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED` (113) is 0 or
    /// unknown (a driver older than CUDA 11.1). Registering it without
    /// `CU_MEMHOSTREGISTER_READ_ONLY` is not tried: the driver pins the pages
    /// for writing, which a read-only mapping refuses, and the device could
    /// write memory lent read-only.
    #[error(
        "CUDA device {ordinal} cannot register read-only host memory \
         (CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED is {}), and the \
         {len} bytes at {base:#x} are mapped read-only: map the buffer \
         read-write (a writable fd or tensor) to register it",
        attribute_value(.reported)
    )]
    ReadOnlyUnsupported {
        /// The device ordinal.
        ordinal: i32,
        /// The attribute's value; `None` when the driver does not know it.
        reported: Option<i32>,
        /// The buffer's CPU address.
        base: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// Part of the buffer is registered by another library of the process
    /// (`CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`), whose registration
    /// does not cover all of it.
    #[error(
        "the {len} bytes at {base:#x} overlap host memory registered with CUDA \
         elsewhere in the process (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) \
         that covers only {size} bytes at {start:#x}: register the whole \
         buffer there, or leave its registration to zerocam"
    )]
    PartlyRegisteredElsewhere {
        /// The buffer's CPU address.
        base: usize,
        /// Its length in bytes.
        len: usize,
        /// Where the other registration starts
        /// (`CU_POINTER_ATTRIBUTE_RANGE_START_ADDR`).
        start: u64,
        /// Its length (`CU_POINTER_ATTRIBUTE_RANGE_SIZE`).
        size: u64,
    },
    /// The buffer is registered by another library of the process
    /// (`CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`), and the driver cannot
    /// say which range that registration covers, or at which device address.
    #[error(
        "the {len} bytes at {base:#x} are registered with CUDA elsewhere in the \
         process (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED), and \
         cuPointerGetAttribute({attribute}) failed with {error}: leave the \
         buffer's registration to zerocam, or register it with \
         CU_MEMHOSTREGISTER_DEVICEMAP there"
    )]
    RegisteredElsewhereUnknown {
        /// The buffer's CPU address.
        base: usize,
        /// Its length in bytes.
        len: usize,
        /// The pointer attribute asked for, e.g.
        /// `CU_POINTER_ATTRIBUTE_DEVICE_POINTER`.
        attribute: &'static str,
        /// `cuGetErrorName`'s name of the failure.
        error: String,
    },
}

/// A device attribute's value as [`HostRegisterError`] prints it.
fn attribute_value(reported: &Option<i32>) -> String {
    match reported {
        Some(v) => v.to_string(),
        None => "unknown to the driver".to_owned(),
    }
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
