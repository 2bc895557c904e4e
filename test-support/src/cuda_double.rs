//! The CUDA driver test double (`cuda/tests/double/`): building it once per
//! test binary, loading its `zcd_*` controls, and the lock that serialises tests
//! using it (its state is process-global).
//!
//! ```ignore
//! let _serial = double::serial(); // also resets the double
//! let cuda = zerocam_cuda::Cuda::with_library(double::library(), 0)?;
//! assert!(double::double().violations().is_empty());
//! ```

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::SystemTime;

/// The double's sources; its root is `cuda_double.rs`.
/// `cuda/tests/double`, beside this crate.
const DOUBLE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../cuda/tests/double");

/// The built double, `cuda-double/libcuda_double.so` in the profile's build
/// folder (`target/debug`):
/// compiled with the rustc that built the tests the first time a test binary
/// asks (and whenever a file in `tests/double/` is newer than it).
///
/// Pass this path unchanged to `Cuda::with_library` so the driver and
/// [`double()`] share one loaded copy.
pub fn library() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| build("libcuda_double.so", &[]))
}

/// The double as a CUDA 10.2 driver (JetPack 4's), built with `--cfg
/// zcd_cuda10` to `cuda-double/libcuda_double_cuda10.so`: version 10020,
/// without the `_v2` entry points CUDA 11.0 added beside the older names of
/// the same signature (`cuDevicePrimaryCtxRelease_v2`, and the context and
/// stream calls), and without attributes 99 and 113. A library of its own,
/// so its state is its own ([`double_cuda10`]).
pub fn library_cuda10() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| build("libcuda_double_cuda10.so", &["--cfg", "zcd_cuda10"]))
}

