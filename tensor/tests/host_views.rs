//! Views, batches, strides and pixel formats on heap and shared memory.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

mod common;

use zerocam_tensor::{
    Error, ImageLayout, PixelFormat, Region, Tensor, TensorMapTrait, TensorMemory,
};

const BACKENDS: [TensorMemory; 2] = [TensorMemory::Mem, TensorMemory::Shm];

#[test]
fn every_format_has_its_shape_and_strides() {
    let (w, h) = (8, 4);
    let expect: [(PixelFormat, &[usize], &[usize]); 9] = [
        (PixelFormat::Rgb, &[4, 8, 3], &[24, 3, 1]),
        (PixelFormat::Bgr, &[4, 8, 3], &[24, 3, 1]),
        (PixelFormat::Rgba, &[4, 8, 4], &[32, 4, 1]),
        (PixelFormat::Bgra, &[4, 8, 4], &[32, 4, 1]),
        (PixelFormat::Grey, &[4, 8, 1], &[8, 1, 1]),
        (PixelFormat::Yuyv, &[4, 8, 2], &[16, 2, 1]),
        (PixelFormat::Nv12, &[6, 8], &[8, 1]),
        (PixelFormat::Nv16, &[8, 8], &[8, 1]),
        (PixelFormat::PlanarRgb, &[3, 4, 8], &[32, 8, 1]),
    ];
    for (format, shape, strides) in expect {
        let t = Tensor::<u8>::image(w, h, format, Some(TensorMemory::Mem)).unwrap();
        assert_eq!(t.shape(), shape, "{format}");
        assert_eq!(t.strides().unwrap(), strides, "{format}");
        assert_eq!(t.plane_count(), format.plane_count(), "{format}");
        assert_eq!(t.format(), Some(format));
        assert_eq!(
            t.map_read().unwrap().len(),
            shape.iter().product::<usize>(),
            "{format}"
        );
    }
}

#[test]
fn padded_rows_are_published_as_strides() {
    for mem in BACKENDS {
        let layout = ImageLayout::new(5, 3, PixelFormat::Rgb).with_row_stride(16);
        let t = Tensor::<u8>::builder_image(layout)
            .memory(mem)
            .build()
            .unwrap();
        assert_eq!(t.row_stride(), Some(16));
        assert_eq!(t.strides().unwrap(), vec![16, 3, 1]);
        {
            let mut m = t.map().unwrap();
            assert_eq!(m.len(), 2 * 16 + 15, "the map ends at the last pixel");
            m.view_mut().unwrap().fill(9);
        }
        let m = t.map_read().unwrap();
        assert_eq!(&m[15..16], &[0], "padding untouched");
        assert_eq!(m[16], 9);
        assert_eq!(m.view().unwrap()[[2, 4, 2]], 9);
    }
}

#[test]
fn a_view_reads_the_right_pixels() {
    for mem in BACKENDS {
        let t = Tensor::<u8>::image(16, 8, PixelFormat::Rgb, Some(mem)).unwrap();
        {
            let mut m = t.map().unwrap();
            let mut v = m.view_mut().unwrap();
            for ((y, x, c), p) in v.indexed_iter_mut().map(|(i, p)| ((i[0], i[1], i[2]), p)) {
                *p = (y * 16 + x + c) as u8;
            }
        }
        let v = t.view(Region::new(3, 2, 4, 5)).unwrap();
        assert_eq!(v.shape(), &[5, 4, 3]);
        assert_eq!((v.width(), v.height()), (Some(4), Some(5)));
        assert_eq!(v.plane_offset(), 2 * 48 + 3 * 3);
        let m = v.map_read().unwrap();
        let a = m.view().unwrap();
        assert_eq!(a[[0, 0, 0]], (2 * 16 + 3) as u8);
        assert_eq!(a[[4, 3, 2]], (6 * 16 + 6 + 2) as u8);
        assert_eq!(v.buffer_identity(), t.buffer_identity());
    }
}

