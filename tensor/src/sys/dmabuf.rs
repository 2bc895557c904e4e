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
