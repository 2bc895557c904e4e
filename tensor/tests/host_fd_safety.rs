//! `from_fd` accepts only files that cannot shrink under its mapping: each kind
//! of fd a caller (or another process) can hand over, on the host's kernel.
//! Every refusal is a typed error naming the kind, never a SIGBUS later.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

mod common;

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use common::memfd;
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag, SealFlag};
use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::stat::Mode;
use nix::unistd::ftruncate;
use zerocam_tensor::{
    dup_fd, dup_fd_number, DType, Error, FdKind, PixelFormat, PlaneDescriptor, Tensor, TensorDyn,
    TensorMemory,
};

/// Removes a test file when dropped.
struct Unlink(PathBuf);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A read-write regular file of `len` bytes on the target folder's disk
/// filesystem (not /tmp, which may be tmpfs). It stays linked until the guard
/// drops: the lab's 9p share fails `fstatfs` of an unlinked file (`ENOENT`).
fn disk_file(len: u64) -> (OwnedFd, Unlink) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!(
        "zerocam-fd-{}-{:?}-{len}",
        std::process::id(),
        std::thread::current().id()
    ));
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    f.set_len(len).unwrap();
    (f.into(), Unlink(path))
}

/// A POSIX shared-memory object (`shm_open`, a tmpfs file in /dev/shm) of `len` bytes.
fn posix_shm(len: i64) -> OwnedFd {
    let name = format!(
        "/zerocam-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    );
    let fd = nix::sys::mman::shm_open(
        name.as_str(),
        OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_RDWR,
        Mode::S_IRUSR | Mode::S_IWUSR,
    )
    .unwrap();
    nix::sys::mman::shm_unlink(name.as_str()).unwrap();
    ftruncate(&fd, len).unwrap();
    fd
}

/// A memfd made without `MFD_ALLOW_SEALING`: it can never be sealed.
fn unsealable_memfd(len: i64) -> OwnedFd {
    let name = CString::new("zerocam-unsealable").unwrap();
    let fd = memfd_create(name.as_c_str(), MFdFlags::MFD_CLOEXEC).unwrap();
    ftruncate(&fd, len).unwrap();
    fd
}

/// A new read-only open of the file behind `fd` (as a peer would get it).
fn reopen_read_only(fd: BorrowedFd<'_>) -> OwnedFd {
    File::open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .unwrap()
        .into()
}

fn seals(fd: BorrowedFd<'_>) -> SealFlag {
    SealFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GET_SEALS).unwrap())
}

fn refused_as(e: &Error, fd: i32, want: FdKind) {
    assert!(
        matches!(e, Error::ShrinkableFile { fd: f, kind } if *f == fd && *kind == want),
        "{e}"
    );
    let msg = e.to_string();
    for words in [
        &format!("fd {fd} is {want}"),
        "SIGBUS",
        "dma-buf",
        "F_SEAL_SHRINK",
        "from_fd_unchecked",
    ] {
        assert!(msg.contains(words), "{msg:?} lacks {words:?}");
    }
}

#[test]
fn a_regular_file_truncated_after_the_call_would_be_refused_at_the_call() {
    // The case: 1 MiB regular file, imported, then truncated to 0 by
    // its owner. The import itself is refused, so no map can touch lost pages.
    let (fd, _file) = disk_file(1 << 20);
    let n = fd.as_raw_fd();
    let keep = dup_fd(fd.as_fd()).unwrap();
    let e = Tensor::<u8>::from_fd(fd, &[1024, 1024], None).unwrap_err();
    refused_as(&e, n, FdKind::RegularFile);
    ftruncate(&keep, 0).unwrap(); // the owner still may: nothing of ours maps it
}

#[test]
fn a_regular_file_at_full_size_is_refused_but_taken_unchecked() {
    let (fd, _file) = disk_file(4096);
    let e = Tensor::<u8>::from_fd(dup_fd(fd.as_fd()).unwrap(), &[4096], None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::ShrinkableFile {
                kind: FdKind::RegularFile,
                ..
            }
        ),
        "{e}"
    );
    nix::unistd::write(&fd, b"unchecked").unwrap();
    // SAFETY (test): the file is private to this test and never truncated.
    let t = unsafe { Tensor::<u8>::from_fd_unchecked(fd, &[64, 64], Some("disk")) }.unwrap();
    assert_eq!(t.memory(), TensorMemory::Shm);
    assert_eq!(&t.map_read().unwrap()[..9], b"unchecked");
    t.map().unwrap()[4095] = 1; // writable: opened read-write
    let (small, _small_file) = disk_file(64);
    // SAFETY (test): as above.
    let e = unsafe { TensorDyn::from_fd_unchecked(small, &[17], DType::F32, None) }.unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                needed: 68,
                available: 64
            }
        ),
        "{e}"
    );
}