#[test]
fn views_compose() {
    let t = Tensor::<u8>::image(32, 32, PixelFormat::Grey, Some(TensorMemory::Mem)).unwrap();
    let vv = t
        .view(Region::new(4, 4, 16, 16))
        .unwrap()
        .view(Region::new(2, 3, 4, 4))
        .unwrap();
    assert_eq!(vv.plane_offset(), 7 * 32 + 6);
    let e = t
        .view(Region::new(4, 4, 16, 16))
        .unwrap()
        .view(Region::new(10, 0, 8, 4))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::RegionOutOfBounds {
                width: 16,
                height: 16,
                ..
            }
        ),
        "the view's own bounds apply: {e}"
    );
}

#[test]
fn out_of_bounds_regions_are_errors_that_name_the_values() {
    let t = Tensor::<u8>::image(64, 48, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let e = t.view(Region::new(60, 0, 10, 10)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::RegionOutOfBounds {
                width: 64,
                height: 48,
                ..
            }
        ),
        "{e}"
    );
    let msg = e.to_string();
    assert!(msg.contains("70 > width 64"), "{msg}");
    assert!(matches!(
        t.view(Region::new(0, 40, 8, 9)),
        Err(Error::RegionOutOfBounds { .. })
    ));
    assert!(matches!(
        t.view(Region::new(0, 0, 0, 9)),
        Err(Error::EmptyRegion { .. })
    ));
    assert!(matches!(
        t.view(Region::new(usize::MAX, usize::MAX, 2, 2)),
        Err(Error::RegionOutOfBounds { .. })
    ));
}

#[test]
fn array_views_use_the_first_two_dims() {
    let t = Tensor::<f32>::new(&[10, 20, 3], Some(TensorMemory::Mem), None).unwrap();
    let v = t.view(Region::new(5, 2, 10, 4)).unwrap();
    assert_eq!(v.shape(), &[4, 10, 3]);
    assert_eq!(v.plane_offset(), (2 * 60 + 5 * 3) * 4);
    let one_d = Tensor::<u8>::new(&[10], Some(TensorMemory::Mem), None).unwrap();
    assert!(matches!(
        one_d.view(Region::new(0, 0, 1, 1)),
        Err(Error::NotTwoDimensional { .. })
    ));
}

#[test]
fn batches_select_along_n() {
    for mem in BACKENDS {
        let t = Tensor::<f32>::new(&[4, 2, 3], Some(mem), None).unwrap();
        for n in 0..4 {
            t.batch(n).unwrap().map().unwrap().fill(n as f32);
        }
        let m = t.map_read().unwrap();
        assert_eq!(m.view().unwrap()[[3, 1, 2]], 3.0);
        assert_eq!(m.view().unwrap()[[1, 0, 0]], 1.0);
        let e = t.batch(4).unwrap_err();
        assert!(
            matches!(e, Error::BatchIndexOutOfBounds { index: 4, batch: 4 }),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "batch index 4 is out of bounds for batch size 4"
        );
    }
}

