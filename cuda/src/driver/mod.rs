//! The CUDA driver library, loaded at run time: [`Driver`] resolves the entry
//! points zerocam calls from `libcuda.so.1` (or `ZEROCAM_CUDA_LIBRARY`) once,
//! and turns their `CUresult`s into [`CudaError`]s named by `cuGetErrorName`.
//!
//! Why the driver API and `libloading` (docs/cuda.md says more): `libcuda.so.1`
//! comes with the NVIDIA driver on every machine that can run CUDA, where the
//! runtime (`libcudart.so.12`) is versioned with a toolkit an application may
//! not ship; and a table of the ~25 entry points we call, each declared here
//! from `cuda.h`, keeps the build free of any CUDA version choice (`cudarc`
//! asks for one at build time) and lets the tests load a double of the library.

pub(crate) mod ffi;

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use ffi::{CuDevice, CuDevicePtr, CuEglFrame, CuHandle, CuResult, CUDA_SUCCESS};

use crate::{CudaError, CudaUnavailable, Result};

/// The library loaded when `ZEROCAM_CUDA_LIBRARY` is unset: the driver's
/// soname, installed with the NVIDIA driver (not with a toolkit).
pub const DEFAULT_LIBRARY: &str = "libcuda.so.1";

/// Environment variable naming another driver library to load (a path or a
/// soname).
pub const LIBRARY_ENV: &str = "ZEROCAM_CUDA_LIBRARY";

macro_rules! entry_points {
    ($( $name:ident ( $($arg:ty),* ); )*) => {
        /// The entry points, resolved once; each is `extern "C"` and returns a `CUresult`.
        #[allow(non_snake_case)]
        #[cfg_attr(not(feature = "gl"), allow(dead_code))] // the graphics interop entry points
        pub(crate) struct EntryPoints {
            $( pub $name: unsafe extern "C" fn($($arg),*) -> CuResult, )*
        }

        impl EntryPoints {
            /// Resolves every entry point, or names the first one missing.
            fn resolve(lib: &libloading::Library) -> std::result::Result<EntryPoints, &'static str> {
                Ok(EntryPoints {
                    $( $name: {
                        let name = concat!(stringify!($name), "\0");
                        // SAFETY: the symbol is declared with its `cuda.h` signature
                        // above; the copied fn pointer is used only while the
                        // `Library` (kept beside it in `Driver`) stays loaded.
                        let symbol = unsafe {
                            type F = unsafe extern "C" fn($($arg),*) -> CuResult;
                            lib.get::<F>(name.as_bytes()).or_else(|e| {
                                // An older driver's name of the same signature.
                                let older = older_name(stringify!($name)).ok_or(e)?;
                                log::info!("CUDA driver without {}: using {older}", stringify!($name));
                                lib.get::<F>(older.as_bytes())
                            })
                        };
                        *symbol.map_err(|_| stringify!($name))?
                    }, )*
                })
            }
        }
    };
}

/// The name an older driver gives the entry point `name`, where it has the
/// same C signature: CUDA 11.0 added `cuDevicePrimaryCtxRelease_v2` (JetPack
/// 4's CUDA 10.2 has only the plain name), CUDA 4.0 the context and stream
/// `_v2`s. NUL-terminated. The memory calls' plain names are not listed:
/// they take the 32-bit device pointers of the ABI before CUDA 3.2.
fn older_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "cuDevicePrimaryCtxRelease_v2" => "cuDevicePrimaryCtxRelease\0",
        "cuCtxPushCurrent_v2" => "cuCtxPushCurrent\0",
        "cuCtxPopCurrent_v2" => "cuCtxPopCurrent\0",
        "cuStreamDestroy_v2" => "cuStreamDestroy\0",
        _ => return None,
    })
}

