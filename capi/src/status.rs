//! Status codes, the error behind each failed call, and the thread's last
//! error message (`zerocam_last_error`).

use std::cell::RefCell;
use std::ffi::{c_char, CString};

use ::zerocam_tensor::Error as TensorError;
use zerocam_capture::CaptureError;
use zerocam_preprocess::{ModelInputError, PreprocessError};

/// What a call returns: `ZEROCAM_OK` or one of the `ZEROCAM_ERROR_*`
/// codes; `zerocam_last_error()` then says what was wrong.
#[allow(non_camel_case_types)]
pub type zerocam_status = i32;

/// The call did what it says.
pub const ZEROCAM_OK: zerocam_status = 0;
/// A required pointer (a handle, an `out` parameter, a string) was NULL.
pub const ZEROCAM_ERROR_NULL_ARGUMENT: zerocam_status = 1;
/// A handle that is not a live zerocam object: never made by zerocam, or
/// already released (a double unref, a use after unref).
pub const ZEROCAM_ERROR_INVALID_HANDLE: zerocam_status = 2;
/// A live object of another type (a frame passed where a tensor goes).
pub const ZEROCAM_ERROR_WRONG_HANDLE_TYPE: zerocam_status = 3;
/// A value out of range: a dtype, memory kind, access, format or shape, a
/// source spec, a model input's options.
pub const ZEROCAM_ERROR_INVALID_ARGUMENT: zerocam_status = 4;
/// An fd that is not open, not a dma-buf or a memfd that cannot shrink, or
/// too small for what was asked of it.
pub const ZEROCAM_ERROR_BAD_FD: zerocam_status = 5;
/// A view region, batch index or plane index past the tensor or frame.
pub const ZEROCAM_ERROR_OUT_OF_BOUNDS: zerocam_status = 6;
/// Something is held: a conflicting map is live, every buffer or ring slot
/// is held by the caller.
pub const ZEROCAM_ERROR_BUSY: zerocam_status = 7;
/// A format, memory kind or feature this build or this machine does not have.
pub const ZEROCAM_ERROR_UNSUPPORTED: zerocam_status = 8;
/// No such device or camera.
pub const ZEROCAM_ERROR_NOT_FOUND: zerocam_status = 9;
/// No frame came within the timeout.
pub const ZEROCAM_ERROR_TIMEOUT: zerocam_status = 10;
/// The source ended (a finite pipeline's end of stream).
pub const ZEROCAM_ERROR_END_OF_STREAM: zerocam_status = 11;
/// An OS call failed; the message has its errno.
pub const ZEROCAM_ERROR_IO: zerocam_status = 12;
/// A driver, GPU or pipeline failed, or a device went away.
pub const ZEROCAM_ERROR_DEVICE: zerocam_status = 13;
/// A bug inside zerocam, caught at the boundary (no panic crosses it; the
/// panic's message is also printed on stderr by Rust's panic hook). An
/// object a call panicked inside is refused after, with this status.
pub const ZEROCAM_ERROR_PANIC: zerocam_status = 14;

