//! `TensorMemory::Mem`: a zeroed, 64-byte aligned heap allocation. No fd and no
//! syscall per map.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

use super::Storage;
use crate::{Access, Error, Result, TensorMemory};

/// Alignment of heap tensors: a cache line, enough for any element and for SIMD.
const ALIGN: usize = 64;

#[derive(Debug)]
pub(crate) struct HeapStorage {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the allocation is owned by this value and only reached through the
// owning Buffer, whose borrow tracker orders access.
unsafe impl Send for HeapStorage {}
// SAFETY: as above.
unsafe impl Sync for HeapStorage {}

impl HeapStorage {
    pub fn new(len: usize) -> Result<HeapStorage> {
        let layout =
            Layout::from_size_align(len.max(1), ALIGN).map_err(|_| Error::HeapAlloc { len })?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(Error::HeapAlloc { len })?;
        Ok(HeapStorage { ptr, layout })
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
        self.layout.size()
    }

    fn begin_cpu_access(&self, _access: Access) -> Result<NonNull<u8>> {
        Ok(self.ptr)
    }

    fn end_cpu_access(&self, _access: Access) -> Result<()> {
        Ok(())
    }
}
