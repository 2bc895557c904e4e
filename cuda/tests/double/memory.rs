//! Host registration, pointer attributes and the legacy-stream
//! device-to-host copy.

use std::ffi::{c_int, c_uint, c_void};

use crate::{
    entry, graphics, is_mapped, nonnull, put, CuResult, Res, State, HOST_MEMORY_ALREADY_REGISTERED,
    HOST_MEMORY_NOT_REGISTERED, INVALID_VALUE, NOT_SUPPORTED,
};

/// PORTABLE | DEVICEMAP | IOMEMORY | READ_ONLY.
const HOST_REGISTER_FLAGS: c_uint = 0x1 | 0x2 | 0x4 | 0x8;
/// CU_MEMHOSTREGISTER_READ_ONLY.
const READ_ONLY: c_uint = 0x8;
/// CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED.
const ATTR_HOST_REGISTER_SUPPORTED: c_int = 99;
/// CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED.
const ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED: c_int = 113;
/// CU_POINTER_ATTRIBUTE_DEVICE_POINTER, RANGE_START_ADDR, RANGE_SIZE.
const POINTER_DEVICE_POINTER: c_int = 3;
const POINTER_RANGE_START_ADDR: c_int = 11;
const POINTER_RANGE_SIZE: c_int = 12;

impl State {
    /// The registered host range `[start, start + len)` holding all of
    /// `[addr, addr + bytes)` (at least one byte of it).
    pub(crate) fn host_range(&self, addr: usize, bytes: usize) -> Option<(usize, usize)> {
        let (&start, &len) = self.host.range(..=addr).next_back()?;
        let end = addr.checked_add(bytes.max(1))?;
        (end <= start + len).then_some((start, len))
    }

    /// Registers `[start, start + bytes)` (for us or, from
    /// `zcd_register_elsewhere`, for "another library"): a page shared with
    /// a live range → HOST_MEMORY_ALREADY_REGISTERED (the driver pins and
    /// maps whole pages, so two ranges in one page collide); unmapped memory
    /// → INVALID_VALUE.
    pub(crate) fn add_host_range(&mut self, start: usize, bytes: usize) -> Res {
        let end = start.checked_add(bytes).ok_or(INVALID_VALUE)?;
        if start == 0 || bytes == 0 {
            return Err(INVALID_VALUE);
        }
        let page = crate::page_size();
        let pages = |s: usize, e: usize| (s / page, e.div_ceil(page));
        let (first, last) = pages(start, end);
        if self.host.iter().any(|(&s, &len)| {
            let (f, l) = pages(s, s + len);
            f < last && first < l
        }) {
            return Err(HOST_MEMORY_ALREADY_REGISTERED);
        }
        if !is_mapped(start, bytes) {
            return Err(INVALID_VALUE);
        }
        self.host.insert(start, bytes);
        Ok(())
    }

