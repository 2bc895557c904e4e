//! The `zcd_*` control and query exports for the tests (not counted, never
//! fault-injected, usable before `cuInit`).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use crate::{copy_lines, lock, EglFrameConfig, State, DEFAULT_EGL_FRAME};

/// The UTF-8 text of a C string argument; None for null or invalid UTF-8.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
unsafe fn text<'a>(name: *const c_char) -> Option<&'a str> {
    if name.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated (the caller's promise).
    unsafe { CStr::from_ptr(name) }.to_str().ok()
}

/// Forgets everything (tables, counts, events, violations, faults, context
/// stacks and retains, GL/EGL settings, device count back to 1); the double
/// is uninitialised again until the next `cuInit`.
#[no_mangle]
pub extern "C" fn zcd_reset() {
    *lock() = State::NEW;
}

/// Calls of entry point `name` since the last reset, failed ones included.
/// `zcd_count("gl_checks_skipped")` counts GL liveness checks skipped for
/// want of `glIsBuffer`.
///
/// # Safety
/// `name` is null (→ 0) or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zcd_count(name: *const c_char) -> u64 {
    // SAFETY: forwarded from the caller.
    let Some(name) = (unsafe { text(name) }) else {
        return 0;
    };
    lock().counts.get(name).copied().unwrap_or(0)
}

/// GL liveness checks skipped because no `glIsBuffer` could be found.
#[no_mangle]
pub extern "C" fn zcd_gl_checks_skipped() -> u64 {
    lock().counts.get("gl_checks_skipped").copied().unwrap_or(0)
}

/// Registered host ranges.
#[no_mangle]
pub extern "C" fn zcd_live_host_registrations() -> u64 {
    lock().host.len() as u64
}

/// Registered graphics resources (GL and EGL).
#[no_mangle]
pub extern "C" fn zcd_live_graphics_resources() -> u64 {
    lock().resources.len() as u64
}

/// Streams created and not destroyed.
#[no_mangle]
pub extern "C" fn zcd_live_streams() -> u64 {
    lock().streams.len() as u64
}

/// Graphics resources currently mapped.
#[no_mangle]
pub extern "C" fn zcd_mapped_resources() -> u64 {
    lock().resources.values().filter(|res| res.mapped).count() as u64
}

/// The violations, `\n`-joined, copied like `snprintf` (at most `len - 1`
/// bytes and a NUL); returns the full length (call with null/0 to size).
///
/// # Safety
/// `buf` is null or valid for `len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn zcd_violations(buf: *mut c_char, len: usize) -> usize {
    // SAFETY: forwarded from the caller.
    unsafe { copy_lines(&lock().violations, buf, len) }
}

/// The event log, `\n`-joined, copied as by `zcd_violations`.
///
/// # Safety
/// `buf` is null or valid for `len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn zcd_events(buf: *mut c_char, len: usize) -> usize {
    // SAFETY: forwarded from the caller.
    unsafe { copy_lines(&lock().events, buf, len) }
}

/// The next call of entry point `name` returns `code` and does nothing else
/// (queued: two calls fail the next two calls).
///
/// # Safety
/// `name` is null (ignored) or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zcd_fail_next(name: *const c_char, code: c_int) {
    // SAFETY: forwarded from the caller.
    if let Some(name) = unsafe { text(name) } {
        lock()
            .faults
            .entry(name.to_owned())
            .or_default()
            .push_back(code);
    }
}

/// The size `cuGraphicsResourceGetMappedPointer_v2` reports for GL buffer
/// `buffer`; buffer 0 (no GL buffer has that name) sets the size of every
/// buffer without one of its own.
#[no_mangle]
pub extern "C" fn zcd_set_gl_buffer_size(buffer: c_uint, size: usize) {
    lock().gl_sizes.insert(buffer, size);
}

/// The frame `cuGraphicsResourceGetMappedEglFrame` reports for `image`
/// (`planes` at most 3); a null `image` sets the frame of every image
/// without one of its own.
#[no_mangle]
pub extern "C" fn zcd_set_egl_frame(
    image: *mut c_void,
    width: c_uint,
    height: c_uint,
    pitch: c_uint,
    planes: c_uint,
) {
    let mut st = lock();
    let kind = st.egl_frames.get(&(image as usize)).copied();
    let kind = kind.unwrap_or(DEFAULT_EGL_FRAME);
    let config = EglFrameConfig {
        width,
        height,
        pitch,
        planes: planes.min(3),
        ..kind
    };
    st.egl_frames.insert(image as usize, config);
}

