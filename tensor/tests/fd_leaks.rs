//! No fd is leaked by allocation, import, views, maps, clone_fd or errors.
//! One test in its own binary: other tests open fds concurrently.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

mod common;

use std::os::fd::AsFd;

use common::{memfd, open_fds};
use zerocam_tensor::{ImageLayout, PixelFormat, PlaneDescriptor, Region, Tensor, TensorMemory};

fn churn() {
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
    churn(); // warm-up: lazily opened process-wide fds (heap devices) settle here
    let before = open_fds();
    for _ in 0..200 {
        churn();
    }
    assert_eq!(open_fds(), before, "fds leaked over 200 rounds");
}
