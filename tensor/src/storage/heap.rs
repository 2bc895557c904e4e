//! `TensorMemory::Mem`: a zeroed heap allocation of whole pages, page-aligned.
//! No fd and no syscall per map.
//!
//! Whole pages, so that no two heap tensors share one: CUDA registers host
//! memory by the page (`cuMemHostRegister`), and a second tensor in a page
//! another one registered would be refused as already registered. A page
//! also covers a cache line and every SIMD width (64-byte alignment was
//! the need before).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::OnceLock;

use super::Storage;
use crate::{Access, Error, Result, TensorMemory};

/// The page size (`sysconf(_SC_PAGESIZE)`: 4 KiB, or 16/64 KiB on some
/// aarch64 kernels), 4096 where it says nothing useful.
fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE);
        page.ok()
            .flatten()
            .and_then(|p| usize::try_from(p).ok())
            .filter(|p| p.is_power_of_two())
            .unwrap_or(4096)
    })
}

#[derive(Debug)]
pub(crate) struct HeapStorage {
    ptr: NonNull<u8>,
    /// The allocation: `len` rounded up to whole pages.
    layout: Layout,
    len: usize,
}

// SAFETY: the allocation is owned by this value and only reached through the
// owning Buffer, whose borrow tracker orders access.
unsafe impl Send for HeapStorage {}
// SAFETY: as above.
unsafe impl Sync for HeapStorage {}

impl HeapStorage {
    pub fn new(len: usize) -> Result<HeapStorage> {
        let page = page_size();
        let size = len
            .max(1)
            .checked_next_multiple_of(page)
            .ok_or(Error::HeapAlloc { len })?;
        let layout = Layout::from_size_align(size, page).map_err(|_| Error::HeapAlloc { len })?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(Error::HeapAlloc { len })?;
        Ok(HeapStorage {
            ptr,
            layout,
            len: len.max(1),
        })
    }
}

impl Drop for HeapStorage {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this exact layout, freed only here.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

impl Storage for HeapStorage {
    fn memory(&self) -> TensorMemory {
        TensorMemory::Mem
    }

    fn len(&self) -> usize {
        self.len
    }

    fn begin_cpu_access(&self, _access: Access) -> Result<NonNull<u8>> {
        Ok(self.ptr)
    }

    fn end_cpu_access(&self, _access: Access) -> Result<()> {
        Ok(())
    }
}