/// The frame type (`CUeglFrameType`: 0 array, 1 pitch) and
/// `CUeglColorFormat` (negative: the one of its planes) the frame of `image`
/// reports; a null `image`: every image without a frame of its own.
#[no_mangle]
pub extern "C" fn zcd_set_egl_frame_kind(
    image: *mut c_void,
    frame_type: c_int,
    color_format: c_int,
) {
    let mut st = lock();
    let frame = st
        .egl_frames
        .entry(image as usize)
        .or_insert(DEFAULT_EGL_FRAME);
    frame.frame_type = frame_type;
    frame.color_format = color_format;
}

/// The byte `cuMemcpyDtoH_v2` fills with when copying from a mapped GL buffer.
#[no_mangle]
pub extern "C" fn zcd_set_gl_fill(byte: u8) {
    lock().gl_fill = byte;
}

/// Devices the double reports (negative → 0). With 0, `cuDeviceGetCount`
/// gives 0 and `cuDeviceGet` NO_DEVICE.
#[no_mangle]
pub extern "C" fn zcd_set_device_count(n: c_int) {
    lock().device_count = n.max(0);
}

/// Device attribute `attribute` reads as `value` (`cuDeviceGetAttribute`
/// and the checks `cuMemHostRegister_v2` makes: HOST_REGISTER_SUPPORTED (99)
/// 0 refuses every registration, READ_ONLY_HOST_REGISTER_SUPPORTED (113) 0
/// refuses CU_MEMHOSTREGISTER_READ_ONLY, both with NOT_SUPPORTED).
#[no_mangle]
pub extern "C" fn zcd_set_attribute(attribute: c_int, value: c_int) {
    lock().attributes.insert(attribute, Some(value));
}

/// Device attribute `attribute` is unknown, as to a driver older than it:
/// `cuDeviceGetAttribute` answers INVALID_VALUE, and for 113,
/// CU_MEMHOSTREGISTER_READ_ONLY (as new) is INVALID_VALUE too.
#[no_mangle]
pub extern "C" fn zcd_forget_attribute(attribute: c_int) {
    lock().attributes.insert(attribute, None);
}

/// Registers `[p, p + bytes)` as another library of the process would
/// (`torch.pin_memory`, a GStreamer CUDA buffer pool), holding its own
/// retain of device 0's primary context: the caller's `cuMemHostRegister_v2`
/// of an overlapping range then gets HOST_MEMORY_ALREADY_REGISTERED, and
/// `cuPointerGetAttribute` answers for it. The caller's
/// `cuMemHostUnregister` of it is recorded as a violation ("unregister of
/// memory registered elsewhere"). Returns the `CUresult`.
#[no_mangle]
pub extern "C" fn zcd_register_elsewhere(p: *mut c_void, bytes: usize) -> c_int {
    let mut st = lock();
    let start = p as usize;
    if let Err(code) = st.add_host_range(start, bytes) {
        return code;
    }
    st.elsewhere.insert(start);
    *st.primary_retains.entry(0).or_insert(0) += 1;
    st.event(format!("register_host_elsewhere {start:#x}+{bytes}"));
    crate::SUCCESS
}

/// The other library unregisters its range starting at `p` and releases its
/// retain of the primary context: HOST_MEMORY_NOT_REGISTERED if it has none
/// there. Returns the `CUresult`.
#[no_mangle]
pub extern "C" fn zcd_unregister_elsewhere(p: *mut c_void) -> c_int {
    let mut st = lock();
    let start = p as usize;
    if !st.elsewhere.remove(&start) {
        return crate::HOST_MEMORY_NOT_REGISTERED;
    }
    st.host.remove(&start);
    st.event(format!("unregister_host_elsewhere {start:#x}"));
    let retains = st.primary_retains.entry(0).or_insert(0);
    *retains = retains.saturating_sub(1);
    if *retains == 0 {
        crate::device::release_check(&mut st);
    }
    crate::SUCCESS
}

/// Queues, on live stream `stream`, a kernel's write of `byte` over
/// `[dptr, dptr + bytes)` (inside a registered host range): it runs when
/// the stream is synchronized or a copy queued after it on that stream runs,
/// never before a legacy-stream copy of a non-blocking stream's memory.
/// Returns the `CUresult` (INVALID_HANDLE, INVALID_VALUE).
///
/// # Safety
/// The range stays mapped writable until the write runs.
#[no_mangle]
pub unsafe extern "C" fn zcd_queue_write(
    stream: *mut c_void,
    dptr: u64,
    byte: u8,
    bytes: usize,
) -> c_int {
    crate::stream::queue_write(stream, dptr, byte, bytes)
}
