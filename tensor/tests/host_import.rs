//! `from_fd` / `clone_fd` on the host: memfd imports, identities, sharing with
//! another process, and fds that cannot be mapped (the kinds of file that can
//! shrink are in `host_fd_safety.rs`).
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

mod common;

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::process::Command;

use common::memfd;
use zerocam_tensor::{DType, Error, FdKind, PlaneDescriptor, Tensor, TensorDyn, TensorMemory};

#[test]
fn memfd_import_maps_the_file_bytes() {
    let fd = memfd(4096);
    nix::unistd::write(&fd, b"zerocam").unwrap();
    let t = Tensor::<u8>::from_fd(fd, &[4096], Some("import")).unwrap();
    assert_eq!(
        t.memory(),
        TensorMemory::Shm,
        "a memfd is shared memory, not a dma-buf"
    );
    assert_eq!(&t.map_read().unwrap()[..7], b"zerocam");
    assert_eq!(t.name(), Some("import"));
}

#[test]
fn clone_fd_round_trip_shares_memory_and_inode_but_not_identity() {
    let a = Tensor::<u32>::new(&[256], Some(TensorMemory::Shm), None).unwrap();
    a.map().unwrap()[100] = 0xdead_beef;
    let b = Tensor::<u32>::from_fd(a.clone_fd().unwrap(), &[256], None).unwrap();
    assert_eq!(b.map_read().unwrap()[100], 0xdead_beef);
    b.map().unwrap()[5] = 7;
    assert_eq!(a.map_read().unwrap()[5], 7);
    assert_eq!(
        a.fd_identity(),
        b.fd_identity(),
        "same file, same (st_dev, st_ino)"
    );
    assert_ne!(
        a.buffer_identity(),
        b.buffer_identity(),
        "every import is a new identity"
    );
}

#[test]
fn fd_identity_is_fstat_dev_and_ino() {
    let fd = memfd(64);
    let st = nix::sys::stat::fstat(&fd).unwrap();
    let t = Tensor::<u8>::from_fd(fd, &[64], None).unwrap();
    let id = t.fd_identity().unwrap();
    assert_eq!((id.dev, id.ino), (st.st_dev, st.st_ino));
    assert_eq!(t.plane_offset(), 0);
}

#[test]
fn a_smaller_shape_than_the_fd_is_fine_a_larger_one_is_an_error() {
    assert!(Tensor::<u8>::from_fd(memfd(100), &[10, 10], None).is_ok());
    let e = Tensor::<u8>::from_fd(memfd(100), &[10, 11], None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                needed: 110,
                available: 100
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("110") && e.to_string().contains("100"));
    let e = Tensor::<f32>::from_fd(memfd(100), &[26], None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                needed: 104,
                available: 100
            }
        ),
        "{e}"
    );
}

#[test]
fn an_empty_file_is_too_small() {
    let e = Tensor::<u8>::from_fd(memfd(0), &[1], None).unwrap_err();
    assert!(
        matches!(e, Error::BufferTooSmall { available: 0, .. }),
        "{e}"
    );
}

