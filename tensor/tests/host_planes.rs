//! Multi-plane NV12/NV16 on the host: `from_planes` and `import_planes` over
//! memfds (two fds like V4L2 NV12M, or one fd at two offsets).
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

mod common;

use std::os::fd::AsFd;

use common::memfd;
use zerocam_tensor::{Error, PixelFormat, PlaneDescriptor, Region, Tensor, TensorMemory};

#[test]
fn two_fd_nv12_maps_plane_by_plane() {
    let (y_fd, uv_fd) = (memfd(64 * 32), memfd(64 * 16));
    nix::unistd::write(&uv_fd, &[128u8; 64]).unwrap();
    let t = Tensor::<u8>::import_planes(
        64,
        32,
        PixelFormat::Nv12,
        PlaneDescriptor::new(y_fd.as_fd()).unwrap(),
        PlaneDescriptor::new(uv_fd.as_fd()).unwrap(),
    )
    .unwrap();
    assert_eq!(t.shape(), &[48, 64]);
    assert_eq!(t.strides(), None, "planes in two buffers");
    assert!(matches!(t.map(), Err(Error::MultiBuffer { buffers: 2 })));
    assert!(matches!(
        t.clone_fd(),
        Err(Error::MultiBuffer { buffers: 2 })
    ));
    let uv = t.plane(1).unwrap();
    assert_eq!(uv.map_read().unwrap()[63], 128);
    assert_eq!(
        uv.fd_identity().unwrap().ino,
        nix::sys::stat::fstat(&uv_fd).unwrap().st_ino
    );
    assert_eq!(uv.buffer_identity(), t.buffer_identity());
    let v = t.view(Region::new(2, 2, 4, 4)).unwrap();
    assert_eq!(v.plane(1).unwrap().plane_offset(), 64 + 2);
}

#[test]
fn one_fd_at_two_offsets_is_mapped_once() {
    let fd = memfd(4096);
    let t = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::new(fd.as_fd()).unwrap().with_stride(48),
        PlaneDescriptor::new(fd.as_fd())
            .unwrap()
            .with_stride(48)
            .with_offset(1024),
    )
    .unwrap();
    assert!(t.map().is_ok(), "one buffer: the whole image maps");
    assert_eq!(t.plane(1).unwrap().plane_offset(), 1024);
    assert_eq!(t.row_stride(), Some(48));
}

#[test]
fn nv16_chroma_is_full_height() {
    let y = Tensor::<u8>::new(&[8, 16], Some(TensorMemory::Mem), None).unwrap();
    let uv = Tensor::<u8>::new(&[8, 16], Some(TensorMemory::Shm), None).unwrap();
    let t = Tensor::from_planes(y, uv, PixelFormat::Nv16).unwrap();
    assert_eq!(t.shape(), &[16, 16]);
    assert_eq!(t.plane(1).unwrap().memory(), TensorMemory::Shm);
}

#[test]
fn wrong_chroma_size_is_named() {
    let y = Tensor::<u8>::new(&[8, 16], Some(TensorMemory::Mem), None).unwrap();
    let uv = Tensor::<u8>::new(&[8, 16], Some(TensorMemory::Mem), None).unwrap();
    let e = Tensor::from_planes(y, uv, PixelFormat::Nv12).unwrap_err();
    assert!(
        matches!(
            e,
            Error::PlaneMismatch {
                format: PixelFormat::Nv12,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("[8, 16] should be [4, 16]"), "{e}");
}

#[test]
fn three_d_planes_and_other_formats_are_refused() {
    let y = Tensor::<u8>::new(&[8, 16, 1], Some(TensorMemory::Mem), None).unwrap();
    let uv = Tensor::<u8>::new(&[4, 16], Some(TensorMemory::Mem), None).unwrap();
    let e = Tensor::from_planes(y.clone(), uv.clone(), PixelFormat::Nv12).unwrap_err();
    assert!(e.to_string().contains("luma must be a 2-D"), "{e}");
    let e = Tensor::from_planes(y, uv, PixelFormat::Rgb).unwrap_err();
    assert!(
        matches!(
            e,
            Error::UnsupportedFormat {
                format: PixelFormat::Rgb,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn overlapping_planes_in_one_buffer_are_refused() {
    let fd = memfd(4096);
    let e = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::new(fd.as_fd()).unwrap(),
        PlaneDescriptor::new(fd.as_fd()).unwrap().with_offset(100),
    )
    .unwrap_err();
    assert!(e.to_string().contains("overlaps or precedes luma"), "{e}");
}

#[test]
fn short_stride_and_short_fd_are_refused() {
    let e = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::new(memfd(4096).as_fd())
            .unwrap()
            .with_stride(30),
        PlaneDescriptor::new(memfd(4096).as_fd()).unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::BadStride {
                stride: 30,
                row_bytes: 32,
                ..
            }
        ),
        "{e}"
    );
    let e = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::new(memfd(512).as_fd()).unwrap(),
        PlaneDescriptor::new(memfd(200).as_fd()).unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                needed: 256,
                available: 200
            }
        ),
        "{e}"
    );
}

#[test]
fn chroma_before_luma_in_one_buffer_is_refused() {
    let fd = memfd(4096);
    let e = Tensor::<u8>::import_planes(
        32,
        16,
        PixelFormat::Nv12,
        PlaneDescriptor::new(fd.as_fd()).unwrap().with_offset(1024),
        PlaneDescriptor::new(fd.as_fd()).unwrap(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("precedes luma"), "{e}");
}

#[test]
fn a_misaligned_plane_offset_is_refused() {
    let e = Tensor::<u16>::import_planes(
        8,
        4,
        PixelFormat::Nv12,
        PlaneDescriptor::new(memfd(4096).as_fd())
            .unwrap()
            .with_offset(1),
        PlaneDescriptor::new(memfd(4096).as_fd()).unwrap(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::BadPlaneOffset { offset: 1, .. }), "{e}");
}
