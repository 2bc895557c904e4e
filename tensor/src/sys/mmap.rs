//! A shared memory mapping of a whole fd, made once and unmapped once on drop.

use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::ptr::NonNull;

use nix::errno::Errno;
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};

/// `len` bytes of an fd mapped `MAP_SHARED` at a fixed address for the life of
/// the value. Read-only when the fd was opened without write access.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    writable: bool,
}

// SAFETY: the mapping is plain shared memory owned by this value; access to its
// bytes is coordinated by the owning `Buffer`'s borrow tracker.
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` only hands out the base address.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` read-write, or read-only if the fd refuses
    /// write access (`EACCES`). Pages are not touched (no `MAP_POPULATE`).
    pub fn new(fd: BorrowedFd<'_>, len: NonZeroUsize) -> Result<Mapping, Errno> {
        match Self::map(fd, len, true) {
            Err(Errno::EACCES) => Self::map(fd, len, false),
            other => other,
        }
    }

    fn map(fd: BorrowedFd<'_>, len: NonZeroUsize, writable: bool) -> Result<Mapping, Errno> {
        let prot = if writable {
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE
        } else {
            ProtFlags::PROT_READ
        };
        // SAFETY: a fresh mapping at an address the kernel chooses cannot alias
        // any Rust object; we keep the fd's mapping until `Drop` unmaps it.
        let ptr = unsafe { mmap(None, len, prot, MapFlags::MAP_SHARED, fd.as_fd(), 0) }?;
        Ok(Mapping {
            ptr: ptr.cast(),
            len: len.get(),
            writable,
        })
    }

    /// The base address; valid for `len` bytes until the mapping drops.
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    pub fn is_writable(&self) -> bool {
        self.writable
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned and nothing unmapped
        // them before: this is the only munmap. An error here (only EINVAL for a
        // bad range, impossible by construction) leaves nothing to recover, so
        // it is ignored, as memmap2 does.
        let _ = unsafe { munmap(self.ptr.cast(), self.len) };
    }
}

/// The raw number of a borrowed fd, for error messages.
pub(crate) fn raw(fd: BorrowedFd<'_>) -> i32 {
    fd.as_raw_fd()
}
