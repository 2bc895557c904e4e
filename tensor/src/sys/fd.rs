//! File-descriptor facts: what a file is, its identity and size, checked in an
//! order that leaves no race; memfd creation; dup.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::stat::{fstat, FileStat, SFlag};
use nix::unistd::{ftruncate, lseek, Whence};

use crate::{Error, FdIdentity, FdKind};

/// Which files an import accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Only files that cannot shrink: dma-bufs and memfds sealed with
    /// `F_SEAL_SHRINK` (a sealable memfd is sealed first).
    CannotShrink,
    /// Any mappable file, left as it is: the caller vouches for its size.
    AnyMappable,
    /// An fd from another process: [`Policy::CannotShrink`], and its kind is
    /// learnt before any call that runs the file's filesystem code (`fstat`,
    /// `fstatfs`, `mmap` can block forever on a FUSE server that never
    /// answers): only a shmem memfd (not hugetlbfs, whose pages a hole punch
    /// takes back: `SIGBUS` when the pool is empty) or a dma-buf.
    FromPeer,
}

/// `statfs.f_type` of hugetlbfs (`HUGETLBFS_MAGIC`).
const HUGETLBFS_MAGIC: u64 = 0x9584_58f6;

/// `statfs.f_type` of tmpfs and the kernel's internal shmem mount (`TMPFS_MAGIC`).
const TMPFS_MAGIC: u64 = 0x0102_1994;

/// The most bytes of `/proc/self/fdinfo/N` or of a `/proc/self/fd/N` link read.
const PROC_TEXT_MAX: usize = 4096;

/// The facts an import checks before mapping.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FdInfo {
    pub identity: FdIdentity,
    pub size: usize,
    pub kind: FdKind,
}

/// What `F_GET_SEALS` (or the dma-buf filesystem) says about a file's size.
enum Seals {
    DmaBuf,
    /// Has `F_SEAL_SHRINK`.
    Shrink,
    /// A memfd without `F_SEAL_SHRINK` that still allows sealing.
    Sealable,
    /// A shmem/hugetlbfs file with `F_SEAL_SEAL` and no `F_SEAL_SHRINK`.
    Unsealable,
    /// Not a shmem file (`EINVAL`): look at its mode.
    None,
}

/// Classifies `fd` under `policy` and returns its identity, kind and size.
///
/// The order leaves no window for a peer: the dma-buf filesystem first; then
/// the seals, adding `F_SEAL_SHRINK` to a sealable memfd under
/// [`Policy::CannotShrink`]; only then `fstat` for the size, which from then on
/// cannot shrink.
///
/// # Errors
/// [`Error::BadFd`] when a call fails (a closed or `O_PATH` fd);
/// [`Error::CannotSeal`] for a sealable memfd without write access;
/// [`Error::NotMappable`] (`ENODEV`) for a pipe, socket, device or directory;
/// [`Error::ShrinkableFile`] under [`Policy::CannotShrink`] for any other kind
/// that can shrink.
pub(crate) fn classify(fd: BorrowedFd<'_>, policy: Policy) -> Result<FdInfo, Error> {
    let raw = fd.as_raw_fd();
    let bad = |op: &'static str| move |errno| Error::BadFd { fd: raw, op, errno };
    let seals = if policy == Policy::FromPeer {
        peer_seals(fd)?
    } else if super::dmabuf::is_dmabuf(fd).map_err(bad("fstatfs"))? {
        Seals::DmaBuf
    } else {
        match fcntl(fd, FcntlArg::F_GET_SEALS) {
            Ok(bits) => sealed(fd, bits, policy)?,
            Err(Errno::EINVAL) => Seals::None,
            Err(errno) => return Err(bad("fcntl(F_GET_SEALS)")(errno)),
        }
    };
    // After the seal: from here on the size can only grow.
    let st = fstat(fd).map_err(bad("fstat"))?;
    let kind = match seals {
        Seals::DmaBuf => FdKind::DmaBuf,
        Seals::Shrink => FdKind::SealedMemfd,
        Seals::Sealable => FdKind::UnsealedMemfd,
        Seals::Unsealable => unsealable_kind(raw),
        Seals::None => kind_of_mode(&st),
    };
    if !kind.is_mappable() {
        return Err(Error::NotMappable {
            fd: raw,
            kind,
            errno: Errno::ENODEV,
        });
    }
    if policy != Policy::AnyMappable && kind.can_shrink() {
        return Err(Error::ShrinkableFile { fd: raw, kind });
    }
    Ok(FdInfo {
        identity: FdIdentity {
            dev: st.st_dev,
            ino: st.st_ino,
        },
        size: size(fd, &st, kind).map_err(bad("lseek"))?,
        kind,
    })
}

