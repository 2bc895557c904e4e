//! A test double of the CUDA driver API (`libcuda.so.1`) for zerocam-cuda's
//! tests: one integrated device ("zerocam test double", cc 8.7, driver
//! 12080) that keeps tables of what callers registered, mapped and created,
//! and records contract violations a real driver would not report (memory
//! unregistered after it was unmapped, GL buffers unregistered after they
//! were deleted, resources unregistered while mapped).
//!
//! Built by zerocam-test-support (`test-support/src/cuda_double.rs`) with
//! `rustc --edition 2021 --crate-type cdylib -O`; std only. The contract is
//! the CUDA driver API's documented behaviour (README.md beside this file); the `zcd_*` exports (in `control.rs`) let tests inspect
//! and steer the state.
//!
//! Layout: this file holds the shared state, the entry-point wrapper and the
//! few libc functions the double needs; `device.rs` (init, devices,
//! attributes, contexts, error names), `memory.rs` (host registration,
//! pointer attributes, the legacy-stream copy), `stream.rs` (streams and the
//! work queued on them), `graphics.rs` (GL and EGL interop) and `control.rs`
//! (`zcd_*`) hold the exports.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
// The exports keep CUDA's own names (`cuMemHostRegister_v2`).
#![allow(non_snake_case)]

mod alloc;
mod control;
mod device;
mod graphics;
mod memory;
mod stream;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ffi::{c_char, c_int, c_long, c_uint, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

// ---------------------------------------------------------------------------
// CUresult codes the double returns (names: `device.rs`, `cuGetErrorName`)
// ---------------------------------------------------------------------------

/// `CUresult`.
type CuResult = c_int;
/// What an entry point's body returns: `Err(code)` is returned as is.
type Res = Result<(), CuResult>;

const SUCCESS: CuResult = 0;
const INVALID_VALUE: CuResult = 1;
const NOT_INITIALIZED: CuResult = 3;
const NO_DEVICE: CuResult = 100;
const INVALID_DEVICE: CuResult = 101;
const INVALID_CONTEXT: CuResult = 201;
const ALREADY_MAPPED: CuResult = 208;
const NOT_MAPPED: CuResult = 211;
const INVALID_HANDLE: CuResult = 400;
const HOST_MEMORY_ALREADY_REGISTERED: CuResult = 712;
const HOST_MEMORY_NOT_REGISTERED: CuResult = 713;
const NOT_SUPPORTED: CuResult = 801;

// ---------------------------------------------------------------------------
// libc (glibc, x86_64 and aarch64 Linux: the constants are the same on both)
// ---------------------------------------------------------------------------

mod sys {
    use std::ffi::{c_char, c_int, c_long, c_void};

    extern "C" {
        pub fn msync(addr: *mut c_void, len: usize, flags: c_int) -> c_int;
        pub fn sysconf(name: c_int) -> c_long;
        pub fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
        pub fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        pub fn dlclose(handle: *mut c_void) -> c_int;
    }

