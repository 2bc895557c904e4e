//! Init, devices, primary contexts and error names.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use crate::{
    entry, nonnull, put, CuResult, State, INVALID_CONTEXT, INVALID_VALUE, NO_DEVICE,
    PRIMARY_CTX_BASE,
};

const DEVICE_NAME: &[u8] = b"zerocam test double";
#[cfg(not(zcd_cuda10))]
const DRIVER_VERSION: c_int = 12080;
/// Built with `--cfg zcd_cuda10`: a CUDA 10.2 driver (JetPack 4), without
/// the `_v2` names CUDA 11.0 added and the attributes it does not know.
#[cfg(zcd_cuda10)]
const DRIVER_VERSION: c_int = 10020;

/// `cuInit`: flags must be 0. Everything but `cuDriverGetVersion` and
/// `cuGetErrorName` fails with NOT_INITIALIZED before it.
#[no_mangle]
pub unsafe extern "C" fn cuInit(flags: c_uint) -> CuResult {
    entry("cuInit", |st| {
        if flags != 0 {
            return Err(INVALID_VALUE);
        }
        st.initialized = true;
        Ok(())
    })
}

/// `cuDriverGetVersion`: 12080 (works before `cuInit`, as in CUDA).
#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CuResult {
    // SAFETY: `version` is null or writable (the caller's promise).
    entry("cuDriverGetVersion", |_| unsafe {
        put(version, DRIVER_VERSION)
    })
}

/// `cuDeviceGetCount`: 1 unless `zcd_set_device_count` said otherwise.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CuResult {
    entry("cuDeviceGetCount", |st| {
        st.need_init()?;
        // SAFETY: `count` is null or writable (the caller's promise).
        unsafe { put(count, st.device_count) }
    })
}

/// `cuDeviceGet`: NO_DEVICE without devices, INVALID_DEVICE out of range.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CuResult {
    entry("cuDeviceGet", |st| {
        st.need_init()?;
        nonnull(device)?;
        if st.device_count == 0 {
            return Err(NO_DEVICE);
        }
        st.need_device(ordinal)?;
        // SAFETY: `device` is non-null and writable (the caller's promise).
        unsafe { put(device, ordinal) }
    })
}

/// `cuDeviceGetName`: "zerocam test double", truncated to `len - 1` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: c_int) -> CuResult {
    entry("cuDeviceGetName", |st| {
        st.need_init()?;
        nonnull(name)?;
        let Ok(len @ 1..) = usize::try_from(len) else {
            return Err(INVALID_VALUE);
        };
        st.need_device(dev)?;
        let n = DEVICE_NAME.len().min(len - 1);
        // SAFETY: `name` is non-null and holds `len > n` bytes (the caller's
        // promise); DEVICE_NAME is static and does not overlap it.
        unsafe {
            std::ptr::copy_nonoverlapping(DEVICE_NAME.as_ptr(), name.cast::<u8>(), n);
            name.add(n).write(0);
        }
        Ok(())
    })
}

impl State {
    /// Device attribute `attribute`: what `zcd_set_attribute` /
    /// `zcd_forget_attribute` said, else the default; `None` when the driver
    /// "does not know" it (as a driver older than the attribute).
    pub(crate) fn attribute(&self, attribute: c_int) -> Option<c_int> {
        if let Some(&set) = self.attributes.get(&attribute) {
            return set;
        }
        match attribute {
            // INTEGRATED, CAN_MAP_HOST_MEMORY, UNIFIED_ADDRESSING,
            // CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, HOST_REGISTER_SUPPORTED,
            // READ_ONLY_HOST_REGISTER_SUPPORTED
            18 | 19 | 41 | 91 | 99 | 113 => Some(1),
            75 => Some(8), // COMPUTE_CAPABILITY_MAJOR
            76 => Some(7), // COMPUTE_CAPABILITY_MINOR
            _ => None,
        }
    }
}

/// `cuDeviceGetAttribute`: the attributes zerocam reads (as set by
/// `zcd_set_attribute`); others, and those `zcd_forget_attribute` made
/// unknown, INVALID_VALUE (what a driver older than the attribute answers).
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    dev: c_int,
) -> CuResult {
    entry("cuDeviceGetAttribute", |st| {
        st.need_init()?;
        nonnull(value)?;
        st.need_device(dev)?;
        // HOST_REGISTER_SUPPORTED and READ_ONLY_HOST_REGISTER_SUPPORTED came
        // with CUDA 11.0 and 11.1.
        if cfg!(zcd_cuda10) && (attribute == 99 || attribute == 113) {
            return Err(INVALID_VALUE);
        }
        let v = st.attribute(attribute).ok_or(INVALID_VALUE)?;
        // SAFETY: `value` is non-null and writable (the caller's promise).
        unsafe { put(value, v) }
    })
}

// ---------------------------------------------------------------------------
// Primary contexts and the per-thread context stack
// ---------------------------------------------------------------------------

/// `cuDevicePrimaryCtxRetain`: the device's fixed context handle, retained once more.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut *mut c_void, dev: c_int) -> CuResult {
    entry("cuDevicePrimaryCtxRetain", |st| {
        st.need_init()?;
        nonnull(ctx)?;
        st.need_device(dev)?;
        *st.primary_retains.entry(dev).or_insert(0) += 1;
        let handle = PRIMARY_CTX_BASE + dev.unsigned_abs() as usize * 0x100;
        // SAFETY: `ctx` is non-null and writable (the caller's promise).
        unsafe { put(ctx, handle as *mut c_void) }
    })
}

