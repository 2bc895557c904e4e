//! `Gpu::convert_model` at sizes whose batch elements do not fill whole
//! RGBA8 texels (a `u8` 63x37, 1x1, 3x5; an `f16` of odd area), in every
//! element type and layout, batch 1 and 3, into memory and PBOs, against the
//! f64 reference (1 step for `u8`/`i8`, 0.02 for floats): a texel shared by
//! two batch elements must get each one's bytes and keep the other's. Then
//! batch views and starts inside a texel, and the GL work of a steady
//! stream: no program, render target, texture storage or import made again,
//! and one source sample per model pixel (`GpuStats::source_samples`).
#![allow(clippy::unwrap_used)]

#[path = "common/model_gpu.rs"]
mod model_gpu;
#[path = "common/model_reference.rs"]
mod model_reference;

use model_gpu::{
    assert_element, destination, dyn_values, fill_dyn, frame, input, sentinel, tolerance, values,
    MEAN, STD,
};
use zerocam_gpu::{ConvertOptions, Gpu, GpuStats};
use zerocam_preprocess::gpu::{convert_model, convert_model_dyn};
use zerocam_preprocess::{Fit, ModelInput, ModelLayout, MODEL_DTYPES};
use zerocam_tensor::{
    f16, DType, ImageLayout, PixelFormat, Region, Tensor, TensorDyn, TensorMemory,
};

/// Three different sources, one per batch element.
fn sources() -> [Tensor<u8>; 3] {
    [
        frame(PixelFormat::Nv12, 96, 64, None),
        frame(PixelFormat::Rgb, 50, 30, None),
        frame(PixelFormat::Yuyv, 40, 24, None),
    ]
}

/// The input the size tests use for `dtype`: normalized floats, MobileNet
/// quantized `u8`, plain `i8`; centre crop.
fn odd_input(w: usize, h: usize, dtype: DType, layout: ModelLayout, batch: usize) -> ModelInput {
    let i = input(w, h, dtype, layout)
        .batch(batch)
        .unwrap()
        .fit(Fit::Crop);
    match dtype {
        DType::F32 | DType::F16 => i.mean_std(MEAN, STD).unwrap(),
        DType::U8 => i
            .mean_std([0.5; 3], [0.5; 3])
            .unwrap()
            .quantization(1.0 / 128.0, 128)
            .unwrap(),
        _ => i,
    }
}

/// Writes element `n` from `sources[n]`, the outer ones first: after 0 and
/// 2, element 1 is still all sentinel (their shared texels kept its bytes);
/// after 1, 0 and 2 still match (it kept theirs).
fn check_batch(gpu: &Gpu, sources: &[Tensor<u8>; 3], input: &ModelInput, memory: TensorMemory) {
    let dst = destination(gpu, input, memory);
    let opts = ConvertOptions::default();
    let order: &[usize] = if input.batch_size() == 3 {
        &[0, 2, 1]
    } else {
        &[0]
    };
    let what = format!("{memory:?}");
    for (step, &n) in order.iter().enumerate() {
        convert_model_dyn(gpu, &sources[n], &dst, input, &opts, n).unwrap();
        if step == 1 {
            let s = sentinel(input.element_type());
            let v = dyn_values(&dst, 1);
            let at = v.iter().position(|&x| x != s);
            assert_eq!(at, None, "{what} {input:?}: element 1 written by 0 or 2");
        }
    }
    for &n in order {
        assert_element(&dst, n, &sources[n], input, &opts, tolerance(input), &what);
    }
}

#[test]
fn odd_sizes_in_every_element_type_layout_and_batch() {
    let gpu = Gpu::new().unwrap();
    let sources = sources();
    for (w, h) in [(63, 37), (1, 1), (3, 5)] {
        for dtype in MODEL_DTYPES {
            for layout in [ModelLayout::Nchw, ModelLayout::Nhwc] {
                for batch in [1, 3] {
                    let i = odd_input(w, h, dtype, layout, batch);
                    for memory in [TensorMemory::Mem, TensorMemory::Pbo] {
                        check_batch(&gpu, &sources, &i, memory);
                    }
                }
            }
        }
    }
}

