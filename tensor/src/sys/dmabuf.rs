//! DMA-BUF specifics: recognising a dma-buf fd and the CPU-access sync bracket.
//!
//! Kernel documentation: `Documentation/driver-api/dma-buf.rst`, section
//! "CPU Access to DMA Buffer Objects".

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;

/// `statfs.f_type` of the dma-buf pseudo filesystem (`DMA_BUF_MAGIC`).
const DMA_BUF_MAGIC: u64 = 0x444d_4142;

/// `struct dma_buf_sync` from `<linux/dma-buf.h>`.
#[repr(C)]
struct DmaBufSync {
    flags: u64,
}

/// Flag bits of `DMA_BUF_IOCTL_SYNC`.
pub(crate) const SYNC_READ: u64 = 1;
pub(crate) const SYNC_WRITE: u64 = 2;
pub(crate) const SYNC_START: u64 = 0;
pub(crate) const SYNC_END: u64 = 4;

nix::ioctl_write_ptr!(dma_buf_ioctl_sync, b'b', 0, DmaBufSync);

/// Whether `fd` refers to a dma-buf (its inode lives on the dma-buf filesystem).
pub(crate) fn is_dmabuf(fd: BorrowedFd<'_>) -> Result<bool, Errno> {
    let st = nix::sys::statfs::fstatfs(fd)?;
    // f_type is a signed word whose width differs by architecture.
    Ok(st.filesystem_type().0 as u64 == DMA_BUF_MAGIC)
}

/// `DMA_BUF_IOCTL_SYNC` with `flags` (START or END, or'd with READ/WRITE),
/// retried on `EINTR`/`EAGAIN` as the kernel documentation asks.
#[doc(alias = "DMA_BUF_IOCTL_SYNC")]
pub(crate) fn sync(fd: BorrowedFd<'_>, flags: u64) -> Result<(), Errno> {
    let arg = DmaBufSync { flags };
    loop {
        // SAFETY: fd is a live dma-buf fd for the duration of the borrow and
        // `arg` is a valid `struct dma_buf_sync` the kernel only reads.
        match unsafe { dma_buf_ioctl_sync(fd.as_raw_fd(), &arg) } {
            Err(Errno::EINTR | Errno::EAGAIN) => continue,
            Err(e) => return Err(e),
            Ok(_) => return Ok(()),
        }
    }
}

/// `struct dma_heap_allocation_data` from `<linux/dma-heap.h>`.
#[repr(C)]
#[derive(Default)]
struct DmaHeapAllocationData {
    len: u64,
    fd: u32,
    fd_flags: u32,
    heap_flags: u64,
}

nix::ioctl_readwrite!(dma_heap_ioctl_alloc, b'H', 0, DmaHeapAllocationData);

/// `DMA_HEAP_IOCTL_ALLOC` of `len` bytes from the heap device `heap`, the new
/// dma-buf's file opened `O_RDONLY | O_CLOEXEC`: whoever holds it (or any
/// dup of it) can map it `PROT_READ` only, while a device still writes it by
/// DMA. (The `dma-heap` crate always asks for `O_RDWR`.)
#[doc(alias = "DMA_HEAP_IOCTL_ALLOC")]
pub(crate) fn heap_alloc_read_only(
    heap: BorrowedFd<'_>,
    len: usize,
) -> Result<std::os::fd::OwnedFd, Errno> {
    let mut data = DmaHeapAllocationData {
        len: len as u64,
        fd_flags: (libc::O_RDONLY | libc::O_CLOEXEC) as u32,
        ..Default::default()
    };
    // SAFETY: heap is a live fd for the borrow and `data` is a valid
    // `struct dma_heap_allocation_data` the kernel reads and fills.
    unsafe { dma_heap_ioctl_alloc(heap.as_raw_fd(), &mut data) }?;
    let raw = i32::try_from(data.fd).map_err(|_| Errno::EBADF)?;
    // SAFETY: on success the kernel installed this new fd for us alone.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) })
}
