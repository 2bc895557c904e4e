//! File-descriptor facts: identity, size, kind; memfd creation; dup.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::stat::{fstat, SFlag};
use nix::unistd::{ftruncate, lseek, Whence};

use crate::FdIdentity;

/// What an fd is, as far as mapping it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FdKind {
    DmaBuf,
    /// A regular file: memfd, POSIX shm, tmpfs or disk file.
    File,
    Other(&'static str),
}

impl FdKind {
    pub fn name(self) -> &'static str {
        match self {
            FdKind::DmaBuf => "dma-buf",
            FdKind::File => "regular file",
            FdKind::Other(n) => n,
        }
    }
}

/// The facts `from_fd` checks before mapping.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FdInfo {
    pub identity: FdIdentity,
    pub size: usize,
    pub kind: FdKind,
}

/// Inspects `fd`: `(st_dev, st_ino)`, size and kind.
pub(crate) fn inspect(fd: BorrowedFd<'_>) -> Result<FdInfo, (&'static str, Errno)> {
    let st = fstat(fd).map_err(|e| ("fstat", e))?;
    let identity = FdIdentity {
        dev: st.st_dev,
        ino: st.st_ino,
    }; // as FdIdentity::of, from the one fstat that also gives size and mode
    let kind = if super::dmabuf::is_dmabuf(fd).map_err(|e| ("fstatfs", e))? {
        FdKind::DmaBuf
    } else {
        match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
            SFlag::S_IFREG => FdKind::File,
            SFlag::S_IFCHR => FdKind::Other("character device"),
            SFlag::S_IFIFO => FdKind::Other("pipe"),
            SFlag::S_IFSOCK => FdKind::Other("socket"),
            SFlag::S_IFDIR => FdKind::Other("directory"),
            _ => FdKind::Other("special file"),
        }
    };
    let mut size = usize::try_from(st.st_size).unwrap_or(0);
    if size == 0 && kind == FdKind::DmaBuf {
        // Kernels before 5.x left i_size at 0 for dma-bufs; lseek reports the size.
        let end = lseek(fd, 0, Whence::SeekEnd).map_err(|e| ("lseek", e))?;
        size = usize::try_from(end).unwrap_or(0);
        lseek(fd, 0, Whence::SeekSet).map_err(|e| ("lseek", e))?;
    }
    Ok(FdInfo {
        identity,
        size,
        kind,
    })
}

/// A close-on-exec memfd of `len` bytes, sealed against shrinking and growing.
pub(crate) fn memfd(name: &CStr, len: usize) -> Result<OwnedFd, (&'static str, Errno)> {
    let fd = memfd_create(name, MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING)
        .map_err(|e| ("memfd_create", e))?;
    let len = i64::try_from(len).map_err(|_| ("ftruncate", Errno::EFBIG))?;
    ftruncate(&fd, len).map_err(|e| ("ftruncate", e))?;
    // A peer given the fd must not shrink it under our mapping (SIGBUS here).
    fcntl(
        &fd,
        FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW),
    )
    .map_err(|e| ("fcntl(F_ADD_SEALS)", e))?;
    Ok(fd)
}

/// A close-on-exec duplicate of `fd`.
pub(crate) fn dup(fd: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    fd.as_fd().try_clone_to_owned().map_err(|e| {
        e.raw_os_error()
            .map(Errno::from_raw)
            .unwrap_or(Errno::UnknownErrno)
    })
}