#[test]
fn odd_sizes_letterboxed_and_stretched() {
    let gpu = Gpu::new().unwrap();
    let sources = sources();
    for fit in [
        Fit::Stretch,
        Fit::Letterbox {
            pad: [114, 20, 250],
        },
    ] {
        for dtype in [DType::U8, DType::F16] {
            for layout in [ModelLayout::Nchw, ModelLayout::Nhwc] {
                let i = odd_input(31, 19, dtype, layout, 3).fit(fit);
                check_batch(&gpu, &sources, &i, TensorMemory::Mem);
            }
        }
    }
}

/// A `[2, 3, 5, 3]` view of a `[2, 4, 5, 3]` `u8` tensor: batch elements 60
/// bytes apart, 45 long, the first starting at byte 15 (inside a texel).
/// The channel plane outside the view keeps its bytes.
#[test]
fn a_batch_view_of_a_wider_tensor_starting_inside_a_texel() {
    let gpu = Gpu::new().unwrap();
    let sources = sources();
    for memory in [TensorMemory::Mem, TensorMemory::Shm] {
        let wide = Tensor::<u8>::new(&[2, 4, 5, 3], Some(memory), None).unwrap();
        wide.map_write().unwrap().fill(90);
        let view = wide.view(Region::new(1, 0, 3, 2)).unwrap();
        assert_eq!(view.plane_offset(), 15);
        let i = input(3, 5, DType::U8, ModelLayout::Nchw)
            .batch(2)
            .unwrap()
            .fit(Fit::Crop);
        let opts = ConvertOptions::default();
        for n in [1, 0] {
            convert_model(&gpu, &sources[n], &view, &i, &opts, n).unwrap();
        }
        let dst = TensorDyn::U8(view);
        for (n, src) in sources.iter().enumerate().take(2) {
            assert_element(&dst, n, src, &i, &opts, 1.0, "view");
            let plane0 = &values(&wide, n)[..15];
            assert!(
                plane0.iter().all(|&v| v == 90.0),
                "{memory:?} plane 0 of {n}: {plane0:?}"
            );
        }
    }
}

/// An `f16` RGB image batch is an NHWC tensor; starting 2 bytes into its
/// buffer, every element begins in the middle of a texel.
#[test]
fn an_f16_image_batch_two_bytes_into_its_buffer() {
    let gpu = Gpu::new().unwrap();
    let sources = sources();
    let (w, h) = (3, 5);
    let layout = ImageLayout::new(w, h, PixelFormat::Rgb)
        .with_batch(3)
        .with_start_offset(2);
    let elements = 1 + 3 * w * h * 3;
    let t = Tensor::<f16>::new(&[elements], Some(TensorMemory::Mem), None)
        .unwrap()
        .with_image(layout)
        .unwrap();
    assert_eq!((t.plane_offset(), t.shape()), (2, &[3, h, w, 3][..]));
    let i = odd_input(w, h, DType::F16, ModelLayout::Nhwc, 3);
    let dst = fill_dyn(&TensorDyn::F16(t));
    let opts = ConvertOptions::default();
    for n in [0, 2, 1] {
        convert_model_dyn(&gpu, &sources[n], &dst, &i, &opts, n).unwrap();
    }
    for (n, src) in sources.iter().enumerate() {
        assert_element(&dst, n, src, &i, &opts, 0.02, "f16 image");
    }
}

/// The GL work counted by `GpuStats` that a steady stream must not repeat.
fn gl_work(s: &GpuStats) -> [u64; 7] {
    [
        s.programs_linked,
        s.targets.imports,
        s.images.imports,
        s.images_created,
        s.upload_allocations,
        s.model_values_allocations,
        s.live_images,
    ]
}

