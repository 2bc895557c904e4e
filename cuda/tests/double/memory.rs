//! Host registration, device-to-host copies and streams.

use std::ffi::{c_uint, c_void};

use crate::{
    entry, fresh_handle, graphics, is_mapped, nonnull, put, CuResult, State,
    HOST_MEMORY_ALREADY_REGISTERED, HOST_MEMORY_NOT_REGISTERED, INVALID_HANDLE, INVALID_VALUE,
};

/// PORTABLE | DEVICEMAP | IOMEMORY | READ_ONLY.
const HOST_REGISTER_FLAGS: c_uint = 0x1 | 0x2 | 0x4 | 0x8;
/// CU_STREAM_NON_BLOCKING.
const STREAM_FLAGS: c_uint = 0x1;

impl State {
    /// The registered host range `[start, start + len)` holding all of
    /// `[addr, addr + bytes)` (at least one byte of it).
    fn host_range(&self, addr: usize, bytes: usize) -> Option<(usize, usize)> {
        let (&start, &len) = self.host.range(..=addr).next_back()?;
        let end = addr.checked_add(bytes.max(1))?;
        (end <= start + len).then_some((start, len))
    }
}

// ---------------------------------------------------------------------------
// Host registration
// ---------------------------------------------------------------------------

/// `cuMemHostRegister_v2`: registers `[p, p + bytes)`; overlap with a live
/// range → HOST_MEMORY_ALREADY_REGISTERED; unmapped memory → INVALID_VALUE.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostRegister_v2(
    p: *mut c_void,
    bytes: usize,
    flags: c_uint,
) -> CuResult {
    entry("cuMemHostRegister_v2", |st| {
        st.need_ctx()?;
        nonnull(p)?;
        let start = p as usize;
        let end = start.checked_add(bytes).ok_or(INVALID_VALUE)?;
        if bytes == 0 || flags & !HOST_REGISTER_FLAGS != 0 {
            return Err(INVALID_VALUE);
        }
        if st.host.iter().any(|(&s, &len)| s < end && start < s + len) {
            return Err(HOST_MEMORY_ALREADY_REGISTERED);
        }
        if !is_mapped(start, bytes) {
            return Err(INVALID_VALUE);
        }
        st.host.insert(start, bytes);
        st.event(format!("register_host {start:#x}+{bytes}"));
        Ok(())
    })
}

/// `cuMemHostUnregister`: `p` must start a registered range, else
/// HOST_MEMORY_NOT_REGISTERED. Records "unregister after unmap: 0x.." when
/// the range is no longer mapped.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CuResult {
    entry("cuMemHostUnregister", |st| {
        st.need_ctx()?;
        nonnull(p)?;
        let start = p as usize;
        let bytes = st.host.remove(&start).ok_or(HOST_MEMORY_NOT_REGISTERED)?;
        if !is_mapped(start, bytes) {
            st.violation(format!("unregister after unmap: {start:#x}"));
        }
        st.event(format!("unregister_host {start:#x}"));
        Ok(())
    })
}

/// `cuMemHostGetDevicePointer_v2`: the address itself (integrated GPU, UVA)
/// for an address inside a registered range; flags must be 0.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    dptr: *mut u64,
    p: *mut c_void,
    flags: c_uint,
) -> CuResult {
    entry("cuMemHostGetDevicePointer_v2", |st| {
        st.need_ctx()?;
        nonnull(dptr)?;
        nonnull(p)?;
        if flags != 0 || st.host_range(p as usize, 1).is_none() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: `dptr` is non-null and writable (the caller's promise).
        unsafe { put(dptr, p as u64) }
    })
}

/// `cuMemcpyDtoH_v2`: from inside a registered host range (a real copy) or a
/// mapped GL buffer's fake range (fills `dst` with the `zcd_set_gl_fill`
/// byte); anything else INVALID_VALUE. A source range that is registered but
/// no longer mapped records "copy from unmapped host memory: 0x.." and fails
/// with INVALID_VALUE instead of faulting.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, bytes: usize) -> CuResult {
    entry("cuMemcpyDtoH_v2", |st| {
        st.need_ctx()?;
        nonnull(dst)?;
        if let Some(addr) = usize::try_from(src)
            .ok()
            .filter(|&a| st.host_range(a, bytes).is_some())
        {
            if !is_mapped(addr, bytes) {
                st.violation(format!("copy from unmapped host memory: {addr:#x}"));
                return Err(INVALID_VALUE);
            }
            // SAFETY: the source lies inside a registered range that is still
            // mapped (checked); `dst` holds `bytes` bytes (the caller's
            // promise); `copy` allows overlap.
            unsafe { std::ptr::copy(addr as *const u8, dst.cast::<u8>(), bytes) };
            return Ok(());
        }
        if graphics::in_mapped_gl_buffer(st, src, bytes) {
            // SAFETY: `dst` is non-null and holds `bytes` bytes (the caller's promise).
            unsafe { std::ptr::write_bytes(dst.cast::<u8>(), st.gl_fill, bytes) };
            return Ok(());
        }
        Err(INVALID_VALUE)
    })
}

// ---------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------

/// `cuStreamCreate`: a fresh non-null handle; flags 0 or NON_BLOCKING.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, flags: c_uint) -> CuResult {
    entry("cuStreamCreate", |st| {
        st.need_ctx()?;
        nonnull(stream)?;
        if flags & !STREAM_FLAGS != 0 {
            return Err(INVALID_VALUE);
        }
        let handle = fresh_handle();
        st.streams.insert(handle);
        // SAFETY: `stream` is non-null and writable (the caller's promise).
        unsafe { put(stream, handle as *mut c_void) }
    })
}

/// `cuStreamDestroy_v2`: INVALID_HANDLE for a stream the double did not create
/// (or destroyed already).
#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy_v2(stream: *mut c_void) -> CuResult {
    entry("cuStreamDestroy_v2", |st| {
        st.need_ctx()?;
        nonnull(stream)?;
        if st.streams.remove(&(stream as usize)) {
            Ok(())
        } else {
            Err(INVALID_HANDLE)
        }
    })
}

/// `cuStreamSynchronize`: null (the default stream) or a live stream.
#[no_mangle]
pub unsafe extern "C" fn cuStreamSynchronize(stream: *mut c_void) -> CuResult {
    entry("cuStreamSynchronize", |st| {
        st.need_ctx()?;
        st.need_stream(stream)
    })
}

impl State {
    /// `stream` is null (the default stream) or live, else INVALID_HANDLE.
    pub(crate) fn need_stream(&self, stream: *mut c_void) -> Result<(), CuResult> {
        if stream.is_null() || self.streams.contains(&(stream as usize)) {
            Ok(())
        } else {
            Err(INVALID_HANDLE)
        }
    }
}