#[test]
fn a_pipe_is_not_mappable() {
    let (r, _w) = nix::unistd::pipe().unwrap();
    let e = Tensor::<u8>::from_fd(r, &[16], None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotMappable {
                kind: FdKind::Pipe,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("pipe"), "{e}");
}

#[test]
fn a_character_device_is_not_mappable() {
    let f: OwnedFd = File::open("/dev/null").unwrap().into();
    let e = Tensor::<u8>::from_fd(f, &[16], None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotMappable {
                kind: FdKind::CharDevice,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_directory_is_not_mappable() {
    let f: OwnedFd = File::open("/").unwrap().into();
    let e = Tensor::<u8>::from_fd(f, &[16], None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotMappable {
                kind: FdKind::Directory,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn an_o_path_fd_cannot_be_mapped() {
    let dir = std::env::temp_dir().join(format!("zerocam-opath-{}", std::process::id()));
    std::fs::write(&dir, [0u8; 64]).unwrap();
    let fd = nix::fcntl::open(
        &dir,
        nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .unwrap();
    let e = Tensor::<u8>::from_fd(fd, &[16], None).unwrap_err();
    std::fs::remove_file(&dir).unwrap();
    assert!(
        matches!(e, Error::BadFd { .. } | Error::NotMappable { .. }),
        "{e}"
    );
}

#[test]
fn a_closed_fd_is_a_typed_error() {
    // SAFETY (test): fd 999_999 is far above any open fd; dup only reports EBADF.
    let closed = unsafe { BorrowedFd::borrow_raw(999_999) };
    let e = PlaneDescriptor::new(closed).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DupFailed {
                fd: 999_999,
                errno: nix::errno::Errno::EBADF
            }
        ),
        "{e}"
    );
}

#[test]
fn a_read_only_fd_maps_for_reading_only() {
    let t = Tensor::<u8>::new(&[32], Some(TensorMemory::Shm), None).unwrap();
    t.map_write().unwrap().fill(5);
    // A peer's read-only open of our (sealed) shared memory.
    let path = format!("/proc/self/fd/{}", t.fd().unwrap().as_raw_fd());
    let fd: OwnedFd = File::open(path).unwrap().into();
    let t = Tensor::<u8>::from_fd(fd, &[32], None).unwrap();
    assert_eq!(t.map_read().unwrap()[31], 5);
    let e = t.map().unwrap_err();
    assert!(matches!(e, Error::ReadOnly { .. }), "{e}");
    assert!(matches!(t.map_write(), Err(Error::ReadOnly { .. })));
}

#[test]
fn shm_is_shared_with_another_process() {
    let t = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None).unwrap();
    let fd = t.fd().unwrap().as_raw_fd();
    // A child process writes through /proc/<pid>/fd/<n>: a real second process.
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf 'from-child' | dd of=/proc/{}/fd/{fd} conv=notrunc status=none",
            std::process::id()
        ))
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(&t.map_read().unwrap()[..10], b"from-child");
}

#[test]
fn tensor_dyn_from_fd_checks_size_by_dtype() {
    let t = TensorDyn::from_fd(memfd(64), &[16], DType::F32, None).unwrap();
    assert_eq!(t.size(), 64);
    let e = TensorDyn::from_fd(memfd(64), &[16], DType::F64, None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                needed: 128,
                available: 64
            }
        ),
        "{e}"
    );
}

#[test]
fn borrowed_fd_is_the_tensors_own() {
    let t = Tensor::<u8>::new(&[8], Some(TensorMemory::Shm), None).unwrap();
    let dup = t.clone_fd().unwrap();
    assert_ne!(dup.as_raw_fd(), t.fd().unwrap().as_raw_fd());
    assert_eq!(
        nix::sys::stat::fstat(dup.as_fd()).unwrap().st_ino,
        t.fd_identity().unwrap().ino
    );
}

#[test]
fn two_imports_of_one_file_cannot_alias_writable_maps() {
    let a = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None).unwrap();
    let b = Tensor::<u8>::from_fd(a.clone_fd().unwrap(), &[64], None).unwrap();
    let w = a.map().unwrap();
    let e = b.map_read().unwrap_err();
    assert!(matches!(e, Error::MapConflict { .. }), "{e}");
    drop(w);
    let (r1, r2) = (a.map_read().unwrap(), b.map_read().unwrap());
    drop((r1, r2));
    assert!(b.map().is_ok());
}

#[test]
fn a_device_borrow_blocks_cpu_maps_of_every_import() {
    use zerocam_tensor::{Access, FileBorrows};
    let a = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None).unwrap();
    let b = Tensor::<u8>::from_fd(a.clone_fd().unwrap(), &[64], None).unwrap();
    let device = FileBorrows::of(a.fd_identity().unwrap())
        .device_borrow(Access::Write)
        .unwrap();
    assert!(matches!(
        b.map_read(),
        Err(Error::MapConflict {
            held: Access::Write,
            ..
        })
    ));
    drop(device);
    let held = b.map_read().unwrap();
    let e = FileBorrows::of(a.fd_identity().unwrap())
        .device_borrow(Access::Write)
        .unwrap_err();
    assert!(
        matches!(e, Error::MapConflict { .. }),
        "a mapped buffer cannot go to the device"
    );
    drop(held);
}

#[test]
fn overflowing_layouts_are_errors_not_wild_pointers() {
    use zerocam_tensor::{ImageLayout, PixelFormat, PlaneDescriptor};
    let t = Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None).unwrap();
    let e = t
        .clone()
        .with_image(ImageLayout::new(64, 64, PixelFormat::Grey).with_batch((1 << 52) + 1))
        .unwrap_err();
    assert!(
        matches!(e, Error::BadImageSize { .. } | Error::BufferTooSmall { .. }),
        "{e}"
    );
    let e = t
        .clone()
        .with_image(ImageLayout::new(8, 8, PixelFormat::Grey).with_start_offset(usize::MAX - 4))
        .unwrap_err();
    assert!(
        matches!(e, Error::BadPlaneOffset { .. } | Error::BadImageSize { .. }),
        "{e}"
    );
    let e = Tensor::<u8>::builder_image(
        ImageLayout::new(8, 8, PixelFormat::Nv12)
            .with_start_offset(usize::MAX / 2)
            .with_plane_offset(usize::MAX / 2),
    )
    .memory(TensorMemory::Mem)
    .build()
    .unwrap_err();
    assert!(matches!(e, Error::BadImageSize { .. }), "{e}");
    let fd = memfd(4096);
    let e = Tensor::<u8>::import_planes(
        64,
        4,
        PixelFormat::Nv12,
        PlaneDescriptor::new(fd.as_fd())
            .unwrap()
            .with_stride((usize::MAX / 3) + 1),
        PlaneDescriptor::new(fd.as_fd()).unwrap(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::BufferTooSmall { .. }), "{e}");
}

#[test]
fn shm_cannot_be_shrunk_by_a_peer() {
    let t = Tensor::<u8>::new(&[8192], Some(TensorMemory::Shm), None).unwrap();
    let fd = t.clone_fd().unwrap();
    assert_eq!(
        nix::unistd::ftruncate(&fd, 0),
        Err(nix::errno::Errno::EPERM)
    );
    assert_eq!(t.map_read().unwrap().len(), 8192);
}
