//! Rust errors as zerocam's Python exceptions (defined in `zerocam/errors.py`).
//!
//! Every exception derives from `zerocam.Error` and from the standard one a
//! caller expects: `InvalidArgument` is a `ValueError`, `DeviceError` an
//! `OSError` with `errno`, `Timeout` a `TimeoutError`, `MapConflict` a
//! `BufferError`; `CudaError` a `RuntimeError` (with the driver's `name`,
//! `code` and `call`), `CudaUnavailable` a `CudaError` (with `library`).

use pyo3::prelude::*;
use zerocam_capture::share::SubscribeError;
use zerocam_capture::CaptureError;
use zerocam_gpu::GpuError;
use zerocam_preprocess::{CpuConvertError, ModelInputError, PreprocessError};
use zerocam_tensor::Error as TensorError;

pyo3::import_exception!(zerocam.errors, InvalidArgument);
pyo3::import_exception!(zerocam.errors, DeviceError);
pyo3::import_exception!(zerocam.errors, Timeout);
pyo3::import_exception!(zerocam.errors, MapConflict);
pyo3::import_exception!(zerocam.errors, Released);
pyo3::import_exception!(zerocam.errors, NoFreeBuffer);
pyo3::import_exception!(zerocam.errors, Disconnected);
pyo3::import_exception!(zerocam.errors, Error);
#[cfg(feature = "cuda")]
pyo3::import_exception!(zerocam.errors, CudaError);
#[cfg(feature = "cuda")]
pyo3::import_exception!(zerocam.errors, CudaUnavailable);

/// A bad argument, naming the value.
pub fn invalid(msg: impl Into<String>) -> PyErr {
    InvalidArgument::new_err(msg.into())
}

/// An OS failure with its errno (`OSError(errno, message)`). An errno of 0 or
/// below (nix's `UnknownErrno`, a value nix does not know) gives a
/// `DeviceError` whose `errno` is `None`, never a made-up number or 0.
pub fn os_error(errno: i32, msg: impl Into<String>) -> PyErr {
    if errno <= 0 {
        return DeviceError::new_err(msg.into());
    }
    DeviceError::new_err((errno, msg.into()))
}

/// An `io::Error` as a `DeviceError`: with its errno when it has one, else
/// with `errno` `None`.
pub fn io_error(e: &std::io::Error, msg: impl Into<String>) -> PyErr {
    match e.raw_os_error() {
        Some(errno) => os_error(errno, msg),
        None => DeviceError::new_err(msg.into()),
    }
}

/// Use of something released.
pub fn released(what: &str) -> PyErr {
    Released::new_err(format!("{what} was released"))
}

/// A tensor error as the matching Python exception.
pub fn tensor_err(e: TensorError) -> PyErr {
    let msg = e.to_string();
    match e {
        TensorError::BadFd { errno, .. }
        | TensorError::NotMappable { errno, .. }
        | TensorError::CannotSeal { errno, .. }
        | TensorError::DupFailed { errno, .. }
        | TensorError::ShmAlloc { errno, .. }
        | TensorError::DmaBufSync { errno, .. } => os_error(errno as i32, msg),
        TensorError::DmaAlloc { ref source, .. } => io_error(source, msg),
        TensorError::DmaUnavailable { .. }
        | TensorError::HeapAlloc { .. }
        | TensorError::UnknownHeap { .. } => os_error(libc::ENOMEM, msg),
        TensorError::MapConflict { .. } | TensorError::ReadOnly { .. } => MapConflict::new_err(msg),
        TensorError::Pbo { .. } => Error::new_err(msg),
        _ => invalid(msg),
    }
}

/// An error of importing the caller's fd number `fd` (through a duplicate):
/// the message names the caller's number, not the duplicate's, and a file
/// that can shrink gets the Python remedy (`unchecked=True`).
pub fn import_err(e: TensorError, fd: i32) -> PyErr {
    match e {
        TensorError::ShrinkableFile { kind, .. } => invalid(format!(
            "fd {fd} is {kind}: its size can shrink while it is mapped, and an access past a \
             truncated end would kill the interpreter with SIGBUS, so it is not imported; pass \
             a dma-buf or a memfd sealed with F_SEAL_SHRINK (one made with \
             os.MFD_ALLOW_SEALING is sealed on import), or, if nothing truncates the file \
             while the tensor, its views, maps and arrays live, unchecked=True"
        )),
        mut e => {
            if let TensorError::BadFd { fd: number, .. }
            | TensorError::NotMappable { fd: number, .. }
            | TensorError::CannotSeal { fd: number, .. } = &mut e
            {
                *number = fd;
            }
            tensor_err(e)
        }
    }
}