entry_points! {
    cuInit(c_uint);
    cuDriverGetVersion(*mut c_int);
    cuDeviceGetCount(*mut c_int);
    cuDeviceGet(*mut CuDevice, c_int);
    cuDeviceGetName(*mut c_char, c_int, CuDevice);
    cuDeviceGetAttribute(*mut c_int, c_int, CuDevice);
    cuDevicePrimaryCtxRetain(*mut CuHandle, CuDevice);
    cuDevicePrimaryCtxRelease_v2(CuDevice);
    cuCtxPushCurrent_v2(CuHandle);
    cuCtxPopCurrent_v2(*mut CuHandle);
    cuGetErrorName(CuResult, *mut *const c_char);
    cuStreamCreate(*mut CuHandle, c_uint);
    cuStreamDestroy_v2(CuHandle);
    cuStreamSynchronize(CuHandle);
    cuMemHostRegister_v2(*mut c_void, usize, c_uint);
    cuMemHostUnregister(*mut c_void);
    cuMemHostGetDevicePointer_v2(*mut CuDevicePtr, *mut c_void, c_uint);
    cuMemcpyDtoHAsync_v2(*mut c_void, CuDevicePtr, usize, CuHandle);
    cuMemcpyHtoDAsync_v2(CuDevicePtr, *const c_void, usize, CuHandle);
    cuMemAlloc_v2(*mut CuDevicePtr, usize);
    cuMemFree_v2(CuDevicePtr);
    cuPointerGetAttribute(*mut c_void, c_int, CuDevicePtr);
    cuGraphicsGLRegisterBuffer(*mut CuHandle, c_uint, c_uint);
    cuGraphicsEGLRegisterImage(*mut CuHandle, *mut c_void, c_uint);
    cuGraphicsResourceGetMappedEglFrame(*mut CuEglFrame, CuHandle, c_uint, c_uint);
    cuGraphicsMapResources(c_uint, *mut CuHandle, CuHandle);
    cuGraphicsUnmapResources(c_uint, *mut CuHandle, CuHandle);
    cuGraphicsResourceGetMappedPointer_v2(*mut CuDevicePtr, *mut usize, CuHandle);
    cuGraphicsUnregisterResource(CuHandle);
}

