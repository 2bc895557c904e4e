//! File descriptors as `from_fd` sees them: [`FdKind`], what a file is and
//! whether its size can shrink under a mapping, [`dup_fd`] and
//! [`dup_fd_number`].

use std::fmt;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

use crate::{Error, Result};

/// What the file behind an fd is, as far as importing it goes.
///
/// [`Tensor::from_fd`](crate::Tensor::from_fd) maps the whole file once and
/// keeps it mapped. If the file then shrinks, touching a page past its new end
/// kills the process with `SIGBUS`, so `from_fd` accepts only the kinds whose
/// size cannot shrink ([`can_shrink`](FdKind::can_shrink) is false):
/// [`DmaBuf`](FdKind::DmaBuf) and [`SealedMemfd`](FdKind::SealedMemfd). A memfd
/// that still allows sealing is sealed with `F_SEAL_SHRINK` on import and becomes
/// a `SealedMemfd`. Every other kind is refused with
/// [`Error::ShrinkableFile`] (regular and shared-memory files) or
/// [`Error::NotMappable`] (pipes, sockets, devices, directories).
///
/// ```
/// use zerocam_tensor::FdKind;
/// assert!(!FdKind::DmaBuf.can_shrink());
/// assert!(FdKind::RegularFile.can_shrink());
/// assert_eq!(FdKind::Pipe.to_string(), "a pipe");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FdKind {
    /// A dma-buf (its inode is on the dma-buf filesystem): its size is fixed
    /// by its exporter.
    DmaBuf,
    /// A memfd sealed with `F_SEAL_SHRINK`: it can grow, never shrink.
    SealedMemfd,
    /// A memfd made with `MFD_ALLOW_SEALING` but not (yet) sealed against
    /// shrinking. `from_fd` seals it; only the unchecked import sees it as is.
    UnsealedMemfd,
    /// A memfd that can no longer be sealed against shrinking: made without
    /// `MFD_ALLOW_SEALING`, or its owner set `F_SEAL_SEAL` without
    /// `F_SEAL_SHRINK`.
    UnsealableMemfd,
    /// A file on tmpfs or hugetlbfs, e.g. POSIX shared memory
    /// (`shm_open`, `/dev/shm`): anyone who can open it can truncate it.
    ShmFile,
    /// A regular file on a filesystem without seals (a disk, a network share).
    RegularFile,
    /// A pipe or FIFO.
    Pipe,
    /// A socket.
    Socket,
    /// A character device node (`/dev/null`, a tty, a V4L2 node).
    CharDevice,
    /// A block device node.
    BlockDevice,
    /// A directory.
    Directory,
    /// Anything else: an anonymous inode (eventfd, timerfd…). (An `O_PATH` fd
    /// is refused before its kind is read: `Error::BadFd`, `EBADF`.)
    Other,
}

impl FdKind {
    /// Whether the file's size can shrink while it is mapped: the kinds safe
    /// [`Tensor::from_fd`](crate::Tensor::from_fd) refuses.
    pub const fn can_shrink(self) -> bool {
        !matches!(self, FdKind::DmaBuf | FdKind::SealedMemfd)
    }

    /// Whether the file has bytes an `mmap` can map: dma-bufs, memfds, shared
    /// memory and regular files, not pipes, sockets, devices or directories.
    pub const fn is_mappable(self) -> bool {
        matches!(
            self,
            FdKind::DmaBuf
                | FdKind::SealedMemfd
                | FdKind::UnsealedMemfd
                | FdKind::UnsealableMemfd
                | FdKind::ShmFile
                | FdKind::RegularFile
        )
    }
}

impl fmt::Display for FdKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FdKind::DmaBuf => "a dma-buf",
            FdKind::SealedMemfd => "a memfd sealed with F_SEAL_SHRINK",
            FdKind::UnsealedMemfd => "a memfd without F_SEAL_SHRINK",
            FdKind::UnsealableMemfd => {
                "a memfd that cannot be sealed (made without MFD_ALLOW_SEALING, or F_SEAL_SEAL set without F_SEAL_SHRINK)"
            }
            FdKind::ShmFile => "a tmpfs or POSIX shared-memory (/dev/shm) file",
            FdKind::RegularFile => "a regular file",
            FdKind::Pipe => "a pipe",
            FdKind::Socket => "a socket",
            FdKind::CharDevice => "a character device",
            FdKind::BlockDevice => "a block device",
            FdKind::Directory => "a directory",
            FdKind::Other => "a special file",
        })
    }
}