/// What the seals `bits` of a shmem or hugetlbfs file say, adding
/// `F_SEAL_SHRINK` to a sealable one unless `policy` is
/// [`Policy::AnyMappable`].
fn sealed(fd: BorrowedFd<'_>, bits: i32, policy: Policy) -> Result<Seals, Error> {
    let raw = fd.as_raw_fd();
    let seals = SealFlag::from_bits_truncate(bits);
    Ok(if seals.contains(SealFlag::F_SEAL_SHRINK) {
        Seals::Shrink
    } else if seals.contains(SealFlag::F_SEAL_SEAL) {
        Seals::Unsealable
    } else if policy != Policy::AnyMappable {
        // Only SHRINK: growing stays the owner's to allow or seal.
        fcntl(fd, FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_SHRINK)).map_err(|errno| match errno {
            Errno::EPERM => Error::CannotSeal { fd: raw, errno },
            _ => Error::BadFd {
                fd: raw,
                op: "fcntl(F_ADD_SEALS)",
                errno,
            },
        })?;
        Seals::Shrink
    } else {
        Seals::Sealable
    })
}

/// The seals of an fd from another process, learnt without running the
/// file's filesystem code until the file is known to be kernel memory:
///
/// 1. `F_GET_SEALS` answers from the inode for shmem and hugetlbfs files
///    and fails `EINVAL` for every other file, without calling into its
///    filesystem. A shmem or hugetlbfs file's `fstatfs` is the kernel's own
///    (no server to wait for): hugetlbfs is refused (a hole punched in it
///    faults `SIGBUS` when the huge page pool is empty), tmpfs/shmem goes on.
/// 2. Otherwise `/proc/self/fdinfo/N`, which only the file's own
///    `show_fdinfo` adds to: a dma-buf's names its exporter (`exp_name:`);
///    then `fstatfs` (the dma-buf filesystem's, in the kernel) confirms it.
/// 3. Anything else is refused without a call on it ([`Error::NotPeerMemory`]
///    naming what `/proc/self/fd/N` links to): a FUSE file whose server never
///    answers would hang `fstat` or `fstatfs` in uninterruptible sleep.
fn peer_seals(fd: BorrowedFd<'_>) -> Result<Seals, Error> {
    let raw = fd.as_raw_fd();
    let bad = |op: &'static str| move |errno| Error::BadFd { fd: raw, op, errno };
    let refuse = |what: String| Error::NotPeerMemory { fd: raw, what };
    match fcntl(fd, FcntlArg::F_GET_SEALS) {
        Ok(bits) => {
            let st = nix::sys::statfs::fstatfs(fd).map_err(bad("fstatfs"))?;
            // f_type is a signed word whose width differs by architecture.
            match st.filesystem_type().0 as u64 {
                HUGETLBFS_MAGIC => Err(refuse(format!(
                    "a hugetlbfs file ({}): a hole punched in it faults SIGBUS when the huge page pool is empty",
                    link(raw)
                ))),
                TMPFS_MAGIC => sealed(fd, bits, Policy::FromPeer),
                other => Err(refuse(format!(
                    "a sealable file on filesystem {other:#x} ({})",
                    link(raw)
                ))),
            }
        }
        Err(Errno::EINVAL) => {
            if fdinfo_names_exporter(raw) && super::dmabuf::is_dmabuf(fd).map_err(bad("fstatfs"))? {
                Ok(Seals::DmaBuf)
            } else {
                Err(refuse(format!(
                    "neither a dma-buf nor shmem ({})",
                    link(raw)
                )))
            }
        }
        Err(errno) => Err(bad("fcntl(F_GET_SEALS)")(errno)),
    }
}

