//! `Gpu::convert` from memory tensors on the host's Mesa, checked pixel by
//! pixel against the CPU reference in `common` (±1 without scaling, ±2 with),
//! and its bad inputs.
#![allow(clippy::unwrap_used)]

mod common;

use common::{picture, Reference};
use zerocam_gpu::{ColorSpec, ConvertOptions, Gpu, GpuError, ImportPolicy, Matrix, Range};
use zerocam_tensor::{ImageLayout, PixelFormat, Region, Tensor, TensorMapTrait, TensorMemory};

fn rgb_at(t: &Tensor<u8>) -> impl Fn(usize, usize, usize) -> u8 {
    let stride = t.row_stride().unwrap();
    let bpp = t.format().unwrap().samples_per_pixel();
    let bytes = t.map_read().unwrap().to_vec();
    move |x, y, c| bytes[y * stride + x * bpp + c]
}

fn check(
    gpu: &Gpu,
    src: &Tensor<u8>,
    out: PixelFormat,
    size: (usize, usize),
    opts: ConvertOptions,
    tol: u8,
) {
    let dst = Tensor::<u8>::image(size.0, size.1, out, Some(TensorMemory::Mem)).unwrap();
    gpu.convert(src, &dst, &opts).unwrap();
    let reference = Reference::new(src, opts.crop, size, opts.color);
    let (err, at) = match out {
        PixelFormat::PlanarRgb => {
            let bytes = dst.map_read().unwrap().to_vec();
            let (w, h) = size;
            reference.max_error(|x, y, c| bytes[c * w * h + y * w + x])
        }
        _ => reference.max_error(rgb_at(&dst)),
    };
    assert!(
        err <= tol,
        "{:?} -> {out:?} {size:?} {opts:?}: off by {err} at {at:?}",
        src.format()
    );
}

#[test]
fn every_source_format_converts_to_rgb_without_scaling() {
    let gpu = Gpu::new().unwrap();
    for f in [
        PixelFormat::Nv12,
        PixelFormat::Nv16,
        PixelFormat::Yuyv,
        PixelFormat::Uyvy,
        PixelFormat::Rgb,
        PixelFormat::Bgr,
        PixelFormat::Rgba,
        PixelFormat::Bgra,
        PixelFormat::Grey,
    ] {
        let src = picture(f, 64, 48);
        check(
            &gpu,
            &src,
            PixelFormat::Rgb,
            (64, 48),
            ConvertOptions::default(),
            1,
        );
    }
    let s = gpu.stats().unwrap();
    assert_eq!((s.converts, s.uploads, s.readbacks), (9, 9, 9));
    assert_eq!(
        s.images.imports, 0,
        "memory sources are uploaded, not imported"
    );
}

#[test]
fn every_destination_format_and_colour_spec() {
    let gpu = Gpu::new().unwrap();
    let src = picture(PixelFormat::Nv12, 64, 32);
    for out in [PixelFormat::Rgb, PixelFormat::Rgba, PixelFormat::PlanarRgb] {
        for matrix in [Matrix::Bt601, Matrix::Bt709] {
            for range in [Range::Limited, Range::Full] {
                let opts = ConvertOptions {
                    color: ColorSpec::new(matrix, range),
                    ..Default::default()
                };
                check(&gpu, &src, out, (64, 32), opts, 1);
            }
        }
    }
}

#[test]
fn resize_and_crop_stay_within_two_steps() {
    let gpu = Gpu::new().unwrap();
    let src = picture(PixelFormat::Nv12, 320, 180);
    check(
        &gpu,
        &src,
        PixelFormat::Rgb,
        (128, 128),
        ConvertOptions::default(),
        2,
    );
    let crop = ConvertOptions {
        crop: Some(Region::new(40, 20, 200, 120)),
        ..Default::default()
    };
    check(&gpu, &src, PixelFormat::PlanarRgb, (96, 64), crop, 2);
    let up = picture(PixelFormat::Yuyv, 32, 16);
    check(
        &gpu,
        &up,
        PixelFormat::Rgba,
        (100, 50),
        ConvertOptions::default(),
        2,
    );
}