#[test]
fn batched_images_and_batch_zero_of_a_single_image() {
    let layout = ImageLayout::new(8, 4, PixelFormat::PlanarRgb).with_batch(2);
    let t = Tensor::<f32>::builder_image(layout)
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
    assert_eq!(t.shape(), &[2, 3, 4, 8]);
    let b1 = t.batch(1).unwrap();
    assert_eq!(b1.shape(), &[3, 4, 8]);
    assert_eq!(b1.plane_offset(), 3 * 4 * 8 * 4);
    b1.view(Region::new(0, 0, 8, 4))
        .unwrap()
        .map()
        .unwrap()
        .fill(1.0);
    assert_eq!(t.map_read().unwrap()[3 * 4 * 8], 1.0);
    assert_eq!(t.map_read().unwrap()[3 * 4 * 8 - 1], 0.0);

    let single = Tensor::<u8>::image(8, 8, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let b0 = single.batch(0).unwrap();
    assert_eq!((b0.shape(), b0.plane_offset()), (single.shape(), 0));
    assert_eq!(b0.buffer_identity(), single.buffer_identity());
    assert!(matches!(
        single.batch(1),
        Err(Error::BatchIndexOutOfBounds { index: 1, batch: 1 })
    ));
}

#[test]
fn nv12_with_a_plane_offset_has_planes_but_no_uniform_strides() {
    let layout = ImageLayout::new(16, 8, PixelFormat::Nv12)
        .with_row_stride(32)
        .with_plane_offset(32 * 10);
    let t = Tensor::<u8>::builder_image(layout)
        .memory(TensorMemory::Shm)
        .build()
        .unwrap();
    assert_eq!(t.strides(), None);
    let uv = t.plane(1).unwrap();
    assert_eq!((uv.shape(), uv.plane_offset()), (&[4usize, 16][..], 320));
    uv.map().unwrap().fill(128);
    let m = t.map_read().unwrap();
    assert_eq!(m.len(), 320 + 3 * 32 + 16);
    assert_eq!((m[319], m[320]), (0, 128));
    assert!(matches!(m.view(), Err(Error::NotStrided { .. })));
    assert!(matches!(
        t.plane(2),
        Err(Error::NoSuchPlane {
            index: 2,
            planes: 2
        })
    ));
}

#[test]
fn nv12_views_keep_chroma_aligned() {
    let t = Tensor::<u8>::image(16, 8, PixelFormat::Nv12, Some(TensorMemory::Mem)).unwrap();
    let v = t.view(Region::new(4, 2, 8, 4)).unwrap();
    assert_eq!(v.plane(1).unwrap().plane_offset(), 16 * 8 + 16 + 4);
    let e = t.view(Region::new(1, 2, 8, 4)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::RegionNotAligned {
                hsub: 2,
                vsub: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("NV12"), "{e}");
    assert!(matches!(
        Tensor::<u8>::image(8, 2, PixelFormat::Yuyv, Some(TensorMemory::Mem))
            .unwrap()
            .view(Region::new(1, 0, 2, 1)),
        Err(Error::RegionNotAligned { .. })
    ));
}

#[test]
fn with_image_describes_a_drivers_buffer() {
    // A V4L2-style NV12 buffer: bytesperline 24, data_offset 64.
    let fd = common::memfd(64 + 24 * 6);
    let t = Tensor::<u8>::from_fd(fd, &[64 + 24 * 6], None).unwrap();
    let id = t.buffer_identity().id();
    let img = t
        .with_image(
            ImageLayout::new(16, 4, PixelFormat::Nv12)
                .with_row_stride(24)
                .with_start_offset(64),
        )
        .unwrap();
    assert_eq!((img.plane_offset(), img.row_stride()), (64, Some(24)));
    assert_eq!(img.plane(1).unwrap().plane_offset(), 64 + 96);
    assert_eq!(img.buffer_identity().id(), id);
    let small = Tensor::<u8>::from_fd(common::memfd(100), &[100], None).unwrap();
    let e = small
        .with_image(ImageLayout::new(16, 4, PixelFormat::Nv12).with_row_stride(24))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                needed: 136,
                available: 100
            }
        ),
        "{e}"
    );
}

#[test]
fn bad_image_sizes_are_typed_errors() {
    let e = Tensor::<u8>::image(0, 4, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap_err();
    assert!(matches!(e, Error::BadImageSize { width: 0, .. }), "{e}");
    let e = Tensor::<u8>::image(6, 3, PixelFormat::Nv12, Some(TensorMemory::Mem)).unwrap_err();
    assert!(e.to_string().contains("NV12 image 6x3"), "{e}");
    let e =
        Tensor::<u16>::builder_image(ImageLayout::new(4, 4, PixelFormat::Grey).with_row_stride(9))
            .memory(TensorMemory::Mem)
            .build()
            .unwrap_err();
    assert!(
        matches!(
            e,
            Error::BadStride {
                stride: 9,
                row_bytes: 8,
                elem_size: 2
            }
        ),
        "{e}"
    );
}