/// Whether `/proc/self/fdinfo/<raw>` has a dma-buf's `exp_name:` line (only
/// the dma-buf's `show_fdinfo` writes one). Reading it runs no filesystem
/// code of the file's; without `/proc`, false.
fn fdinfo_names_exporter(raw: RawFd) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(format!("/proc/self/fdinfo/{raw}")) else {
        return false;
    };
    let mut text = Vec::with_capacity(256);
    if file
        .take(PROC_TEXT_MAX as u64)
        .read_to_end(&mut text)
        .is_err()
    {
        return false;
    }
    text.split(|&b| b == b'\n')
        .any(|l| l.starts_with(b"exp_name:"))
}

/// What `/proc/self/fd/<raw>` links to (`pipe:[N]`, a path, `/memfd:NAME`),
/// at most [`PROC_TEXT_MAX`] bytes, for an error message: `readlink` builds
/// the path from the kernel's dentries and calls no filesystem.
fn link(raw: RawFd) -> String {
    match std::fs::read_link(format!("/proc/self/fd/{raw}")) {
        Ok(path) => {
            let mut text = path.to_string_lossy().into_owned();
            if text.len() > PROC_TEXT_MAX {
                let mut end = PROC_TEXT_MAX;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
            }
            text
        }
        Err(e) => format!("/proc/self/fd/{raw} unreadable: {e}"),
    }
}

/// The size of a mappable file: `st_size`, or for a dma-buf with none (kernels
/// before 5.x left its `i_size` at 0) the end `lseek` reports.
fn size(fd: BorrowedFd<'_>, st: &FileStat, kind: FdKind) -> Result<usize, Errno> {
    let size = usize::try_from(st.st_size).unwrap_or(0);
    if size != 0 || kind != FdKind::DmaBuf {
        return Ok(size);
    }
    let end = lseek(fd, 0, Whence::SeekEnd)?;
    lseek(fd, 0, Whence::SeekSet)?;
    Ok(usize::try_from(end).unwrap_or(0))
}

/// A shmem file that cannot be sealed: a memfd (its `/proc/self/fd` link reads
/// `/memfd:NAME (deleted)`) or a tmpfs/hugetlbfs file. A checked import that
/// accepts pays no `readlink` (an unsealable file is refused); an unchecked
/// import of such a file pays one, at import time. Without `/proc`, a shm file.
fn unsealable_kind(raw: i32) -> FdKind {
    match std::fs::read_link(format!("/proc/self/fd/{raw}")) {
        Ok(path) if path.as_os_str().as_encoded_bytes().starts_with(b"/memfd:") => {
            FdKind::UnsealableMemfd
        }
        _ => FdKind::ShmFile,
    }
}

/// The kind of a file that is not shmem, from its `st_mode`.
fn kind_of_mode(st: &FileStat) -> FdKind {
    match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => FdKind::RegularFile,
        SFlag::S_IFCHR => FdKind::CharDevice,
        SFlag::S_IFBLK => FdKind::BlockDevice,
        SFlag::S_IFIFO => FdKind::Pipe,
        SFlag::S_IFSOCK => FdKind::Socket,
        SFlag::S_IFDIR => FdKind::Directory,
        _ => FdKind::Other,
    }
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

/// A close-on-exec duplicate of `fd` (`fcntl(F_DUPFD_CLOEXEC)`), with the
/// kernel's errno when it fails.
pub(crate) fn dup(fd: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    dup_number(fd.as_raw_fd())
}

/// A close-on-exec duplicate of the fd number `fd`, which nothing here owns or
/// borrows (a number from Python or a C struct): `fcntl(F_DUPFD_CLOEXEC)` on
/// the number itself, so it is never treated as a live fd before the kernel
/// says it is one. A closed or negative number fails with `EBADF`.
pub(crate) fn dup_number(fd: RawFd) -> Result<OwnedFd, Errno> {
    // SAFETY: F_DUPFD_CLOEXEC on a plain number reads and writes no memory
    // and leaves the fd it names as it is; a number that is not an open fd
    // makes it fail with EBADF.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        return Err(Errno::last());
    }
    // SAFETY: fcntl just returned `new`, a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}