/// Checks an fd taken from another process the way
/// [`Tensor::from_peer_fd`](crate::Tensor::from_peer_fd) does, and returns its
/// kind: [`FdKind::DmaBuf`] or [`FdKind::SealedMemfd`] (a shmem memfd; a
/// sealable one given writable is sealed with `F_SEAL_SHRINK` here).
///
/// The kind is learnt before any call that runs the file's filesystem code:
/// `fcntl(F_GET_SEALS)` (answered from the inode, only shmem and hugetlbfs
/// files have seals), then `/proc/self/fdinfo/N` (a dma-buf names its
/// exporter there); only once the file is known to be kernel memory do
/// `fstatfs` and `fstat` run. So a FUSE file whose server never answers is
/// refused at once instead of hanging the caller in uninterruptible sleep,
/// and a hugetlbfs file (a hole punched in it faults `SIGBUS` when the pool
/// is empty) is refused too. Once it returns `Ok`, `fstat` on `fd`
/// ([`FdIdentity::of`](crate::FdIdentity::of)) cannot block.
///
/// ```
/// use std::os::fd::AsFd;
/// use zerocam_tensor::{check_peer_fd, Error, FdKind, Tensor, TensorMemory};
/// let shm = Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None)?;
/// assert_eq!(check_peer_fd(shm.fd().expect("an fd"))?, FdKind::SealedMemfd);
/// let (r, _w) = nix::unistd::pipe().expect("a pipe");
/// assert!(matches!(check_peer_fd(r.as_fd()), Err(Error::NotPeerMemory { .. })));
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
///
/// # Errors
/// [`Error::NotPeerMemory`] for anything but shmem or a dma-buf (a pipe, a
/// socket, a regular, FUSE or hugetlbfs file…), naming what it is;
/// [`Error::ShrinkableFile`] for shmem that can shrink (unsealable, or a
/// tmpfs file); [`Error::CannotSeal`] for a sealable memfd given read-only;
/// [`Error::BadFd`] for a closed fd.
pub fn check_peer_fd(fd: BorrowedFd<'_>) -> Result<FdKind> {
    Ok(crate::sys::fd::classify(fd, crate::sys::fd::Policy::FromPeer)?.kind)
}

/// A close-on-exec duplicate of `fd` (`fcntl(F_DUPFD_CLOEXEC)`); the caller
/// keeps its own.
///
/// ```
/// use std::os::fd::AsFd;
/// use zerocam_tensor::{dup_fd, FdIdentity, Tensor, TensorMemory};
/// let t = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None)?;
/// let fd = dup_fd(t.fd().expect("shm has an fd"))?;
/// assert_eq!(FdIdentity::of(fd.as_fd()).ok(), t.fd_identity());
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
///
/// # Errors
/// [`Error::DupFailed`] with the kernel's errno (`EMFILE` when out of fds).
pub fn dup_fd(fd: BorrowedFd<'_>) -> Result<OwnedFd> {
    crate::sys::fd::dup(fd).map_err(|errno| Error::DupFailed {
        fd: fd.as_raw_fd(),
        errno,
    })
}

/// A close-on-exec duplicate of the fd *number* `fd`, for numbers that come
/// from outside Rust's fd ownership (a Python int, a field of a C struct):
/// `fcntl(F_DUPFD_CLOEXEC)` on the number itself, so the number is never
/// taken for a live fd before the kernel says it is one. The caller keeps
/// whatever it had. Rust code that holds the fd uses [`dup_fd`].
///
/// ```
/// use std::os::fd::AsRawFd;
/// use zerocam_tensor::{dup_fd_number, Error, FdIdentity, Tensor, TensorMemory};
/// let t = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None)?;
/// let number = t.fd().expect("shm has an fd").as_raw_fd();
/// let fd = dup_fd_number(number)?;
/// assert_eq!(FdIdentity::of(std::os::fd::AsFd::as_fd(&fd)).ok(), t.fd_identity());
/// let e = dup_fd_number(-1).unwrap_err();
/// assert!(matches!(e, Error::DupFailed { fd: -1, errno: nix::errno::Errno::EBADF }));
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
///
/// # Errors
/// [`Error::DupFailed`] with the kernel's errno: `EBADF` for a closed or
/// negative number, `EMFILE` when out of fds.
pub fn dup_fd_number(fd: RawFd) -> Result<OwnedFd> {
    crate::sys::fd::dup_number(fd).map_err(|errno| Error::DupFailed { fd, errno })
}