    pub const MS_ASYNC: c_int = 1;
    pub const ENOMEM: c_int = 12;
    pub const SC_PAGESIZE: c_int = 30;
    pub const RTLD_NOW: c_int = 2;
    pub const RTLD_NOLOAD: c_int = 4;
    /// `RTLD_DEFAULT`: the global symbol scope.
    pub const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();
}

/// The page size (`sysconf(_SC_PAGESIZE)`, 4096 if that says nothing useful).
fn page_size() -> usize {
    // SAFETY: sysconf only reads a configuration value.
    let page: c_long = unsafe { sys::sysconf(sys::SC_PAGESIZE) };
    match usize::try_from(page) {
        Ok(page) if page.is_power_of_two() => page,
        _ => 4096,
    }
}

/// Whether every page of `[start, start + len)` is mapped: `msync` on the
/// page-rounded range fails with ENOMEM when part of it is not.
fn is_mapped(start: usize, len: usize) -> bool {
    let page = page_size();
    let low = start & !(page - 1);
    let Some(high) = start
        .checked_add(len.max(1))
        .and_then(|end| end.checked_next_multiple_of(page))
    else {
        return false;
    };
    // SAFETY: msync with MS_ASYNC on a page-aligned range touches no memory;
    // on unmapped pages it fails with ENOMEM instead of faulting.
    let rc = unsafe { sys::msync(low as *mut c_void, high - low, sys::MS_ASYNC) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(sys::ENOMEM)
}

// ---------------------------------------------------------------------------
// State: one Mutex in a static
// ---------------------------------------------------------------------------

/// Handle of device `d`'s primary context: `PRIMARY_CTX_BASE + d * 0x100`.
const PRIMARY_CTX_BASE: usize = 0x0C7C_0000;

/// Fresh non-null handles (streams, graphics resources); never reused, not
/// even across `zcd_reset`, so a stale handle is never mistaken for a new one.
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(1);

fn fresh_handle() -> usize {
    0x0DB1_0000 + NEXT_HANDLE.fetch_add(1, Ordering::Relaxed) * 0x10
}

/// Per-thread ids for the context stacks (CUDA's current context is per thread).
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

thread_local! {
    // Const-initialised and without Drop: usable even during thread teardown.
    static THREAD: Cell<u64> = const { Cell::new(0) };
}

/// The calling thread's id for the context stacks (0 if it cannot have one).
fn thread_id() -> u64 {
    THREAD
        .try_with(|id| {
            if id.get() == 0 {
                id.set(NEXT_THREAD.fetch_add(1, Ordering::Relaxed));
            }
            id.get()
        })
        .unwrap_or(0)
}

/// What a graphics resource was registered from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A GL buffer name.
    Gl(c_uint),
    /// An EGLImage's address.
    Egl(usize),
}

/// A registered graphics resource.
struct Resource {
    kind: Kind,
    mapped: bool,
}

/// The frame `zcd_set_egl_frame` configured for an EGLImage.
#[derive(Clone, Copy)]
struct EglFrameConfig {
    width: c_uint,
    height: c_uint,
    pitch: c_uint,
    planes: c_uint,
    /// `CUeglFrameType`: 1 pitch, 0 array (block-linear).
    frame_type: c_int,
    /// `CUeglColorFormat`; negative: the one of `planes` (3: YUV420_PLANAR,
    /// 2: YUV420_SEMIPLANAR, 1: RGBA).
    color_format: c_int,
}

const DEFAULT_EGL_FRAME: EglFrameConfig = EglFrameConfig {
    width: 0,
    height: 0,
    pitch: 0,
    planes: 1,
    frame_type: 1,
    color_format: -1,
};
const DEFAULT_GL_BUFFER_SIZE: usize = 0x1000;

/// Everything the double knows; `zcd_reset` puts back `State::NEW`.
struct State {
    initialized: bool,
    device_count: c_int,
    /// Device → primary context retain count.
    primary_retains: BTreeMap<c_int, u32>,
    /// Thread → its context stack (top last).
    ctx_stacks: Vec<(u64, Vec<usize>)>,
    /// Registered host ranges: start → bytes.
    host: BTreeMap<usize, usize>,
    /// Device allocations (`cuMemAlloc`): address → bytes.
    device_memory: BTreeMap<usize, usize>,
    /// `cuMemHostRegister` refuses `VM_PFNMAP`/`VM_IO` mappings
    /// (`zcd_refuse_pfnmap`).
    refuse_pfnmap: bool,
    /// The starts of the host ranges "another library" registered
    /// (`zcd_register_elsewhere`).
    elsewhere: BTreeSet<usize>,
    /// Device attributes set by `zcd_set_attribute` (`Some`) or made unknown
    /// by `zcd_forget_attribute` (`None`), over `device.rs`'s defaults.
    attributes: BTreeMap<c_int, Option<c_int>>,
    /// Graphics resources by handle.
    resources: BTreeMap<usize, Resource>,
    /// Live streams by handle, with the work queued on them.
    streams: BTreeMap<usize, stream::Stream>,
    /// Calls per entry point (and the pseudo-name `gl_checks_skipped`).
    counts: BTreeMap<&'static str, u64>,
    /// Codes the next calls of an entry point return (`zcd_fail_next`).
    faults: BTreeMap<String, VecDeque<CuResult>>,
    gl_sizes: BTreeMap<c_uint, usize>,
    egl_frames: BTreeMap<usize, EglFrameConfig>,
    gl_fill: u8,
    events: Vec<String>,
    violations: Vec<String>,
}

impl State {
    const NEW: State = State {
        initialized: false,
        device_count: 1,
        primary_retains: BTreeMap::new(),
        ctx_stacks: Vec::new(),
        host: BTreeMap::new(),
        device_memory: BTreeMap::new(),
        refuse_pfnmap: false,
        elsewhere: BTreeSet::new(),
        attributes: BTreeMap::new(),
        resources: BTreeMap::new(),
        streams: BTreeMap::new(),
        counts: BTreeMap::new(),
        faults: BTreeMap::new(),
        gl_sizes: BTreeMap::new(),
        egl_frames: BTreeMap::new(),
        gl_fill: 0,
        events: Vec::new(),
        violations: Vec::new(),
    };