/// `cuDevicePrimaryCtxRelease_v2`: INVALID_CONTEXT when not retained. The last
/// release with registrations, resources or streams still alive records a
/// violation (CUDA would destroy them with the context).
#[cfg(not(zcd_cuda10))]
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: c_int) -> CuResult {
    primary_release("cuDevicePrimaryCtxRelease_v2", dev)
}

/// `cuDevicePrimaryCtxRelease`, the name before CUDA 11.0 (same signature):
/// all a CUDA 10 driver has.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease(dev: c_int) -> CuResult {
    primary_release("cuDevicePrimaryCtxRelease", dev)
}

/// Both names' body.
fn primary_release(name: &'static str, dev: c_int) -> CuResult {
    entry(name, |st| {
        st.need_init()?;
        st.need_device(dev)?;
        let retains = st.primary_retains.entry(dev).or_insert(0);
        if *retains == 0 {
            return Err(INVALID_CONTEXT);
        }
        *retains -= 1;
        if *retains == 0 {
            release_check(st);
        }
        Ok(())
    })
}

/// Records a violation when objects outlive the last release of a primary context.
pub(crate) fn release_check(st: &mut State) {
    let (host, resources, streams) = (st.host.len(), st.resources.len(), st.streams.len());
    let allocations = st.device_memory.len();
    if host + resources + streams + allocations > 0 {
        st.violation(format!(
            "primary context released with live objects: {host} host registrations, \
             {resources} graphics resources, {streams} streams, {allocations} device allocations"
        ));
    }
}

/// `cuCtxPushCurrent_v2`: `ctx` must be a retained primary context.
#[cfg(not(zcd_cuda10))]
#[no_mangle]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(ctx: *mut c_void) -> CuResult {
    push_current("cuCtxPushCurrent_v2", ctx)
}

/// `cuCtxPushCurrent`, the name before CUDA 4.0's `_v2` (same signature).
#[no_mangle]
pub unsafe extern "C" fn cuCtxPushCurrent(ctx: *mut c_void) -> CuResult {
    push_current("cuCtxPushCurrent", ctx)
}

/// Both names' body.
fn push_current(name: &'static str, ctx: *mut c_void) -> CuResult {
    entry(name, |st| {
        st.need_init()?;
        nonnull(ctx)?;
        match st.primary_device(ctx as usize) {
            Some(dev) if st.retains(dev) > 0 => {
                st.ctx_stack().push(ctx as usize);
                Ok(())
            }
            _ => Err(INVALID_CONTEXT),
        }
    })
}

/// `cuCtxPopCurrent_v2`: INVALID_CONTEXT when the thread's stack is empty.
#[cfg(not(zcd_cuda10))]
#[no_mangle]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(ctx: *mut *mut c_void) -> CuResult {
    // SAFETY: forwarded from the caller.
    unsafe { pop_current("cuCtxPopCurrent_v2", ctx) }
}

/// `cuCtxPopCurrent`, the name before CUDA 4.0's `_v2` (same signature).
#[no_mangle]
pub unsafe extern "C" fn cuCtxPopCurrent(ctx: *mut *mut c_void) -> CuResult {
    // SAFETY: forwarded from the caller.
    unsafe { pop_current("cuCtxPopCurrent", ctx) }
}

/// Both names' body.
///
/// # Safety
/// `ctx` is null or writable.
unsafe fn pop_current(name: &'static str, ctx: *mut *mut c_void) -> CuResult {
    entry(name, |st| {
        st.need_init()?;
        nonnull(ctx)?;
        let popped = st.ctx_stack().pop().ok_or(INVALID_CONTEXT)?;
        // SAFETY: `ctx` is non-null and writable (the caller's promise).
        unsafe { put(ctx, popped as *mut c_void) }
    })
}

// ---------------------------------------------------------------------------
// Error names
// ---------------------------------------------------------------------------

const ERROR_NAMES: &[(CuResult, &CStr)] = &[
    (0, c"CUDA_SUCCESS"),
    (1, c"CUDA_ERROR_INVALID_VALUE"),
    (2, c"CUDA_ERROR_OUT_OF_MEMORY"),
    (3, c"CUDA_ERROR_NOT_INITIALIZED"),
    (100, c"CUDA_ERROR_NO_DEVICE"),
    (101, c"CUDA_ERROR_INVALID_DEVICE"),
    (201, c"CUDA_ERROR_INVALID_CONTEXT"),
    (208, c"CUDA_ERROR_ALREADY_MAPPED"),
    (211, c"CUDA_ERROR_NOT_MAPPED"),
    (219, c"CUDA_ERROR_INVALID_GRAPHICS_CONTEXT"),
    (400, c"CUDA_ERROR_INVALID_HANDLE"),
    (712, c"CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"),
    (713, c"CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"),
    (801, c"CUDA_ERROR_NOT_SUPPORTED"),
    (999, c"CUDA_ERROR_UNKNOWN"),
];

/// `cuGetErrorName`: CUDA's name (a static string); an unknown code returns
/// INVALID_VALUE and leaves `*name` alone. Works before `cuInit`, as in CUDA.
#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(code: c_int, name: *mut *const c_char) -> CuResult {
    entry("cuGetErrorName", |_| {
        nonnull(name)?;
        let (_, text) = ERROR_NAMES
            .iter()
            .find(|(c, _)| *c == code)
            .ok_or(INVALID_VALUE)?;
        // SAFETY: `name` is non-null and writable (the caller's promise).
        unsafe { put(name, text.as_ptr()) }
    })
}