#[test]
fn a_posix_shm_file_is_refused_as_shm() {
    let fd = posix_shm(4096);
    let n = fd.as_raw_fd();
    let e = Tensor::<u8>::from_fd(fd, &[4096], None).unwrap_err();
    refused_as(&e, n, FdKind::ShmFile);
}

#[test]
fn a_tmpfs_file_in_dev_shm_is_refused_as_shm() {
    let path = format!("/dev/shm/zerocam-tmpfs-{}", std::process::id());
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    f.set_len(4096).unwrap();
    let fd: OwnedFd = f.into();
    let n = fd.as_raw_fd();
    let e = Tensor::<u8>::from_fd(fd, &[16], None).unwrap_err();
    refused_as(&e, n, FdKind::ShmFile);
}

#[test]
fn a_memfd_made_without_allow_sealing_is_refused() {
    let fd = unsealable_memfd(4096);
    let n = fd.as_raw_fd();
    let e = Tensor::<u8>::from_fd(fd, &[16], None).unwrap_err();
    refused_as(&e, n, FdKind::UnsealableMemfd);
    assert!(e.to_string().contains("MFD_ALLOW_SEALING"), "{e}");
}

#[test]
fn a_memfd_sealed_shut_without_shrink_is_refused() {
    let fd = memfd(4096);
    fcntl(
        &fd,
        FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SEAL),
    )
    .unwrap();
    let n = fd.as_raw_fd();
    let e = Tensor::<u8>::from_fd(fd, &[16], None).unwrap_err();
    refused_as(&e, n, FdKind::UnsealableMemfd);
}

#[test]
fn a_sealable_memfd_is_sealed_against_shrinking_only() {
    let fd = memfd(8192);
    let peer = dup_fd(fd.as_fd()).unwrap();
    assert!(seals(peer.as_fd()).is_empty());
    let t = Tensor::<u8>::from_fd(fd, &[8192], None).unwrap();
    assert_eq!(t.memory(), TensorMemory::Shm);
    assert_eq!(
        seals(peer.as_fd()),
        SealFlag::F_SEAL_SHRINK,
        "only SHRINK is added"
    );
    assert_eq!(
        ftruncate(&peer, 4096),
        Err(Errno::EPERM),
        "the seal is really there"
    );
    assert_eq!(ftruncate(&peer, 0), Err(Errno::EPERM));
    ftruncate(&peer, 16384).unwrap(); // growing is still the owner's to allow
    let m = t.map_read().unwrap();
    assert_eq!(m.len(), 8192);
    assert_eq!(m[8191], 0, "every mapped page is still there");
}

#[test]
fn the_size_is_read_after_the_seal() {
    // Shrunk before the import: the import sees the shrunk size, and refuses a
    // shape that no longer fits rather than mapping pages that are gone.
    let fd = memfd(8192);
    ftruncate(&fd, 100).unwrap();
    let e = Tensor::<u8>::from_fd(fd, &[8192], None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                needed: 8192,
                available: 100
            }
        ),
        "{e}"
    );
}

#[test]
fn a_sealable_memfd_given_read_only_is_a_typed_error() {
    let fd = memfd(4096);
    let ro = reopen_read_only(fd.as_fd());
    let n = ro.as_raw_fd();
    let e = Tensor::<u8>::from_fd(ro, &[16], None).unwrap_err();
    assert!(
        matches!(e, Error::CannotSeal { fd, errno: Errno::EPERM } if fd == n),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("read-only") && msg.contains("F_SEAL_SHRINK"),
        "{msg}"
    );
    assert!(
        seals(fd.as_fd()).is_empty(),
        "a failed import leaves no seal"
    );
    // Once its owner seals it, the same read-only reopen is taken, read-only.
    fcntl(&fd, FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_SHRINK)).unwrap();
    nix::unistd::write(&fd, b"sealed").unwrap();
    let t = Tensor::<u8>::from_fd(reopen_read_only(fd.as_fd()), &[4096], None).unwrap();
    assert_eq!(&t.map_read().unwrap()[..6], b"sealed");
    assert!(matches!(t.map(), Err(Error::ReadOnly { .. })));
}