#[test]
fn a_source_view_is_its_pixels_only() {
    let gpu = Gpu::new().unwrap();
    let src = picture(PixelFormat::Nv12, 64, 64);
    let view = src.view(Region::new(16, 8, 32, 32)).unwrap();
    let dst = Tensor::<u8>::image(32, 32, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    gpu.convert(&view, &dst, &ConvertOptions::default())
        .unwrap();
    let whole = Tensor::<u8>::image(64, 64, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    gpu.convert(&src, &whole, &ConvertOptions::default())
        .unwrap();
    let (a, b) = (rgb_at(&dst), rgb_at(&whole));
    for (x, y) in [(2, 2), (17, 9), (29, 29)] {
        for c in 0..3 {
            let d = i32::from(a(x, y, c)) - i32::from(b(x + 16, y + 8, c));
            assert!(d.abs() <= 1, "({x},{y}) channel {c}: {d}");
        }
    }
}

#[test]
fn a_batch_of_model_inputs_shares_one_render_target() {
    let gpu = Gpu::new().unwrap();
    let batch =
        Tensor::<u8>::builder_image(ImageLayout::new(64, 64, PixelFormat::Rgb).with_batch(4))
            .memory(TensorMemory::Shm)
            .build()
            .unwrap();
    let sources: Vec<_> = [
        PixelFormat::Nv12,
        PixelFormat::Yuyv,
        PixelFormat::Rgb,
        PixelFormat::Grey,
    ]
    .into_iter()
    .map(|f| picture(f, 96, 64))
    .collect();
    for (n, src) in sources.iter().enumerate() {
        gpu.convert(src, &batch.batch(n).unwrap(), &ConvertOptions::default())
            .unwrap();
    }
    let s = gpu.stats().unwrap();
    assert_eq!(
        (s.targets.imports, s.targets.hits),
        (1, 3),
        "one target for the batch"
    );
    for (n, src) in sources.iter().enumerate() {
        let element = batch.batch(n).unwrap();
        let r = Reference::new(src, None, (64, 64), ColorSpec::default());
        let (err, at) = r.max_error(rgb_at(&element));
        assert!(err <= 2, "element {n}: off by {err} at {at:?}");
    }
}

#[test]
fn a_tile_view_leaves_the_rest_of_the_destination_alone() {
    let gpu = Gpu::new().unwrap();
    let dst = Tensor::<u8>::image(64, 32, PixelFormat::Rgba, Some(TensorMemory::Mem)).unwrap();
    dst.map().unwrap().fill(7);
    let tile = dst.view(Region::new(12, 4, 20, 10)).unwrap();
    gpu.convert(
        &picture(PixelFormat::Nv12, 40, 20),
        &tile,
        &ConvertOptions::default(),
    )
    .unwrap();
    let m = dst.map_read().unwrap();
    let v = m.view().unwrap();
    assert_eq!(v[[3, 12, 0]], 7, "the row above the tile");
    assert_eq!(v[[4, 11, 0]], 7, "the column left of the tile");
    assert_eq!(v[[4, 32, 0]], 7, "the column right of the tile");
    assert_eq!(v[[14, 12, 0]], 7, "the row below the tile");
    assert_eq!(v[[4, 12, 3]], 255, "alpha inside the tile");
}

#[test]
fn a_pbo_destination_stays_on_the_gpu_until_mapped() {
    let gpu = Gpu::new().unwrap();
    let src = picture(PixelFormat::Nv12, 64, 32);
    let dst = gpu.pbo_image(32, 16, PixelFormat::Rgb).unwrap();
    gpu.convert(&src, &dst, &ConvertOptions::default()).unwrap();
    let r = Reference::new(&src, None, (32, 16), ColorSpec::default());
    let bytes = dst.map_read().unwrap().to_vec();
    let (err, at) = r.max_error(|x, y, c| bytes[y * 96 + x * 3 + c]);
    assert!(err <= 2, "off by {err} at {at:?}");
    // A PBO source is uploaded from GPU memory too.
    let back = Tensor::<u8>::image(32, 16, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    gpu.convert(&dst, &back, &ConvertOptions::default())
        .unwrap();
    assert_eq!(back.map_read().unwrap().to_vec(), bytes);
}

#[test]
fn bad_inputs_are_typed_errors_with_their_values() {
    let gpu = Gpu::new().unwrap();
    let nv12 = picture(PixelFormat::Nv12, 64, 32);
    let rgb = Tensor::<u8>::image(64, 32, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let opts = ConvertOptions::default();

    let e = gpu.convert(&nv12, &nv12, &opts).unwrap_err();
    assert!(
        matches!(
            e,
            GpuError::UnsupportedFormat {
                format: PixelFormat::Nv12,
                role: "destination",
                ..
            }
        ),
        "{e}"
    );
    let planar =
        Tensor::<u8>::image(8, 8, PixelFormat::PlanarRgb, Some(TensorMemory::Mem)).unwrap();
    let e = gpu.convert(&planar, &rgb, &opts).unwrap_err();
    assert!(
        matches!(e, GpuError::UnsupportedFormat { role: "source", .. }),
        "{e}"
    );

    let crop = ConvertOptions {
        crop: Some(Region::new(60, 0, 8, 8)),
        ..opts
    };
    let e = gpu.convert(&nv12, &rgb, &crop).unwrap_err();
    assert!(e.to_string().contains("outside the 64x32 source"), "{e}");

    let e = gpu
        .convert(&nv12, &rgb.view(Region::new(1, 0, 8, 8)).unwrap(), &opts)
        .unwrap_err();
    assert!(e.to_string().contains("multiples of 4"), "{e}");

    let arr = Tensor::<u8>::new(&[32, 64, 3], Some(TensorMemory::Mem), None).unwrap();
    let e = gpu.convert(&nv12, &arr, &opts).unwrap_err();
    assert!(e.to_string().contains("[32, 64, 3]"), "{e}");

    let e = Tensor::<u8>::image(63, 32, PixelFormat::Nv12, Some(TensorMemory::Mem)).unwrap_err();
    assert!(
        e.to_string().contains("63"),
        "odd 4:2:0 sizes are refused at the tensor: {e}"
    );

    let require = ConvertOptions {
        import: ImportPolicy::Require,
        ..opts
    };
    let e = gpu.convert(&nv12, &rgb, &require).unwrap_err();
    assert!(matches!(e, GpuError::UnsupportedMemory { .. }), "{e}");

    let huge = Tensor::<u8>::image(64, 40000, PixelFormat::Rgba, Some(TensorMemory::Mem)).unwrap();
    let e = gpu.convert(&nv12, &huge, &opts).unwrap_err();
    assert!(e.to_string().contains("GL_MAX_TEXTURE_SIZE"), "{e}");

    let held = rgb.map().unwrap();
    let e = gpu.convert(&nv12, &rgb, &opts).unwrap_err();
    assert!(
        matches!(
            e,
            GpuError::Tensor(zerocam_tensor::Error::MapConflict { .. })
        ),
        "{e}"
    );
    drop(held);
    gpu.convert(&nv12, &rgb, &opts).unwrap();
    let s = gpu.stats().unwrap();
    assert_eq!(s.converts, 1, "only the last conversion ran");
}

#[test]
fn render_targets_of_dropped_destinations_are_freed() {
    let gpu = Gpu::new().unwrap();
    let src = picture(PixelFormat::Nv12, 32, 32);
    for _ in 0..5 {
        let dst = Tensor::<u8>::image(32, 32, PixelFormat::Rgba, Some(TensorMemory::Mem)).unwrap();
        gpu.convert(&src, &dst, &ConvertOptions::default()).unwrap();
    }
    let s = gpu.stats().unwrap();
    assert_eq!(s.targets.imports, 5);
    assert!(s.targets.live <= 1, "dead destinations are swept: {s:?}");
    gpu.clear_caches().unwrap();
    assert_eq!(gpu.stats().unwrap().targets.live, 0);
}

#[test]
fn padded_rgb_rows_upload_row_by_row() {
    let gpu = Gpu::new().unwrap();
    let padded =
        Tensor::<u8>::builder_image(ImageLayout::new(30, 10, PixelFormat::Rgb).with_row_stride(96))
            .memory(TensorMemory::Mem)
            .build()
            .unwrap();
    {
        let mut m = padded.map().unwrap();
        for (i, b) in m.iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
    }
    check(
        &gpu,
        &padded,
        PixelFormat::Rgba,
        (30, 10),
        ConvertOptions::default(),
        1,
    );
}

#[test]
fn a_whole_batch_is_refused_one_element_is_not() {
    let gpu = Gpu::new().unwrap();
    let batch =
        Tensor::<u8>::builder_image(ImageLayout::new(16, 16, PixelFormat::Rgb).with_batch(2))
            .memory(TensorMemory::Mem)
            .build()
            .unwrap();
    let src = picture(PixelFormat::Nv12, 16, 16);
    let e = gpu
        .convert(&src, &batch, &ConvertOptions::default())
        .unwrap_err();
    assert!(
        matches!(
            e,
            GpuError::Batched {
                role: "destination",
                batch: 2
            }
        ),
        "{e}"
    );
    gpu.convert(&src, &batch.batch(1).unwrap(), &ConvertOptions::default())
        .unwrap();
}
