//! Memory backends. Each implements [`Storage`], the one trait the tensor
//! dispatches through, so a new kind of memory is one new implementation.

pub(crate) mod dma_heap;
#[allow(unsafe_code)] // `unsafe trait ExternalMemory`, the owner's promise; Send/Sync
pub(crate) mod external;
pub(crate) mod fd;
#[allow(unsafe_code)] // the syscall/FFI edge: the aligned heap allocation
pub(crate) mod heap;
pub(crate) mod pbo;
#[allow(unsafe_code)] // declares `unsafe trait PboOps`, the GL backend's promise
pub(crate) mod pbo_ops;

use std::fmt::Debug;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;

use crate::{Access, FdIdentity, Result, TensorMemory};

/// Raw memory a tensor lives in.
///
/// Contract for implementors: between a successful `begin_cpu_access` and the
/// matching `end_cpu_access`, the returned pointer is valid for reads (and, for a
/// writable access on a writable storage, writes) of `len()` bytes, and it is
/// aligned to at least 64 bytes (external memory: to its element type, checked
/// when it is wrapped).
pub(crate) trait Storage: Send + Sync + Debug {
    /// Which backend this is.
    fn memory(&self) -> TensorMemory;
    /// Size in bytes.
    fn len(&self) -> usize;
    /// Whether writable maps are possible.
    fn writable(&self) -> bool {
        true
    }
    /// Starts CPU access (the dma-buf sync START, a GL map) and returns the base.
    fn begin_cpu_access(&self, access: Access) -> Result<NonNull<u8>>;
    /// Ends CPU access started with the same `access`.
    fn end_cpu_access(&self, access: Access) -> Result<()>;
    /// The fd behind the memory, if any.
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }
    /// `(st_dev, st_ino)` of that fd.
    fn fd_identity(&self) -> Option<FdIdentity> {
        None
    }
    /// The GL buffer name of a PBO and its owner (`PboOps::owner`).
    fn pbo(&self) -> Option<(u32, usize)> {
        None
    }
    /// Whether the memory belongs to an outside owner ([`ExternalMemory`](external::ExternalMemory)).
    fn external(&self) -> bool {
        false
    }
}