/// A capture error as the matching Python exception.
pub fn capture_err(e: CaptureError) -> PyErr {
    let msg = e.to_string();
    match e {
        CaptureError::Timeout { .. } => Timeout::new_err((libc::ETIMEDOUT, msg)),
        CaptureError::NoFreeBuffer { .. } => NoFreeBuffer::new_err(msg),
        CaptureError::Disconnected { errno, .. } => Disconnected::new_err((errno as i32, msg)),
        CaptureError::Share(e) => share_err(e, msg),
        CaptureError::Tensor { source, .. } => {
            // Keep the device in the message, the class of the tensor error.
            let inner = tensor_err(source);
            Python::attach(|py| {
                let class = inner.get_type(py);
                PyErr::from_type(class, msg)
            })
        }
        // A finite pipeline's end ends the iteration (`for frame in cam`);
        // one that does not parse is a bad argument.
        #[cfg(feature = "gstreamer")]
        CaptureError::Gst(zerocam_capture::gst::GstError::Eos { .. }) => {
            pyo3::exceptions::PyStopIteration::new_err(msg)
        }
        #[cfg(feature = "gstreamer")]
        CaptureError::Gst(zerocam_capture::gst::GstError::Parse { .. }) => invalid(msg),
        CaptureError::InvalidArgument(_)
        | CaptureError::UnsupportedFormat { .. }
        | CaptureError::UnsupportedSize { .. }
        | CaptureError::TooFewBuffers { .. }
        | CaptureError::NoSuchControl { .. }
        | CaptureError::NotCapture { .. } => invalid(msg),
        other => match other.errno() {
            Some(errno) => os_error(errno as i32, msg),
            None => Error::new_err(msg),
        },
    }
}

/// A subscriber's error (`Camera("unix:PATH")`): the publisher's end
/// (goodbye, or its death) is `Disconnected` (`errno` `ECONNRESET` when it
/// closed without a goodbye), no publisher there a `DeviceError` with
/// `connect`'s errno, and what a publisher sent wrong a `zerocam.Error`.
fn share_err(e: SubscribeError, msg: String) -> PyErr {
    use zerocam_capture::share::Disconnect;
    match e {
        SubscribeError::Disconnected {
            reason: Disconnect::Closed,
            ..
        } => Disconnected::new_err((libc::ECONNRESET, msg)),
        SubscribeError::Disconnected { .. } => Disconnected::new_err(msg),
        SubscribeError::Connect { ref source, .. } | SubscribeError::Io { ref source, .. } => {
            io_error(source, msg)
        }
        _ => Error::new_err(msg),
    }
}

/// A bad model input (zero sizes, a std of 0, three values expected) as
/// `InvalidArgument`, with the Rust message naming the values.
pub fn model_err(e: ModelInputError) -> PyErr {
    invalid(e.to_string())
}

/// A GPU error: a refused argument (source, destination, crop) is
/// `InvalidArgument`, a PBO the CPU has mapped `MapConflict`, a tensor error
/// its own class, a GPU that cannot work (EGL, GL, a poisoned context)
/// `DeviceError` (errno from a failed `dup`, else `None`).
pub fn gpu_err(e: GpuError) -> PyErr {
    let msg = e.to_string();
    match e {
        GpuError::Tensor(t) => tensor_err(t),
        GpuError::PboMapped { .. } => MapConflict::new_err(msg),
        GpuError::Dup { ref source, .. } => io_error(source, msg),
        GpuError::UnsupportedFormat { .. }
        | GpuError::NotAnImage { .. }
        | GpuError::BadSize { .. }
        | GpuError::CropOutOfBounds { .. }
        | GpuError::Batched { .. }
        | GpuError::ForeignPbo { .. }
        | GpuError::UnsupportedMemory { .. }
        | GpuError::ModelDestination { .. } => invalid(msg),
        _ => DeviceError::new_err(msg),
    }
}

/// A CPU model-input error: bad sources and destinations are
/// `InvalidArgument`, a tensor error its own class.
pub fn cpu_err(e: CpuConvertError) -> PyErr {
    let msg = e.to_string();
    match e {
        CpuConvertError::Tensor(t) => tensor_err(t),
        CpuConvertError::Library { .. } => Error::new_err(msg),
        _ => invalid(msg),
    }
}