/// Why a call failed, and its status code ([`CapiError::status`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CapiError {
    /// A NULL pointer where one is required.
    #[error("{what} is NULL")]
    Null { what: &'static str },
    /// A handle not in the live-object table.
    #[error("{what} {handle:#x} is not a live zerocam object (never made, or already released)")]
    InvalidHandle { what: &'static str, handle: usize },
    /// A live handle of another type.
    #[error("{what} {handle:#x} is a {found}, not a {expected}")]
    WrongType {
        what: &'static str,
        handle: usize,
        expected: &'static str,
        found: &'static str,
    },
    /// An fd shorter than the bytes asked of it.
    #[error("fd {fd} is {size} bytes: offset + length = {end} runs past its end")]
    FdTooSmall { fd: i32, size: usize, end: usize },
    /// Something held, in C's words (the ring's results).
    #[error("{0}")]
    Busy(String),
    /// An fd zerocam cannot import, in C's words.
    #[error("{0}")]
    BadFd(String),
    /// A region or index past what it indexes, named in the message.
    #[error("{0}")]
    OutOfBounds(String),
    /// A value out of range, named in the message.
    #[error("{0}")]
    InvalidArgument(String),
    /// A feature this build does not have, or a value it cannot take.
    #[error("{0}")]
    Unsupported(String),
    /// A tensor's error.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// A source's error.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A model input's options.
    #[error(transparent)]
    Model(#[from] ModelInputError),
    /// The preprocessor's error.
    #[error(transparent)]
    Preprocess(#[from] PreprocessError),
    /// A panic inside zerocam.
    #[error("internal error (a bug in zerocam, please report it): {0}")]
    Panic(String),
    /// An object a earlier call panicked inside of.
    #[error("this {what} is unusable: an earlier call panicked inside it (a bug in zerocam, please report it)")]
    Poisoned { what: &'static str },
}

impl CapiError {
    /// The status code a C caller gets.
    pub(crate) fn status(&self) -> zerocam_status {
        match self {
            CapiError::Null { .. } => ZEROCAM_ERROR_NULL_ARGUMENT,
            CapiError::InvalidHandle { .. } => ZEROCAM_ERROR_INVALID_HANDLE,
            CapiError::WrongType { .. } => ZEROCAM_ERROR_WRONG_HANDLE_TYPE,
            CapiError::InvalidArgument(_) | CapiError::Model(_) => ZEROCAM_ERROR_INVALID_ARGUMENT,
            CapiError::FdTooSmall { .. } => ZEROCAM_ERROR_BAD_FD,
            CapiError::OutOfBounds(_) => ZEROCAM_ERROR_OUT_OF_BOUNDS,
            CapiError::Busy(_) => ZEROCAM_ERROR_BUSY,
            CapiError::BadFd(_) => ZEROCAM_ERROR_BAD_FD,
            CapiError::Unsupported(_) => ZEROCAM_ERROR_UNSUPPORTED,
            CapiError::Tensor(e) => tensor_status(e),
            CapiError::Capture(e) => capture_status(e),
            CapiError::Preprocess(e) => preprocess_status(e),
            CapiError::Panic(_) | CapiError::Poisoned { .. } => ZEROCAM_ERROR_PANIC,
        }
    }
}

/// The status of a tensor error.
fn tensor_status(e: &TensorError) -> zerocam_status {
    use TensorError as E;
    match e {
        // dup(2) of a number that is not open: the caller's fd is bad.
        E::DupFailed {
            errno: nix::errno::Errno::EBADF,
            ..
        } => ZEROCAM_ERROR_BAD_FD,
        E::BadFd { .. }
        | E::NotMappable { .. }
        | E::ShrinkableFile { .. }
        | E::CannotSeal { .. }
        | E::BufferTooSmall { .. } => ZEROCAM_ERROR_BAD_FD,
        E::RegionOutOfBounds { .. } | E::BatchIndexOutOfBounds { .. } | E::NoSuchPlane { .. } => {
            ZEROCAM_ERROR_OUT_OF_BOUNDS
        }
        E::MapConflict { .. } | E::ReadOnly { .. } => ZEROCAM_ERROR_BUSY,
        E::UnsupportedFormat { .. }
        | E::UnsupportedMemory { .. }
        | E::NoFd { .. }
        | E::DmaUnavailable { .. }
        | E::MultiBuffer { .. }
        | E::NotStrided { .. } => ZEROCAM_ERROR_UNSUPPORTED,
        E::DupFailed { .. }
        | E::ShmAlloc { .. }
        | E::DmaAlloc { .. }
        | E::HeapAlloc { .. }
        | E::DmaBufSync { .. } => ZEROCAM_ERROR_IO,
        E::Pbo { .. } | E::PboDisconnected { .. } => ZEROCAM_ERROR_DEVICE,
        _ => ZEROCAM_ERROR_INVALID_ARGUMENT,
    }
}

/// The status of a capture error.
fn capture_status(e: &CaptureError) -> zerocam_status {
    use CaptureError as E;
    match e {
        E::Timeout { .. } => ZEROCAM_ERROR_TIMEOUT,
        E::NoFreeBuffer { .. } | E::FramesHeld { .. } => ZEROCAM_ERROR_BUSY,
        E::NoDevice { .. } | E::NoCamera | E::UnknownCamera { .. } => ZEROCAM_ERROR_NOT_FOUND,
        E::Tensor { source, .. } => tensor_status(source),
        // No publisher at that path: nothing there to connect to.
        E::Share(zerocam_capture::share::SubscribeError::Connect { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            ZEROCAM_ERROR_NOT_FOUND
        }
        #[cfg(feature = "gstreamer")]
        E::Gst(zerocam_capture::gst::GstError::Eos { .. }) => ZEROCAM_ERROR_END_OF_STREAM,
        #[cfg(feature = "gstreamer")]
        E::Gst(zerocam_capture::gst::GstError::Parse { .. }) => ZEROCAM_ERROR_INVALID_ARGUMENT,
        #[cfg(feature = "zenoh")]
        E::Zenoh(z) => zenoh_status(z),
        E::InvalidArgument(zerocam_capture::ArgumentError::FeatureMissing { .. })
        | E::LibcameraUnsupported { .. } => ZEROCAM_ERROR_UNSUPPORTED,
        E::InvalidArgument(_)
        | E::UnsupportedFormat { .. }
        | E::UnsupportedSize { .. }
        | E::UnsupportedColor { .. }
        | E::UnsupportedMode { .. }
        | E::TooFewBuffers { .. }
        | E::NoSuchControl { .. }
        | E::NotCapture { .. } => ZEROCAM_ERROR_INVALID_ARGUMENT,
        E::Open { .. } | E::Ioctl { .. } => ZEROCAM_ERROR_IO,
        _ => ZEROCAM_ERROR_DEVICE,
    }
}

/// The status of a Zenoh error (`zenoh:` sources).
#[cfg(feature = "zenoh")]
fn zenoh_status(e: &zerocam_capture::zenoh_source::ZenohError) -> zerocam_status {
    use zerocam_capture::zenoh_source::ZenohError as Z;
    match e {
        // Nothing published the key in time.
        Z::NoSample { .. } => ZEROCAM_ERROR_TIMEOUT,
        Z::ConfigFile { .. } | Z::Config { .. } | Z::Key { .. } | Z::Format { .. } => {
            ZEROCAM_ERROR_INVALID_ARGUMENT
        }
        Z::Session { .. } => ZEROCAM_ERROR_IO,
        _ => ZEROCAM_ERROR_DEVICE,
    }
}

/// The status of a preprocessor error.
fn preprocess_status(e: &PreprocessError) -> zerocam_status {
    use PreprocessError as E;
    match e {
        E::RingFull { .. } => ZEROCAM_ERROR_BUSY,
        E::NoGpu { .. } | E::NoGpuFeature | E::NoDeviceTakes { .. } => ZEROCAM_ERROR_UNSUPPORTED,
        E::Tensor(t) => tensor_status(t),
        E::Model(_) | E::BatchSize { .. } | E::ZeroRingDepth { .. } => {
            ZEROCAM_ERROR_INVALID_ARGUMENT
        }
        E::Cpu(c) => cpu_status(c),
        _ => ZEROCAM_ERROR_DEVICE,
    }
}

/// The status of a CPU conversion's error.
fn cpu_status(e: &zerocam_preprocess::CpuConvertError) -> zerocam_status {
    use zerocam_preprocess::CpuConvertError as E;
    match e {
        E::CropOutOfBounds { .. } | E::BatchIndex { .. } => ZEROCAM_ERROR_OUT_OF_BOUNDS,
        E::Tensor(t) => tensor_status(t),
        E::UnsupportedSource { .. } | E::SourceTooWide { .. } => ZEROCAM_ERROR_UNSUPPORTED,
        _ => ZEROCAM_ERROR_INVALID_ARGUMENT,
    }
}

thread_local! {
    /// This thread's last failed call's message.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error (an interior NUL, which C
/// cannot print, becomes a space).
/// When the thread is exiting (its thread-locals already destroyed: a call
/// from an `atexit` handler or a TSD destructor) the message is dropped; the
/// status code still says what happened.
pub(crate) fn set_last_error(message: String) {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|last| *last.borrow_mut() = message);
}

/// What `zerocam_last_error` gives once this thread's thread-locals are gone.
const EXITING: &std::ffi::CStr = c"(no message: the thread is exiting)";

/// This thread's last failed call's message, naming the call and the values
/// that were wrong (`"zerocam_tensor_view: region x=6 y=0 4x4 is out of
/// bounds: …"`), or `""` when no call on this thread has failed. The string
/// is zerocam's: valid until the next failed call on this thread or the
/// thread's end; never free it. Read it after the failed call returned, not
/// in the same argument list (`printf("%d %s", zerocam_x(…),
/// zerocam_last_error())`: C leaves the order of evaluation open). Calls made
/// while the thread exits (`atexit` handlers, TSD destructors) still return
/// their status; their message is a fixed one.
#[no_mangle]
pub extern "C" fn zerocam_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|last| last.borrow().as_ptr())
        .unwrap_or(EXITING.as_ptr())
}

/// The name of status `status` (`"ZEROCAM_ERROR_BAD_FD"`), or
/// `"ZEROCAM_UNKNOWN_STATUS"`. A static string; never free it.
#[no_mangle]
pub extern "C" fn zerocam_status_name(status: zerocam_status) -> *const c_char {
    let name: &'static std::ffi::CStr = match status {
        ZEROCAM_OK => c"ZEROCAM_OK",
        ZEROCAM_ERROR_NULL_ARGUMENT => c"ZEROCAM_ERROR_NULL_ARGUMENT",
        ZEROCAM_ERROR_INVALID_HANDLE => c"ZEROCAM_ERROR_INVALID_HANDLE",
        ZEROCAM_ERROR_WRONG_HANDLE_TYPE => c"ZEROCAM_ERROR_WRONG_HANDLE_TYPE",
        ZEROCAM_ERROR_INVALID_ARGUMENT => c"ZEROCAM_ERROR_INVALID_ARGUMENT",
        ZEROCAM_ERROR_BAD_FD => c"ZEROCAM_ERROR_BAD_FD",
        ZEROCAM_ERROR_OUT_OF_BOUNDS => c"ZEROCAM_ERROR_OUT_OF_BOUNDS",
        ZEROCAM_ERROR_BUSY => c"ZEROCAM_ERROR_BUSY",
        ZEROCAM_ERROR_UNSUPPORTED => c"ZEROCAM_ERROR_UNSUPPORTED",
        ZEROCAM_ERROR_NOT_FOUND => c"ZEROCAM_ERROR_NOT_FOUND",
        ZEROCAM_ERROR_TIMEOUT => c"ZEROCAM_ERROR_TIMEOUT",
        ZEROCAM_ERROR_END_OF_STREAM => c"ZEROCAM_ERROR_END_OF_STREAM",
        ZEROCAM_ERROR_IO => c"ZEROCAM_ERROR_IO",
        ZEROCAM_ERROR_DEVICE => c"ZEROCAM_ERROR_DEVICE",
        ZEROCAM_ERROR_PANIC => c"ZEROCAM_ERROR_PANIC",
        _ => c"ZEROCAM_UNKNOWN_STATUS",
    };
    name.as_ptr()
}
