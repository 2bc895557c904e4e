//! No fd is leaked by allocation, import, views, maps, clone_fd or errors
//! (every refusal of `from_fd`, `from_fd_unchecked` and `import_planes` included).
//! One test in its own binary: other tests open fds concurrently.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

mod common;

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

use common::{memfd, open_fds};
use nix::sys::memfd::{memfd_create, MFdFlags};
use zerocam_tensor::{
    dup_fd, Error, ImageLayout, PixelFormat, PlaneDescriptor, Region, Tensor, TensorMemory,
};

/// Every refusal of `from_fd` and its unchecked twin: each fd is closed.
fn refusals(disk: &Path) {
    let regular: OwnedFd = File::options()
        .read(true)
        .write(true)
        .open(disk)
        .unwrap()
        .into();
    let again = dup_fd(regular.as_fd()).unwrap();
    let e = Tensor::<u8>::from_fd(regular, &[64], None).unwrap_err();
    assert!(matches!(e, Error::ShrinkableFile { .. }), "{e}");
    // SAFETY (test): the file is never truncated.
    drop(unsafe { Tensor::<u8>::from_fd_unchecked(again, &[64], None) }.unwrap());
    let name = CString::new("zerocam-unsealable").unwrap();
    let unsealable = memfd_create(name.as_c_str(), MFdFlags::MFD_CLOEXEC).unwrap();
    nix::unistd::ftruncate(&unsealable, 64).unwrap();
    let _ = Tensor::<u8>::from_fd(unsealable, &[64], None).unwrap_err();
    let sealable = memfd(64);
    let read_only: OwnedFd = File::open(format!("/proc/self/fd/{}", sealable.as_raw_fd()))
        .unwrap()
        .into();
    let e = Tensor::<u8>::from_fd(read_only, &[64], None).unwrap_err();
    assert!(matches!(e, Error::CannotSeal { .. }), "{e}");
    let (socket, _peer) = UnixStream::pair().unwrap();
    let _ = Tensor::<u8>::from_fd(socket.into(), &[1], None).unwrap_err();
    let null: OwnedFd = File::open("/dev/null").unwrap().into();
    // SAFETY (test): refused before anything is mapped.
    let _ = unsafe { Tensor::<u8>::from_fd_unchecked(null, &[1], None) }.unwrap_err();
    let _ = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::new(sealable.as_fd()).unwrap(),
        PlaneDescriptor::from_owned(File::open(disk).unwrap().into()),
    )
    .unwrap_err();
}

fn churn(disk: &Path) {
    refusals(disk);
    let shm = Tensor::<u8>::image(64, 32, PixelFormat::Nv12, Some(TensorMemory::Shm)).unwrap();
    let view = shm.view(Region::new(0, 0, 32, 16)).unwrap();
    drop(view.map().unwrap());
    let imported = Tensor::<u8>::from_fd(shm.clone_fd().unwrap(), &[64 * 48], None).unwrap();
    drop(imported.batch(5).unwrap().map_read().unwrap());
    let _ = Tensor::<u8>::from_fd(memfd(10), &[11], None).unwrap_err();
    let (r, _w) = nix::unistd::pipe().unwrap();
    let _ = Tensor::<u8>::from_fd(r, &[1], None).unwrap_err();
    let fd = memfd(4096);
    let nv12 = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::new(fd.as_fd()).unwrap(),
        PlaneDescriptor::new(memfd(512).as_fd()).unwrap(),
    )
    .unwrap();
    drop(nv12.plane(1).unwrap().map().unwrap());
    let _ = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::new(fd.as_fd()).unwrap(),
        PlaneDescriptor::new(memfd(8).as_fd()).unwrap(),
    )
    .unwrap_err();
    let _ = Tensor::<u8>::builder_image(ImageLayout::new(4, 4, PixelFormat::Rgb))
        .memory(TensorMemory::Dma)
        .dma_heap("absent")
        .build()
        .unwrap_err();
    let _ = Tensor::<f32>::new(&[16], None, None).unwrap();
}

#[test]
fn no_fd_growth_over_many_rounds() {
    // A regular file on the target folder's disk (not /tmp, which may be tmpfs).
    let disk =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fd-leaks-{}", std::process::id()));
    std::fs::write(&disk, [0u8; 4096]).unwrap();
    churn(&disk); // warm-up: lazily opened process-wide fds (heap devices) settle here
    let before = open_fds();
    for _ in 0..200 {
        churn(&disk);
    }
    let after = open_fds();
    std::fs::remove_file(&disk).unwrap();
    assert_eq!(after, before, "fds leaked over 200 rounds");
}