    fn bump(&mut self, name: &'static str) {
        *self.counts.entry(name).or_insert(0) += 1;
    }

    fn need_init(&self) -> Res {
        if self.initialized {
            Ok(())
        } else {
            Err(NOT_INITIALIZED)
        }
    }

    /// `dev` is a valid device ordinal.
    fn need_device(&self, dev: c_int) -> Res {
        if (0..self.device_count).contains(&dev) {
            Ok(())
        } else {
            Err(INVALID_DEVICE)
        }
    }

    /// The device whose primary context `ctx` is, if it is one.
    fn primary_device(&self, ctx: usize) -> Option<c_int> {
        let offset = ctx.checked_sub(PRIMARY_CTX_BASE)?;
        let dev = c_int::try_from(offset / 0x100).ok()?;
        (offset % 0x100 == 0 && self.need_device(dev).is_ok()).then_some(dev)
    }

    fn retains(&self, dev: c_int) -> u32 {
        self.primary_retains.get(&dev).copied().unwrap_or(0)
    }

    /// The calling thread's context stack.
    fn ctx_stack(&mut self) -> &mut Vec<usize> {
        let id = thread_id();
        let at = self.ctx_stacks.iter().position(|(thread, _)| *thread == id);
        let at = at.unwrap_or_else(|| {
            self.ctx_stacks.push((id, Vec::new()));
            self.ctx_stacks.len() - 1
        });
        &mut self.ctx_stacks[at].1
    }

    /// A context is current on the calling thread and still retained.
    fn need_ctx(&mut self) -> Res {
        self.need_init()?;
        let top = self.ctx_stack().last().copied();
        match top.and_then(|ctx| self.primary_device(ctx)) {
            Some(dev) if self.retains(dev) > 0 => Ok(()),
            _ => Err(INVALID_CONTEXT),
        }
    }

    fn event(&mut self, event: String) {
        self.events.push(event);
    }

    fn violation(&mut self, violation: String) {
        self.violations.push(violation);
    }
}

static STATE: Mutex<State> = Mutex::new(State::NEW);

/// The state; a poisoned lock is recovered (the double never panics while
/// holding it, but a caller's thread might have been killed mid-call).
fn lock() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs one entry point: counts the call, honours `zcd_fail_next`, then runs
/// `body` under the lock.
fn entry(name: &'static str, body: impl FnOnce(&mut State) -> Res) -> CuResult {
    let mut state = lock();
    state.bump(name);
    if let Some(code) = state.faults.get_mut(name).and_then(VecDeque::pop_front) {
        return code;
    }
    match body(&mut state) {
        Ok(()) => SUCCESS,
        Err(code) => code,
    }
}

/// INVALID_VALUE for a null pointer argument.
fn nonnull<T>(p: *const T) -> Res {
    if p.is_null() {
        Err(INVALID_VALUE)
    } else {
        Ok(())
    }
}

/// Copies `value` through a caller's out-pointer, INVALID_VALUE if null.
///
/// # Safety
/// `out` is null or valid for a write of `T` (CUDA's contract for out-pointers).
unsafe fn put<T>(out: *mut T, value: T) -> Res {
    nonnull(out)?;
    // SAFETY: non-null (checked) and valid for writes (the caller's promise).
    unsafe { out.write(value) };
    Ok(())
}

/// Copies `lines`, `\n`-joined, into `buf` like `snprintf` (at most `len - 1`
/// bytes and a NUL; nothing if `buf` is null or `len` 0) and returns the full
/// length without the NUL.
///
/// # Safety
/// `buf` is null or valid for `len` bytes of writes.
unsafe fn copy_lines(lines: &[String], buf: *mut c_char, len: usize) -> usize {
    let text = lines.join("\n");
    if !buf.is_null() && len > 0 {
        let n = text.len().min(len - 1);
        // SAFETY: `buf` holds `len > n` bytes (the caller's promise); `text`
        // is a separate allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
            buf.add(n).write(0);
        }
    }
    text.len()
}