/// Set in the child by a `pthread_atfork` handler (registered with the
/// first load): until a fork, [`Driver::check_process`] makes no syscall.
static FORKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn mark_forked_child() {
    FORKED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Registers [`mark_forked_child`] once per process.
fn watch_forks() {
    static WATCHING: std::sync::Once = std::sync::Once::new();
    WATCHING.call_once(|| {
        // SAFETY: the child handler only stores to an atomic
        // (async-signal-safe); no prepare or parent handler.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(mark_forked_child)) };
        if rc != 0 {
            // Without the handler, every check pays for the pid.
            FORKED.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
}

/// The process that loaded a driver first (the one whose `cuInit` the
/// driver's state belongs to).
static LOADED_BY: OnceLock<u32> = OnceLock::new();

/// A loaded CUDA driver library and its entry points.
pub struct Driver {
    pub(crate) api: EntryPoints,
    library: PathBuf,
    version: c_int,
    /// The process that loaded it (`cuInit`): a child made by `fork()`
    /// inherits the loaded library and every handle, none of which the
    /// driver supports there.
    pid: u32,
    // Last: the entry points above point into it.
    _lib: libloading::Library,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("library", &self.library)
            .field("version", &self.version)
            .finish()
    }
}

impl Driver {
    /// Loads `library` (a path or a soname), resolves the entry points and
    /// calls `cuInit(0)`.
    ///
    /// # Errors
    /// [`CudaError::Unavailable`] when the library cannot be loaded or lacks an
    /// entry point; [`CudaError::Driver`] when `cuInit` fails (no device, a
    /// driver/kernel-module mismatch).
    pub fn load(library: impl AsRef<Path>) -> Result<Arc<Driver>> {
        let library = library.as_ref().to_path_buf();
        let unavailable = |reason: String| {
            CudaError::Unavailable(CudaUnavailable {
                library: library.display().to_string(),
                reason,
            })
        };
        // A driver loaded (and initialised) by a parent is not usable in a
        // fork() child, whichever handle or library path the child asks for.
        watch_forks();
        let first = *LOADED_BY.get_or_init(std::process::id);
        if first != std::process::id() {
            return Err(CudaError::Forked {
                parent: first,
                child: std::process::id(),
            });
        }
        // SAFETY: loading runs the library's initialisers; libcuda's (and the
        // test double's) do nothing a Rust program must guard against.
        let lib = unsafe { libloading::Library::new(&library) }
            .map_err(|e| unavailable(e.to_string()))?;
        let api = EntryPoints::resolve(&lib).map_err(|symbol| {
            unavailable(format!(
                "{} lacks the entry point {symbol}",
                library.display()
            ))
        })?;
        let mut driver = Driver {
            api,
            library,
            version: 0,
            pid: std::process::id(),
            _lib: lib,
        };
        // SAFETY: cuInit takes flags (must be 0).
        driver.check("cuInit", unsafe { (driver.api.cuInit)(0) })?;
        let mut version = 0;
        // SAFETY: a valid out-pointer.
        driver.check("cuDriverGetVersion", unsafe {
            (driver.api.cuDriverGetVersion)(&mut version)
        })?;
        driver.version = version;
        Ok(Arc::new(driver))
    }

    /// The process's driver: [`LIBRARY_ENV`] or [`DEFAULT_LIBRARY`], loaded on
    /// first use; a failure is remembered (not retried).
    ///
    /// # Errors
    /// As [`load`](Driver::load), the same error on every call.
    pub fn shared() -> Result<Arc<Driver>> {
        static SHARED: OnceLock<std::result::Result<Arc<Driver>, CudaError>> = OnceLock::new();
        match SHARED.get_or_init(|| Driver::load(default_library())) {
            Ok(driver) => Ok(Arc::clone(driver)),
            Err(e) => Err(e.clone_load_error()),
        }
    }

    /// The library this driver was loaded from.
    pub fn library(&self) -> &Path {
        &self.library
    }

    /// `cuDriverGetVersion`: 1000 × major + 10 × minor (12080 is CUDA 12.8).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// `Ok(())` for `CUDA_SUCCESS`, else [`CudaError::Driver`] for `call`, named
    /// by `cuGetErrorName`.
    /// `CudaError::Forked` in a child of the process that loaded the driver:
    /// CUDA's state does not survive `fork()` (the driver's threads and
    /// contexts are the parent's), so nothing may be called there, not even
    /// to release what the parent made.
    ///
    /// # Errors
    /// [`CudaError::Forked`] naming both processes.
    pub fn check_process(&self) -> Result<()> {
        // An atomic load on every call; the pid (a syscall) only once a
        // fork() happened.
        if !FORKED.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let now = std::process::id();
        if now == self.pid {
            return Ok(());
        }
        Err(CudaError::Forked {
            parent: self.pid,
            child: now,
        })
    }

    pub(crate) fn check(&self, call: &'static str, code: CuResult) -> Result<()> {
        if code == CUDA_SUCCESS {
            return Ok(());
        }
        Err(CudaError::Driver {
            call,
            code,
            name: self.error_name(code),
        })
    }

    /// `cuGetErrorName(code)`, or `CUDA error <code>` for a code it does not know.
    pub fn error_name(&self, code: i32) -> String {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; on success the driver points it at a
        // static NUL-terminated string.
        let ok = unsafe { (self.api.cuGetErrorName)(code, &mut name) } == CUDA_SUCCESS;
        if ok && !name.is_null() {
            // SAFETY: non-null, static and NUL-terminated (above).
            return unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned();
        }
        format!("CUDA error {code}")
    }
}

/// The library [`Driver::shared`] loads.
pub fn default_library() -> PathBuf {
    std::env::var_os(LIBRARY_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_LIBRARY), PathBuf::from)
}

/// Whether the CUDA driver library loads, resolves and initialises (at least
/// one device present). Probed once per process.
pub fn is_cuda_available() -> bool {
    Driver::shared().is_ok_and(|d| d.device_count().is_ok_and(|n| n > 0))
}

impl Driver {
    /// `cuDeviceGetCount`.
    ///
    /// # Errors
    /// [`CudaError::Driver`].
    pub fn device_count(&self) -> Result<i32> {
        let mut n = 0;
        // SAFETY: a valid out-pointer.
        self.check("cuDeviceGetCount", unsafe {
            (self.api.cuDeviceGetCount)(&mut n)
        })?;
        Ok(n)
    }
}