#[test]
fn the_unchecked_import_leaves_a_sealable_memfd_unsealed() {
    let fd = memfd(4096);
    let peer = dup_fd(fd.as_fd()).unwrap();
    // SAFETY (test): nothing truncates the memfd while `t` lives.
    let t = unsafe { Tensor::<u8>::from_fd_unchecked(fd, &[4096], None) }.unwrap();
    assert!(seals(peer.as_fd()).is_empty());
    assert_eq!(t.map_read().unwrap().len(), 4096);
}

#[test]
fn pipes_sockets_devices_and_directories_are_not_mappable_even_unchecked() {
    let (r, _w) = nix::unistd::pipe().unwrap();
    let (s, _peer) = UnixStream::pair().unwrap();
    let null: OwnedFd = File::open("/dev/null").unwrap().into();
    let dir: OwnedFd = File::open("/").unwrap().into();
    for (fd, kind) in [
        (r, FdKind::Pipe),
        (s.into(), FdKind::Socket),
        (null, FdKind::CharDevice),
        (dir, FdKind::Directory),
    ] {
        let n = fd.as_raw_fd();
        let again = dup_fd(fd.as_fd()).unwrap();
        let e = Tensor::<u8>::from_fd(fd, &[16], None).unwrap_err();
        assert!(
            matches!(e, Error::NotMappable { fd, kind: k, errno: Errno::ENODEV } if fd == n && k == kind),
            "{e}"
        );
        assert!(e.to_string().contains(&kind.to_string()), "{e}");
        // SAFETY (test): refused before anything is mapped.
        let e = unsafe { Tensor::<u8>::from_fd_unchecked(again, &[16], None) }.unwrap_err();
        assert!(
            matches!(e, Error::NotMappable { kind: k, .. } if k == kind),
            "{e}"
        );
    }
}

#[test]
fn a_closed_fd_number_is_ebadf() {
    // SAFETY (test): fd 999_999 is far above any open fd; dup only reports EBADF.
    let closed = unsafe { BorrowedFd::borrow_raw(999_999) };
    let e = dup_fd(closed).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DupFailed {
                fd: 999_999,
                errno: Errno::EBADF
            }
        ),
        "{e}"
    );
}

/// `dup_fd_number`, the dup of a number from outside Rust (a Python int, a
/// capsule's field): the kernel judges the number before anything uses it.
#[test]
fn an_fd_number_is_duplicated_close_on_exec_and_a_closed_or_negative_one_is_ebadf() {
    for number in [999_999, -1, i32::MIN] {
        let e = dup_fd_number(number).unwrap_err();
        assert!(
            matches!(e, Error::DupFailed { fd, errno: Errno::EBADF } if fd == number),
            "{number}: {e}"
        );
    }
    let file = memfd(64);
    let copy = dup_fd_number(file.as_raw_fd()).unwrap();
    assert_ne!(copy.as_raw_fd(), file.as_raw_fd());
    let flags = fcntl(&copy, FcntlArg::F_GETFD).unwrap();
    assert_ne!(
        flags & nix::libc::FD_CLOEXEC,
        0,
        "the copy is close-on-exec"
    );
    let t = Tensor::<u8>::from_fd(copy, &[64], None).unwrap();
    assert_eq!(
        t.fd_identity(),
        zerocam_tensor::FdIdentity::of(file.as_fd()).ok()
    );
}

#[test]
fn import_planes_refuses_shrinkable_files_too() {
    let (file, _file) = disk_file(4096);
    let n = file.as_raw_fd();
    let e = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::from_owned(file),
        PlaneDescriptor::from_owned(memfd(512)),
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::ShrinkableFile { fd, kind: FdKind::RegularFile } if fd == n),
        "{e}"
    );
    let e = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::from_owned(memfd(512)),
        PlaneDescriptor::from_owned(unsealable_memfd(512)),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::ShrinkableFile {
                kind: FdKind::UnsealableMemfd,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn our_own_memory_round_trips_through_from_fd() {
    let shm = Tensor::<u16>::new(&[512], Some(TensorMemory::Shm), None).unwrap();
    let fd = shm.clone_fd().unwrap();
    assert!(seals(fd.as_fd()).contains(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW));
    let again = Tensor::<u16>::from_fd(fd, &[512], None).unwrap();
    assert_eq!(again.fd_identity(), shm.fd_identity());
}
