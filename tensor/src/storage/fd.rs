//! Fd-backed memory: shared memory (memfd), DMA-BUF (allocated from a heap or
//! imported), and through the unchecked import any mmap-able file. The fd is
//! classified ([`classify`]: only files that cannot shrink, unless the caller
//! vouches), then mapped once and stays mapped until the storage drops: a CPU
//! map costs no mmap and no page faults after the first touch, only the
//! dma-buf sync bracket where it applies.

use std::num::NonZeroUsize;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use super::Storage;
use crate::sys::dmabuf::{self, SYNC_END, SYNC_READ, SYNC_START, SYNC_WRITE};
use crate::sys::fd::{classify, FdInfo, Policy};
use crate::sys::mmap::{raw, Mapping};
use crate::{Access, Error, FdIdentity, FdKind, Result, TensorMemory};

#[derive(Debug)]
pub(crate) struct FdStorage {
    // Declared before `fd`: the mapping goes first (either order is valid, a
    // mapping outlives its fd, but this keeps the fd until the end).
    mapping: Mapping,
    fd: OwnedFd,
    info: FdInfo,
}

impl FdStorage {
    /// Takes `fd`, checks that its file cannot shrink (a dma-buf, or a memfd
    /// sealed with `F_SEAL_SHRINK`, sealing a sealable one), and maps it whole.
    /// A dma-buf becomes `Dma` memory, anything else `Shm` (a memfd here; any
    /// mappable file through the unchecked import). Every import of an fd in
    /// the crate goes through here or the unchecked import
    /// (`FdStorage::import_unchecked`, in the `unchecked` edge module).
    pub fn import(fd: OwnedFd) -> Result<FdStorage> {
        let info = classify(fd.as_fd(), Policy::CannotShrink)?;
        Self::map(fd, info)
    }

    /// Takes `fd` from another process: classified under
    /// [`Policy::FromPeer`] (a dma-buf or a sealed shmem memfd, known before
    /// any call into the file's filesystem), and only its first `len` bytes
    /// mapped, however large the file is.
    pub fn import_peer(fd: OwnedFd, len: usize) -> Result<FdStorage> {
        let mut info = classify(fd.as_fd(), Policy::FromPeer)?;
        if len > info.size {
            return Err(Error::BufferTooSmall {
                needed: len,
                available: info.size,
            });
        }
        info.size = len;
        Self::map(fd, info)
    }

    /// Maps an fd whose facts are known. Called by [`import`](Self::import)
    /// and by the unchecked import only: a file classified under
    /// `Policy::AnyMappable` can shrink under the mapping, which is why that
    /// import is an `unsafe fn`.
    pub(crate) fn map(fd: OwnedFd, info: FdInfo) -> Result<FdStorage> {
        let not_mappable = |errno| Error::NotMappable {
            fd: raw(fd.as_fd()),
            kind: info.kind,
            errno,
        };
        let len = NonZeroUsize::new(info.size).ok_or(Error::BufferTooSmall {
            needed: 1,
            available: 0,
        })?;
        let mapping = Mapping::new(fd.as_fd(), len).map_err(not_mappable)?;
        Ok(FdStorage { mapping, fd, info })
    }

    fn is_dmabuf(&self) -> bool {
        self.info.kind == FdKind::DmaBuf
    }

    fn sync(&self, flags: u64) -> Result<()> {
        dmabuf::sync(self.fd.as_fd(), flags).map_err(|errno| Error::DmaBufSync {
            fd: raw(self.fd.as_fd()),
            flags,
            errno,
        })
    }
}

fn sync_direction(access: Access) -> u64 {
    match access {
        Access::Read => SYNC_READ,
        Access::Write => SYNC_WRITE,
        Access::ReadWrite => SYNC_READ | SYNC_WRITE,
    }
}

impl Storage for FdStorage {
    fn memory(&self) -> TensorMemory {
        match self.info.kind {
            FdKind::DmaBuf => TensorMemory::Dma,
            _ => TensorMemory::Shm,
        }
    }

    fn len(&self) -> usize {
        self.info.size
    }

    fn writable(&self) -> bool {
        self.mapping.is_writable()
    }

    fn begin_cpu_access(&self, access: Access) -> Result<NonNull<u8>> {
        if self.is_dmabuf() {
            self.sync(SYNC_START | sync_direction(access))?;
        }
        Ok(self.mapping.ptr())
    }

    fn end_cpu_access(&self, access: Access) -> Result<()> {
        if self.is_dmabuf() {
            self.sync(SYNC_END | sync_direction(access))?;
        }
        Ok(())
    }

    fn fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.fd.as_fd())
    }

    fn fd_identity(&self) -> Option<FdIdentity> {
        Some(self.info.identity)
    }
}