/// A `Preprocessor` error: every result of the ring held is `NoFreeBuffer`
/// (naming the depth), no GPU for `device="gpu"` `DeviceError`, a source
/// neither device takes, a bad batch or ring `InvalidArgument`, the rest of
/// the class of the device's error (the message says which device refused).
pub fn preprocess_err(e: PreprocessError) -> PyErr {
    let msg = e.to_string();
    // The inner error's class with this message (which names the device);
    // a `DeviceError` keeps its own, with its errno.
    let class_of = |inner: PyErr| {
        Python::attach(|py| {
            if inner.is_instance_of::<DeviceError>(py) {
                return inner;
            }
            let class = inner.get_type(py);
            PyErr::from_type(class, msg.clone())
        })
    };
    match e {
        PreprocessError::RingFull { .. } => NoFreeBuffer::new_err(msg),
        PreprocessError::NoGpu { .. } | PreprocessError::NoGpuFeature => DeviceError::new_err(msg),
        PreprocessError::Gpu(g) => class_of(gpu_err(g)),
        PreprocessError::Cpu(c) => class_of(cpu_err(c)),
        PreprocessError::Tensor(t) => class_of(tensor_err(t)),
        // Neither device took it: the CPU's reason says what kind of failure.
        PreprocessError::NoDeviceTakes { cpu, .. } => class_of(cpu_err(*cpu)),
        _ => invalid(msg),
    }
}

/// A CUDA error: no driver library (or no device) is `CudaUnavailable`
/// naming the library, a failed driver call `CudaError` with its
/// `cuGetErrorName` name, `CUresult` and entry point, a tensor error (a map
/// conflict, read-only memory) its own class, a GPU error as [`gpu_err`].
#[cfg(feature = "cuda")]
pub fn cuda_err(e: zerocam_cuda::CudaError) -> PyErr {
    use zerocam_cuda::CudaError as E;
    match e {
        E::Tensor(t) => tensor_err(t),
        E::Gpu(g) => gpu_err(g),
        other => cuda_err_ref(&other),
    }
}

/// [`cuda_err`] of an error kept for the process (the first use's, remembered).
#[cfg(feature = "cuda")]
pub fn cuda_err_ref(e: &zerocam_cuda::CudaError) -> PyErr {
    use zerocam_cuda::CudaError as E;
    let msg = e.to_string();
    match e {
        E::Unavailable(u) => CudaUnavailable::new_err((msg, u.library.clone(), u.reason.clone())),
        E::NoDevice { .. } | E::Forked { .. } => CudaUnavailable::new_err((
            msg,
            zerocam_cuda::default_library().display().to_string(),
            e.to_string(),
        )),
        E::Driver { call, code, name } => {
            CudaError::new_err((msg, name.clone(), *code, call.to_string()))
        }
        _ => CudaError::new_err(msg),
    }
}

/// An encoder or recorder error: a file name, codec, encoder or size the
/// recorder does not take is `InvalidArgument`, a file that cannot be
/// created or written (a full disk: `ENOSPC`) a `DeviceError` with its
/// errno, a recorder used after `close()` `Released`, a hardware encoder's
/// failure a `DeviceError` (with the ioctl's errno), a tensor error its own
/// class, the rest (OpenH264 refusing) `zerocam.Error`.
pub fn encode_err(e: zerocam_encode::EncodeError) -> PyErr {
    use zerocam_encode::container::ContainerError as C;
    use zerocam_encode::software::SoftwareError as S;
    use zerocam_encode::EncodeError as E;
    let msg = e.to_string();
    match e {
        E::Extension { .. } | E::Unsupported { .. } => invalid(msg),
        E::Io { ref source, .. } | E::Container(C::Io { ref source, .. }) => io_error(source, msg),
        E::Container(C::Finished { .. }) => Released::new_err(msg),
        E::Container(C::Codec { .. } | C::Size { .. }) => invalid(msg),
        E::Software(S::Format { .. } | S::Size { .. } | S::SizeChanged { .. }) => invalid(msg),
        E::Software(S::Tensor(t)) => tensor_err(t),
        E::M2m(ref m) => match m.errno() {
            Some(errno) => os_error(errno as i32, msg),
            None => DeviceError::new_err(msg),
        },
        _ => Error::new_err(msg),
    }
}