/// Newest modification time of the double's sources.
fn newest_source() -> SystemTime {
    let entries = std::fs::read_dir(DOUBLE_DIR)
        .unwrap_or_else(|e| panic!("reading the CUDA test double's sources in {DOUBLE_DIR}: {e}"));
    entries
        .map(|entry| {
            entry
                .and_then(|entry| entry.metadata())
                .and_then(|meta| meta.modified())
                .unwrap_or_else(|e| panic!("reading {DOUBLE_DIR}: {e}"))
        })
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// `library` exists and is newer than every source.
fn fresh(library: &Path, sources: SystemTime) -> bool {
    std::fs::metadata(library)
        .and_then(|meta| meta.modified())
        .is_ok_and(|built| built > sources)
}

/// Builds the double unless it is fresh. Parallel test binaries each compile
/// to their own temporary name in the same directory and `rename` it over the
/// final name (atomic), so none ever sees a half-written library.
fn build(name: &str, cfg: &[&str]) -> PathBuf {
    // `target/<profile>/cuda-double`, above this crate's `OUT_DIR`
    // (`target/<profile>/build/zerocam-test-support-<hash>/out`): one copy
    // whatever features the build gave this crate, so a lab run built with
    // others (its hash differs) finds the double the host tests built.
    let out = Path::new(env!("OUT_DIR"));
    let dir = out.ancestors().nth(3).unwrap_or(out).join("cuda-double");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let library = dir.join(name);
    let sources = newest_source();
    if fresh(&library, sources) {
        return library;
    }

    static ATTEMPT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temporary = dir.join(format!(
        "{name}.{}.{nanos}.{}.tmp",
        std::process::id(),
        ATTEMPT.fetch_add(1, Ordering::Relaxed)
    ));
    let rustc = env!("ZEROCAM_BUILD_RUSTC");
    if !Path::new(rustc).exists() && library.exists() && rustc.contains('/') {
        // The kernel lab's guest runs the host's test binaries without a
        // toolchain: tests/lab/test-all built the double on the host first
        // (tests/cuda_double_build.rs).
        eprintln!("no {rustc} here: using the CUDA test double built before");
        return library;
    }
    let root = Path::new(DOUBLE_DIR).join("cuda_double.rs");
    let output = Command::new(rustc)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "cdylib",
            "--crate-name",
            "cuda_double",
            "-O",
        ])
        .args(cfg)
        .arg("-o")
        .arg(&temporary)
        .arg(&root)
        .output()
        .unwrap_or_else(|e| panic!("running {rustc} to build the CUDA test double: {e}"));
    if !output.status.success() {
        let _ = std::fs::remove_file(&temporary);
        panic!(
            "{rustc} failed to build the CUDA test double {} ({}):\n{}",
            root.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    if fresh(&library, sources) {
        // Another test binary finished first; keep its copy (it may be loaded).
        let _ = std::fs::remove_file(&temporary);
    } else {
        std::fs::rename(&temporary, &library).unwrap_or_else(|e| {
            panic!(
                "renaming {} to {}: {e}",
                temporary.display(),
                library.display()
            )
        });
    }
    library
}

/// The double's `zcd_*` controls, loaded from [`library()`].
pub struct Double {
    reset: unsafe extern "C" fn(),
    count: unsafe extern "C" fn(*const c_char) -> u64,
    gl_checks_skipped: unsafe extern "C" fn() -> u64,
    live_host_registrations: unsafe extern "C" fn() -> u64,
    live_graphics_resources: unsafe extern "C" fn() -> u64,
    live_streams: unsafe extern "C" fn() -> u64,
    mapped_resources: unsafe extern "C" fn() -> u64,
    violations: unsafe extern "C" fn(*mut c_char, usize) -> usize,
    events: unsafe extern "C" fn(*mut c_char, usize) -> usize,
    fail_next: unsafe extern "C" fn(*const c_char, c_int),
    set_gl_buffer_size: unsafe extern "C" fn(c_uint, usize),
    set_egl_frame: unsafe extern "C" fn(*mut c_void, c_uint, c_uint, c_uint, c_uint),
    set_gl_fill: unsafe extern "C" fn(u8),
    set_device_count: unsafe extern "C" fn(c_int),
    set_egl_frame_kind: unsafe extern "C" fn(*mut c_void, c_int, c_int),
    set_attribute: unsafe extern "C" fn(c_int, c_int),
    forget_attribute: unsafe extern "C" fn(c_int),
    register_elsewhere: unsafe extern "C" fn(*mut c_void, usize) -> c_int,
    unregister_elsewhere: unsafe extern "C" fn(*mut c_void) -> c_int,
    queue_write: unsafe extern "C" fn(*mut c_void, u64, u8, usize) -> c_int,
    refuse_pfnmap: unsafe extern "C" fn(c_int),
    live_device_allocations: unsafe extern "C" fn() -> u64,
    // Last: the fn pointers above point into it.
    _library: libloading::Library,
}

/// One export of `library`, as a fn pointer of type `T`.
///
/// # Safety
/// `T` is the export's C signature.
unsafe fn export<T: Copy>(library: &libloading::Library, name: &str) -> T {
    // SAFETY: `T` is the export's signature (the caller's promise).
    let symbol = unsafe { library.get::<T>(name.as_bytes()) };
    *symbol.unwrap_or_else(|e| panic!("the CUDA test double lacks {name}: {e}"))
}

impl Double {
    fn load(path: &Path) -> Double {
        // SAFETY: the double's initialisers are Rust std's; it has no others.
        let library = unsafe { libloading::Library::new(path) }
            .unwrap_or_else(|e| panic!("loading the CUDA test double {}: {e}", path.display()));
        // SAFETY: each type below is the signature of the `zcd_*` export of
        // that name in tests/double/control.rs; the fn pointers live in
        // `Double` beside the library, which stays loaded as long as they do.
        unsafe {
            Double {
                reset: export(&library, "zcd_reset"),
                count: export(&library, "zcd_count"),
                gl_checks_skipped: export(&library, "zcd_gl_checks_skipped"),
                live_host_registrations: export(&library, "zcd_live_host_registrations"),
                live_graphics_resources: export(&library, "zcd_live_graphics_resources"),
                live_streams: export(&library, "zcd_live_streams"),
                mapped_resources: export(&library, "zcd_mapped_resources"),
                violations: export(&library, "zcd_violations"),
                events: export(&library, "zcd_events"),
                fail_next: export(&library, "zcd_fail_next"),
                set_gl_buffer_size: export(&library, "zcd_set_gl_buffer_size"),
                set_egl_frame: export(&library, "zcd_set_egl_frame"),
                set_gl_fill: export(&library, "zcd_set_gl_fill"),
                set_device_count: export(&library, "zcd_set_device_count"),
                set_egl_frame_kind: export(&library, "zcd_set_egl_frame_kind"),
                set_attribute: export(&library, "zcd_set_attribute"),
                forget_attribute: export(&library, "zcd_forget_attribute"),
                register_elsewhere: export(&library, "zcd_register_elsewhere"),
                unregister_elsewhere: export(&library, "zcd_unregister_elsewhere"),
                queue_write: export(&library, "zcd_queue_write"),
                refuse_pfnmap: export(&library, "zcd_refuse_pfnmap"),
                live_device_allocations: export(&library, "zcd_live_device_allocations"),
                _library: library,
            }
        }
    }

    /// Forgets everything: tables, counts, events, violations, faults,
    /// contexts, settings; the double is uninitialised until the next `cuInit`.
    pub fn reset(&self) {
        // SAFETY: no arguments.
        unsafe { (self.reset)() }
    }

    /// Calls of entry point `name` (e.g. `"cuMemHostRegister_v2"`) since the
    /// last reset, failed ones included.
    pub fn count(&self, name: &str) -> u64 {
        let name = CString::new(name).expect("an entry point name has no NUL");
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { (self.count)(name.as_ptr()) }
    }

    /// GL buffer liveness checks skipped because the process has no `glIsBuffer`.
    pub fn gl_checks_skipped(&self) -> u64 {
        // SAFETY: no arguments.
        unsafe { (self.gl_checks_skipped)() }
    }

    /// Registered host ranges.
    pub fn live_host_registrations(&self) -> u64 {
        // SAFETY: no arguments.
        unsafe { (self.live_host_registrations)() }
    }

    /// Registered graphics resources (GL buffers and EGLImages).
    pub fn live_graphics_resources(&self) -> u64 {
        // SAFETY: no arguments.
        unsafe { (self.live_graphics_resources)() }
    }

    /// Streams created and not destroyed.
    pub fn live_streams(&self) -> u64 {
        // SAFETY: no arguments.
        unsafe { (self.live_streams)() }
    }

    /// Graphics resources currently mapped.
    pub fn mapped_resources(&self) -> u64 {
        // SAFETY: no arguments.
        unsafe { (self.mapped_resources)() }
    }

    /// Contract violations recorded since the last reset (e.g.
    /// `"unregister after unmap: 0x7f.."`), oldest first.
    pub fn violations(&self) -> Vec<String> {
        lines(self.violations)
    }

    /// The event log since the last reset (`"register_host 0x..+N"`,
    /// `"unregister_gl 3"`, `"map"`, ...), oldest first.
    pub fn events(&self) -> Vec<String> {
        lines(self.events)
    }

    /// The next call of entry point `name` returns `code` and does nothing
    /// (queued: calling this twice fails the next two calls).
    pub fn fail_next(&self, name: &str, code: i32) {
        let name = CString::new(name).expect("an entry point name has no NUL");
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { (self.fail_next)(name.as_ptr(), code) }
    }

    /// The size `cuGraphicsResourceGetMappedPointer_v2` reports for GL buffer
    /// `buffer` (default 0x1000).
    pub fn set_gl_buffer_size(&self, buffer: u32, size: usize) {
        // SAFETY: plain values.
        unsafe { (self.set_gl_buffer_size)(buffer, size) }
    }

    /// The frame `cuGraphicsResourceGetMappedEglFrame` reports for `image`
    /// (an EGLImage's address, never dereferenced: a number here): `planes`
    /// (at most 3) pitch planes at `image + 0x1000 * (i + 1)`.
    pub fn set_egl_frame(&self, image: usize, width: u32, height: u32, pitch: u32, planes: u32) {
        // SAFETY: the double stores the address and never dereferences it.
        unsafe { (self.set_egl_frame)(image as *mut c_void, width, height, pitch, planes) }
    }

    /// The byte `cuMemcpyDtoH_v2` writes when copying from a mapped GL buffer
    /// (default 0).
    pub fn set_gl_fill(&self, byte: u8) {
        // SAFETY: a plain value.
        unsafe { (self.set_gl_fill)(byte) }
    }

    /// Devices the double reports (default 1); with 0, `cuDeviceGetCount`
    /// gives 0 and `cuDeviceGet` CUDA_ERROR_NO_DEVICE.
    pub fn set_device_count(&self, n: i32) {
        // SAFETY: a plain value.
        unsafe { (self.set_device_count)(n) }
    }

    /// The frame type (`CUeglFrameType`: 0 array, i.e. block-linear; 1
    /// pitch) and `CUeglColorFormat` the frame of `image` reports (0: every
    /// image without its own), as [`set_egl_frame`](Double::set_egl_frame)
    /// set its size; by default pitch, and the colour format of its planes
    /// (`YUV420_SEMIPLANAR` for 2).
    pub fn set_egl_frame_kind(&self, image: usize, frame_type: i32, color_format: i32) {
        // SAFETY: the double stores the address and never dereferences it.
        unsafe { (self.set_egl_frame_kind)(image as *mut c_void, frame_type, color_format) }
    }

    /// Device attribute `attribute` reads as `value` until the next reset.
    pub fn set_attribute(&self, attribute: i32, value: i32) {
        // SAFETY: plain values.
        unsafe { (self.set_attribute)(attribute, value) }
    }

    /// Device attribute `attribute` is unknown to the driver (one older
    /// than it): `cuDeviceGetAttribute` answers CUDA_ERROR_INVALID_VALUE.
    pub fn forget_attribute(&self, attribute: i32) {
        // SAFETY: a plain value.
        unsafe { (self.forget_attribute)(attribute) }
    }

    /// Whether `cuMemHostRegister` refuses mappings of pages a discrete
    /// GPU's driver cannot pin (`VM_PFNMAP`/`VM_IO` in `/proc/self/smaps`: the
    /// DMA heap's buffers) with CUDA_ERROR_INVALID_VALUE, as NVIDIA's does
    /// since driver 550 (default off: the double is an integrated device).
    pub fn refuse_pfnmap(&self, on: bool) {
        // SAFETY: a plain value.
        unsafe { (self.refuse_pfnmap)(c_int::from(on)) }
    }

    /// Device allocations (`cuMemAlloc`) alive.
    pub fn live_device_allocations(&self) -> u64 {
        // SAFETY: no arguments.
        unsafe { (self.live_device_allocations)() }
    }

    /// Registers `[addr, addr + len)` as another library of the process
    /// would; returns the `CUresult`.
    pub fn register_elsewhere(&self, addr: usize, len: usize) -> i32 {
        // SAFETY: the double records the range and checks it is mapped; it
        // never reads or writes it.
        unsafe { (self.register_elsewhere)(addr as *mut c_void, len) }
    }

    /// The other library unregisters its range at `addr`; returns the `CUresult`.
    pub fn unregister_elsewhere(&self, addr: usize) -> i32 {
        // SAFETY: as above.
        unsafe { (self.unregister_elsewhere)(addr as *mut c_void) }
    }

    /// Queues on `stream` a kernel's write of `byte` over `[dptr, dptr + len)`;
    /// returns the `CUresult`.
    ///
    /// # Safety
    /// The range stays mapped writable until the write runs (when the
    /// stream is synchronized or destroyed).
    pub unsafe fn queue_write(&self, stream: *mut c_void, dptr: u64, byte: u8, len: usize) -> i32 {
        // SAFETY: forwarded from the caller.
        unsafe { (self.queue_write)(stream, dptr, byte, len) }
    }
}

/// Reads a `\n`-joined list through `zcd_violations` / `zcd_events`.
fn lines(read: unsafe extern "C" fn(*mut c_char, usize) -> usize) -> Vec<String> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        // SAFETY: `buf` holds `buf.len()` writable bytes (none on the first,
        // sizing, call); the double writes at most that many.
        let full = unsafe { read(buf.as_mut_ptr().cast(), buf.len()) };
        if full < buf.len() {
            buf.truncate(full);
            break;
        }
        // Too small (or grown meanwhile): room for the text and its NUL.
        buf.resize(full + 1, 0);
    }
    String::from_utf8_lossy(&buf)
        .split('\n')
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The double's controls, loaded once per test binary.
pub fn double() -> &'static Double {
    static DOUBLE: OnceLock<Double> = OnceLock::new();
    DOUBLE.get_or_init(|| Double::load(library()))
}

/// The controls of [`library_cuda10`]'s double.
pub fn double_cuda10() -> &'static Double {
    static DOUBLE: OnceLock<Double> = OnceLock::new();
    DOUBLE.get_or_init(|| Double::load(library_cuda10()))
}

/// Serialises the tests that use the double (its state is process-global):
/// hold the guard for the whole test. Also resets the double. A test that
/// panicked while holding it does not poison it for the others.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    double().reset();
    guard
}
