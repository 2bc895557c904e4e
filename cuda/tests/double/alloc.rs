//! Device memory (`cuMemAlloc`, `cuMemFree`), copies into it
//! (`cuMemcpyHtoDAsync`), and the refusal of a discrete GPU's driver to
//! register a mapping of pages it cannot pin (`zcd_refuse_pfnmap`).
//!
//! The double's device memory is host memory (an integrated device's
//! pointers are the host's): an allocation is a zeroed heap block whose
//! address is the `CUdeviceptr`.

use std::ffi::{c_int, c_void};

use crate::{entry, is_mapped, nonnull, put, CuResult, State, INVALID_VALUE};

impl State {
    /// Whether `[addr, addr + bytes)` lies inside one device allocation.
    pub(crate) fn device_range(&self, addr: usize, bytes: usize) -> bool {
        self.device_memory
            .range(..=addr)
            .next_back()
            .is_some_and(|(&start, &len)| {
                addr.checked_add(bytes)
                    .is_some_and(|end| end <= start + len)
            })
    }
}

/// Whether the mapping holding `addr` is `VM_PFNMAP` or `VM_IO` (`pf`, `io`
/// in its `/proc/self/smaps` VmFlags): pages NVIDIA's driver cannot pin
/// (`remap_pfn_range`: the DMA heap's system heap, vb2-dma-contig).
pub(crate) fn pfnmap(addr: usize) -> bool {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return false;
    };
    let mut inside = false;
    for line in smaps.lines() {
        let range = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = range.split_once('-') {
            if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&addr);
                continue;
            }
        }
        if inside {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.split_whitespace().any(|f| f == "pf" || f == "io");
            }
        }
    }
    false
}

/// `cuMemAlloc_v2`: `bytes` zeroed bytes (INVALID_VALUE for 0).
#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut u64, bytes: usize) -> CuResult {
    entry("cuMemAlloc_v2", |st| {
        st.need_ctx()?;
        nonnull(dptr)?;
        if bytes == 0 {
            return Err(INVALID_VALUE);
        }
        let block = Box::into_raw(vec![0u8; bytes].into_boxed_slice());
        let addr = block.cast::<u8>() as usize;
        st.device_memory.insert(addr, bytes);
        st.event(format!("alloc {addr:#x}+{bytes}"));
        // SAFETY: `dptr` is non-null and writable (the caller's promise).
        unsafe { put(dptr, addr as u64) }
    })
}

/// `cuMemFree_v2`: `dptr` must start a live allocation (INVALID_VALUE).
#[no_mangle]
pub unsafe extern "C" fn cuMemFree_v2(dptr: u64) -> CuResult {
    entry("cuMemFree_v2", |st| {
        st.need_ctx()?;
        let addr = usize::try_from(dptr).map_err(|_| INVALID_VALUE)?;
        let bytes = st.device_memory.remove(&addr).ok_or(INVALID_VALUE)?;
        let block = std::ptr::slice_from_raw_parts_mut(addr as *mut u8, bytes);
        // SAFETY: made by `Box::into_raw` of this length in `cuMemAlloc_v2`,
        // freed once (removed from the table above).
        drop(unsafe { Box::from_raw(block) });
        st.event(format!("free {addr:#x}"));
        Ok(())
    })
}

/// `cuMemcpyHtoDAsync_v2`: `bytes` from pageable host memory into a device
/// allocation, on a live stream. The bytes are read before it returns (CUDA
/// stages pageable memory through a pinned buffer before an async copy
/// returns); a source no longer mapped records "copy from unmapped host
/// memory: 0x.." and fails with INVALID_VALUE.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: u64,
    src: *const c_void,
    bytes: usize,
    stream: *mut c_void,
) -> CuResult {
    entry("cuMemcpyHtoDAsync_v2", |st| {
        st.need_ctx()?;
        nonnull(src)?;
        st.need_stream(stream)?;
        let to = usize::try_from(dst).map_err(|_| INVALID_VALUE)?;
        if !st.device_range(to, bytes) {
            return Err(INVALID_VALUE);
        }
        if !is_mapped(src as usize, bytes) {
            st.violation(format!(
                "copy from unmapped host memory: {:#x}",
                src as usize
            ));
            return Err(INVALID_VALUE);
        }
        // SAFETY: the source is mapped (checked) and `bytes` long (the
        // caller's promise); the destination lies in a live allocation.
        unsafe { std::ptr::copy(src.cast::<u8>(), to as *mut u8, bytes) };
        st.event(format!("copy_htod {to:#x}+{bytes}"));
        Ok(())
    })
}

/// Whether `cuMemHostRegister` refuses mappings of pages a discrete GPU's
/// driver cannot pin (`VM_PFNMAP`/`VM_IO`) with INVALID_VALUE, as NVIDIA's
/// does since 550 (off by default: the double is an integrated device).
#[no_mangle]
pub extern "C" fn zcd_refuse_pfnmap(on: c_int) {
    crate::lock().refuse_pfnmap = on != 0;
}

/// Device allocations alive.
#[no_mangle]
pub extern "C" fn zcd_live_device_allocations() -> u64 {
    crate::lock().device_memory.len() as u64
}