/// N frames of the same source size into the same destination: after the
/// first, no program is linked, no render target or image made, no upload
/// texture given new storage; each frame is one upload and one readback.
#[test]
fn a_steady_stream_repeats_no_gl_work() {
    let gpu = Gpu::new().unwrap();
    let frames: Vec<_> = (0..3)
        .map(|_| frame(PixelFormat::Nv12, 128, 72, None))
        .collect();
    for (dtype, memory) in [
        (DType::F32, TensorMemory::Mem),
        (DType::U8, TensorMemory::Pbo),
        (DType::F16, TensorMemory::Shm),
    ] {
        // An odd size: its batch elements share texels (the scratch path).
        let i = odd_input(63, 37, dtype, ModelLayout::Nchw, 3);
        let dst = destination(&gpu, &i, memory);
        let opts = ConvertOptions::default();
        for (n, f) in frames.iter().enumerate() {
            convert_model_dyn(&gpu, f, &dst, &i, &opts, n).unwrap();
        }
        let first = gpu.stats().unwrap();
        const N: u64 = 12;
        for k in 0..N as usize {
            convert_model_dyn(&gpu, &frames[k % 3], &dst, &i, &opts, k % 3).unwrap();
        }
        let after = gpu.stats().unwrap();
        assert_eq!(
            gl_work(&after),
            gl_work(&first),
            "{dtype:?} {memory:?}: {after:?}"
        );
        assert_eq!(
            after.targets.hits - first.targets.hits,
            N,
            "one cached target"
        );
        assert_eq!(after.uploads - first.uploads, N);
        assert_eq!(after.readbacks - first.readbacks, N);
        assert_eq!(after.converts - first.converts, N);
        assert_eq!(
            after.source_samples - first.source_samples,
            N * 63 * 37,
            "one source sample per model pixel"
        );
        assert_element(&dst, 2, &frames[2], &i, &opts, tolerance(&i), "steady");
    }
}

/// A model write samples the source once per model pixel, whatever its
/// element type, layout and fit: one draw renders the model image's values
/// (the sampling pass), and one draw per destination rectangle packs them
/// (one here: these sizes fill whole grid rows). Planar RGB images, whose
/// every texel holds one channel of four pixels, still sample each pixel
/// three times: the counter's contrast, and what NCHW model writes did.
#[test]
fn each_model_pixel_samples_the_source_once() {
    let gpu = Gpu::new().unwrap();
    let src = frame(PixelFormat::Nv12, 96, 64, None);
    let opts = ConvertOptions::default();
    let (w, h) = (64, 48);
    let pixels = (w * h) as u64;
    for dtype in MODEL_DTYPES {
        for layout in [ModelLayout::Nchw, ModelLayout::Nhwc] {
            for fit in [Fit::Stretch, Fit::Letterbox { pad: [114; 3] }] {
                let i = odd_input(w, h, dtype, layout, 1).fit(fit);
                let dst = destination(&gpu, &i, TensorMemory::Mem);
                let before = gpu.stats().unwrap();
                convert_model_dyn(&gpu, &src, &dst, &i, &opts, 0).unwrap();
                let after = gpu.stats().unwrap();
                let what = format!("{dtype:?} {layout:?} {fit:?}");
                assert_eq!(
                    after.source_samples - before.source_samples,
                    pixels,
                    "{what}: source samples a frame"
                );
                assert_eq!(after.draws - before.draws, 2, "{what}: draws a frame");
                assert_element(&dst, 0, &src, &i, &opts, tolerance(&i), &what);
            }
        }
    }
    let planar =
        Tensor::<u8>::image(w, h, PixelFormat::PlanarRgb, Some(TensorMemory::Mem)).unwrap();
    let before = gpu.stats().unwrap();
    gpu.convert(&src, &planar, &opts).unwrap();
    let after = gpu.stats().unwrap();
    assert_eq!(after.source_samples - before.source_samples, 3 * pixels);
    assert_eq!(after.draws - before.draws, 3, "one draw per plane");
}