    /// Whether the registration `flags` ask for is supported: NOT_SUPPORTED
    /// where HOST_REGISTER_SUPPORTED is 0, or READ_ONLY is asked for where
    /// READ_ONLY_HOST_REGISTER_SUPPORTED is 0; INVALID_VALUE for READ_ONLY
    /// where the driver does not know that attribute (older than the flag).
    fn host_register_supported(&self, flags: c_uint) -> Res {
        if self.attribute(ATTR_HOST_REGISTER_SUPPORTED) == Some(0) {
            return Err(NOT_SUPPORTED);
        }
        if flags & READ_ONLY != 0 {
            match self.attribute(ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED) {
                None => return Err(INVALID_VALUE),
                Some(0) => return Err(NOT_SUPPORTED),
                Some(_) => {}
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Host registration
// ---------------------------------------------------------------------------

/// `cuMemHostRegister_v2`: registers `[p, p + bytes)`; overlap with a live
/// range (ours or one registered elsewhere) → HOST_MEMORY_ALREADY_REGISTERED;
/// unmapped memory → INVALID_VALUE; NOT_SUPPORTED where the device
/// attributes say so (`host_register_supported`). The event says
/// "read-only" for CU_MEMHOSTREGISTER_READ_ONLY.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostRegister_v2(
    p: *mut c_void,
    bytes: usize,
    flags: c_uint,
) -> CuResult {
    entry("cuMemHostRegister_v2", |st| {
        st.need_ctx()?;
        nonnull(p)?;
        if flags & !HOST_REGISTER_FLAGS != 0 {
            return Err(INVALID_VALUE);
        }
        st.host_register_supported(flags)?;
        let start = p as usize;
        if st.refuse_pfnmap && crate::alloc::pfnmap(start) {
            st.event(format!("register_host refused {start:#x}: VM_PFNMAP"));
            return Err(INVALID_VALUE);
        }
        st.add_host_range(start, bytes)?;
        let read_only = if flags & READ_ONLY != 0 {
            " read-only"
        } else {
            ""
        };
        st.event(format!("register_host {start:#x}+{bytes}{read_only}"));
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
        if st.elsewhere.remove(&start) {
            st.violation(format!(
                "unregister of memory registered elsewhere: {start:#x}"
            ));
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

/// What a device-to-host copy of `[src, src + bytes)` reads.
pub(crate) enum Source {
    /// Registered host memory (the double's device address is the host's).
    Host(usize),
    /// A mapped GL buffer's fake range: reads as the `zcd_set_gl_fill` byte.
    Fill(u8),
}

impl State {
    /// The source of a copy of `bytes` from `src`: inside a registered host
    /// range, a device allocation or a mapped GL buffer, else INVALID_VALUE.
    pub(crate) fn copy_source(&self, src: u64, bytes: usize) -> Result<Source, CuResult> {
        if let Some(addr) = usize::try_from(src)
            .ok()
            .filter(|&a| self.host_range(a, bytes).is_some() || self.device_range(a, bytes))
        {
            return Ok(Source::Host(addr));
        }
        if graphics::in_mapped_gl_buffer(self, src, bytes) {
            return Ok(Source::Fill(self.gl_fill));
        }
        Err(INVALID_VALUE)
    }

    /// Copies `bytes` from `source` to `dst` now. A host source no longer
    /// mapped records "copy from unmapped host memory: 0x.." and fails with
    /// INVALID_VALUE instead of faulting.
    ///
    /// # Safety
    /// `dst` is valid for `bytes` bytes of writes.
    pub(crate) unsafe fn copy_now(&mut self, dst: usize, source: &Source, bytes: usize) -> Res {
        match *source {
            Source::Host(addr) => {
                if !is_mapped(addr, bytes) {
                    self.violation(format!("copy from unmapped host memory: {addr:#x}"));
                    return Err(INVALID_VALUE);
                }
                // SAFETY: the source is mapped (checked); `dst` holds `bytes`
                // bytes (the caller's promise); `copy` allows overlap.
                unsafe { std::ptr::copy(addr as *const u8, dst as *mut u8, bytes) };
            }
            // SAFETY: `dst` holds `bytes` bytes (the caller's promise).
            Source::Fill(byte) => unsafe { std::ptr::write_bytes(dst as *mut u8, byte, bytes) },
        }
        Ok(())
    }
}

/// `cuMemcpyDtoH_v2`: a synchronous copy on the **legacy default stream**,
/// from inside a registered host range (a real copy) or a mapped GL buffer's
/// fake range (the `zcd_set_gl_fill` byte); anything else INVALID_VALUE. It
/// waits for the work queued on blocking streams first, not for
/// `CU_STREAM_NON_BLOCKING` streams (`stream.rs`): a write queued there and
/// not yet run is not seen.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, bytes: usize) -> CuResult {
    entry("cuMemcpyDtoH_v2", |st| {
        st.need_ctx()?;
        nonnull(dst)?;
        let source = st.copy_source(src, bytes)?;
        st.run_blocking_streams();
        // SAFETY: `dst` is non-null and holds `bytes` bytes (the caller's promise).
        unsafe { st.copy_now(dst as usize, &source, bytes) }
    })
}

/// `cuPointerGetAttribute`: for an address inside a registered host range
/// (ours or one registered elsewhere), DEVICE_POINTER (the address itself),
/// RANGE_START_ADDR and RANGE_SIZE (the registered range), each a 64-bit
/// value; INVALID_VALUE for other addresses and attributes.
#[no_mangle]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attribute: c_int,
    ptr: u64,
) -> CuResult {
    entry("cuPointerGetAttribute", |st| {
        st.need_ctx()?;
        nonnull(data)?;
        let addr = usize::try_from(ptr).map_err(|_| INVALID_VALUE)?;
        let (start, len) = st.host_range(addr, 1).ok_or(INVALID_VALUE)?;
        let value = match attribute {
            POINTER_DEVICE_POINTER => ptr,
            POINTER_RANGE_START_ADDR => start as u64,
            POINTER_RANGE_SIZE => len as u64,
            _ => return Err(INVALID_VALUE),
        };
        // SAFETY: these attributes' data is one 64-bit value; `data` is
        // non-null and writable for it (the caller's promise).
        unsafe { put(data.cast::<u64>(), value) }
    })
}
