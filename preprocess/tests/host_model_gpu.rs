//! `Gpu::convert_model` on the host's Mesa (llvmpipe): model inputs in `f32`,
//! `f16`, `i8` and `u8`, NCHW and NHWC, stretched, cropped and letterboxed,
//! checked value by value against the f64 reference in
//! `common/model_reference.rs` (within 1 step for `u8`/`i8`, 0.02 for
//! normalized floats), and its bad inputs.
#![allow(clippy::unwrap_used)]

#[path = "common/model_gpu.rs"]
mod model_gpu;
#[path = "common/model_reference.rs"]
mod model_reference;

use model_gpu::{f16_values, frame, input, tolerance, values, MEAN, STD};
use model_reference::{expected, max_error, Source};
use zerocam_gpu::{ConvertOptions, Gpu, GpuError};
use zerocam_preprocess::gpu::{convert_model, convert_model_dyn};
use zerocam_preprocess::{
    ChannelOrder, Fit, ModelInput, ModelInputError, ModelLayout, PreprocessError,
};
use zerocam_tensor::{
    f16, DType, ImageLayout, PixelFormat, Region, Tensor, TensorDyn, TensorMemory,
};
use zerocam_tensor::{ColorSpec, Matrix, Range};

/// Converts `src` into a new memory tensor of `input` and returns batch
/// element `n`'s values.
fn convert(gpu: &Gpu, src: &Tensor<u8>, input: &ModelInput, opts: &ConvertOptions) -> Vec<f64> {
    let shape = input.shape();
    let mem = Some(TensorMemory::Mem);
    match input.element_type() {
        DType::U8 => {
            let t = Tensor::<u8>::new(&shape, mem, None).unwrap();
            convert_model(gpu, src, &t, input, opts, 0).unwrap();
            values(&t, 0)
        }
        DType::I8 => {
            let t = Tensor::<i8>::new(&shape, mem, None).unwrap();
            convert_model(gpu, src, &t, input, opts, 0).unwrap();
            values(&t, 0)
        }
        DType::F16 => {
            let t = Tensor::<f16>::new(&shape, mem, None).unwrap();
            convert_model(gpu, src, &t, input, opts, 0).unwrap();
            f16_values(&t, 0)
        }
        _ => {
            let t = Tensor::<f32>::new(&shape, mem, None).unwrap();
            convert_model(gpu, src, &t, input, opts, 0).unwrap();
            values(&t, 0)
        }
    }
}

/// Converts and compares with the reference.
fn check(gpu: &Gpu, src: &Tensor<u8>, input: &ModelInput, opts: &ConvertOptions) {
    let got = convert(gpu, src, input, opts);
    let color = opts.color;
    let source = Source::new(src, color.matrix, color.range);
    let crop = opts.crop.unwrap_or(Region::new(
        0,
        0,
        src.width().unwrap(),
        src.height().unwrap(),
    ));
    let pad = input.fit_mode().pad();
    let want = expected(input, &source, crop, pad);
    let (err, at) = max_error(input, &got, &want);
    assert!(
        err <= tolerance(input),
        "{:?} -> {input:?} {opts:?}: off by {err} at (c, y, x) {at:?}",
        src.format()
    );
}

#[test]
fn every_element_type_and_layout_matches_the_reference() {
    let gpu = Gpu::new().unwrap();
    let src = frame(PixelFormat::Nv12, 96, 64, None);
    let opts = ConvertOptions::default();
    for layout in [ModelLayout::Nchw, ModelLayout::Nhwc] {
        for dtype in [DType::F32, DType::F16] {
            let plain = input(40, 32, dtype, layout).fit(Fit::Crop);
            check(&gpu, &src, &plain, &opts);
            check(&gpu, &src, &plain.mean_std(MEAN, STD).unwrap(), &opts);
        }
        for dtype in [DType::U8, DType::I8] {
            let plain = input(40, 32, dtype, layout).fit(Fit::Crop);
            check(&gpu, &src, &plain, &opts);
            // MobileNet-style: x in -1..1, then scale 1/128 and a zero point.
            let zero = if dtype == DType::U8 { 128 } else { 0 };
            let q = plain
                .mean_std([0.5; 3], [0.5; 3])
                .unwrap()
                .quantization(1.0 / 128.0, zero)
                .unwrap();
            check(&gpu, &src, &q, &opts);
        }
    }
}

#[test]
fn a_one_to_one_copy_rounds_to_nearest_exactly() {
    // Same size, no resampling: every sample is a source byte, so integer
    // outputs must equal the rounded f64 values exactly (rounding down
    // instead would be off by up to one step, inside the general tolerance).
    let gpu = Gpu::new().unwrap();
    let src = frame(PixelFormat::Rgb, 32, 16, None);
    let opts = ConvertOptions::default();
    let u8q = input(32, 16, DType::U8, ModelLayout::Nhwc)
        .mean_std([0.5; 3], [0.5; 3])
        .unwrap()
        .quantization(1.0 / 128.0, 128)
        .unwrap();
    let i8q = input(32, 16, DType::I8, ModelLayout::Nchw)
        .quantization(1.0 / 200.0, -100)
        .unwrap();
    for i in [u8q, i8q] {
        let got = convert(&gpu, &src, &i, &opts);
        let source = Source::new(&src, Matrix::Bt601, Range::Limited);
        let want = expected(&i, &source, Region::new(0, 0, 32, 16), [0; 3]);
        let (err, at) = max_error(&i, &got, &want);
        assert_eq!(err, 0.0, "{i:?}: off at {at:?}");
    }
}

#[test]
fn stretch_crop_and_letterbox_in_rgb_and_bgr() {
    let gpu = Gpu::new().unwrap();
    let opts = ConvertOptions::default();
    for src in [
        frame(PixelFormat::Nv12, 128, 72, None),
        frame(PixelFormat::Rgb, 50, 90, None),
        frame(PixelFormat::Yuyv, 64, 48, None),
    ] {
        for fit in [
            Fit::Stretch,
            Fit::Crop,
            Fit::Letterbox {
                pad: [114, 20, 250],
            },
        ] {
            for channels in [ChannelOrder::Rgb, ChannelOrder::Bgr] {
                let i = input(36, 28, DType::F32, ModelLayout::Nchw)
                    .fit(fit)
                    .with_channels(channels)
                    .mean_std(MEAN, STD)
                    .unwrap();
                check(&gpu, &src, &i, &opts);
                let u = input(36, 28, DType::U8, ModelLayout::Nhwc)
                    .fit(fit)
                    .with_channels(channels);
                check(&gpu, &src, &u, &opts);
            }
        }
    }
}

#[test]
fn the_letterbox_bars_hold_the_pad_and_the_placement_maps_back() {
    let gpu = Gpu::new().unwrap();
    let src = frame(PixelFormat::Nv12, 128, 64, None);
    let i = input(32, 32, DType::U8, ModelLayout::Nhwc)
        .fit(Fit::Letterbox { pad: [114, 0, 255] })
        .with_channels(ChannelOrder::Bgr);
    let t = Tensor::<u8>::new(&i.shape(), Some(TensorMemory::Mem), None).unwrap();
    let placed = convert_model(&gpu, &src, &t, &i, &ConvertOptions::default(), 0).unwrap();
    assert_eq!(placed.target, Region::new(0, 8, 32, 16));
    assert_eq!(placed.to_frame(16.0, 16.0), (64.0, 32.0));
    let v = values(&t, 0);
    assert_eq!(&v[..3], &[255.0, 0.0, 114.0], "top bar, BGR");
    let last = v.len() - 3;
    assert_eq!(&v[last..], &[255.0, 0.0, 114.0], "bottom bar");
}

#[test]
fn crops_colour_specs_and_padded_strides() {
    let gpu = Gpu::new().unwrap();
    let i = input(24, 20, DType::F32, ModelLayout::Nhwc)
        .mean_std(MEAN, STD)
        .unwrap();
    for (format, stride) in [
        (PixelFormat::Nv12, 128),
        (PixelFormat::Rgb, 200),
        (PixelFormat::Bgr, 199),
    ] {
        let src = frame(format, 60, 40, Some(stride));
        for (matrix, range) in [
            (Matrix::Bt601, Range::Limited),
            (Matrix::Bt709, Range::Full),
        ] {
            let opts = ConvertOptions {
                crop: Some(Region::new(6, 4, 44, 30)),
                color: ColorSpec::new(matrix, range),
                ..Default::default()
            };
            check(&gpu, &src, &i.clone().fit(Fit::Crop), &opts);
            check(&gpu, &src, &i.clone().fit(Fit::Stretch), &opts);
        }
    }
}

#[test]
fn every_source_format_and_a_view_of_a_frame() {
    let gpu = Gpu::new().unwrap();
    let opts = ConvertOptions::default();
    let i = input(20, 14, DType::F32, ModelLayout::Nhwc)
        .mean_std(MEAN, STD)
        .unwrap()
        .fit(Fit::Letterbox { pad: [114; 3] });
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
        check(&gpu, &frame(f, 46, 30, None), &i, &opts);
    }
    // A view is a frame of its own: the reference reads the view's pixels,
    // and the placement is in the view's pixels.
    let whole = frame(PixelFormat::Nv12, 96, 64, None);
    let view = whole.view(Region::new(20, 10, 50, 40)).unwrap();
    let crop = input(16, 16, DType::U8, ModelLayout::Nchw).fit(Fit::Crop);
    check(&gpu, &view, &crop, &opts);
    let t = Tensor::<u8>::new(&crop.shape(), Some(TensorMemory::Mem), None).unwrap();
    let placed = convert_model(&gpu, &view, &t, &crop, &opts, 0).unwrap();
    assert_eq!((placed.source.x, placed.source.width), (5.0, 40.0));
}

#[test]
fn a_batch_element_is_written_alone_into_one_render_target() {
    let gpu = Gpu::new().unwrap();
    let i = input(32, 16, DType::F16, ModelLayout::Nchw)
        .batch(3)
        .unwrap()
        .mean_std(MEAN, STD)
        .unwrap();
    let t = Tensor::<f16>::new(&i.shape(), Some(TensorMemory::Mem), None).unwrap();
    t.map().unwrap().fill(f16::from_f32(7.0));
    let sources = [
        frame(PixelFormat::Nv12, 64, 32, None),
        frame(PixelFormat::Rgb, 48, 24, None),
    ];
    let opts = ConvertOptions::default();
    convert_model(&gpu, &sources[0], &t, &i, &opts, 2).unwrap();
    convert_model(&gpu, &sources[1], &t, &i, &opts, 0).unwrap();
    assert!(
        f16_values(&t, 1).iter().all(|&v| v == 7.0),
        "element 1 untouched"
    );
    for (n, src) in [(2, &sources[0]), (0, &sources[1])] {
        let source = Source::new(src, Matrix::Bt601, Range::Limited);
        let full = Region::new(0, 0, src.width().unwrap(), src.height().unwrap());
        let want = expected(&i, &source, full, [0; 3]);
        let (err, at) = max_error(&i, &f16_values(&t, n), &want);
        assert!(err <= 0.02, "element {n}: off by {err} at {at:?}");
    }
    let s = gpu.stats().unwrap();
    assert_eq!((s.targets.imports, s.targets.hits), (1, 1), "one target");
}

#[test]
fn pbo_shared_memory_and_tensor_dyn_destinations() {
    let gpu = Gpu::new().unwrap();
    let src = frame(PixelFormat::Nv12, 64, 48, None);
    let i = input(16, 16, DType::F32, ModelLayout::Nchw).fit(Fit::Crop);
    let pbo = gpu.pbo_tensor::<f32>(&i.shape()).unwrap();
    convert_model(&gpu, &src, &pbo, &i, &ConvertOptions::default(), 0).unwrap();
    let mem = Tensor::<f32>::new(&i.shape(), Some(TensorMemory::Mem), None).unwrap();
    let dyn_mem = TensorDyn::F32(mem.clone());
    convert_model_dyn(&gpu, &src, &dyn_mem, &i, &ConvertOptions::default(), 0).unwrap();
    assert_eq!(values(&pbo, 0), values(&mem, 0));
    let shm = Tensor::<f32>::new(&i.shape(), Some(TensorMemory::Shm), None).unwrap();
    convert_model(&gpu, &src, &shm, &i, &ConvertOptions::default(), 0).unwrap();
    assert_eq!(values(&shm, 0), values(&mem, 0));
    let source = Source::new(&src, Matrix::Bt601, Range::Limited);
    let want = expected(&i, &source, Region::new(0, 0, 64, 48), [0; 3]);
    let (err, at) = max_error(&i, &values(&pbo, 0), &want);
    assert!(err <= 0.02, "off by {err} at {at:?}");
}

#[test]
fn bad_destinations_and_inputs_are_typed_errors_with_their_values() {
    let gpu = Gpu::new().unwrap();
    let src = frame(PixelFormat::Nv12, 64, 32, None);
    let opts = ConvertOptions::default();
    let mem = Some(TensorMemory::Mem);
    let i = input(16, 8, DType::F32, ModelLayout::Nchw);

    let wrong_type = Tensor::<u8>::new(&i.shape(), mem, None).unwrap();
    let e = convert_model(&gpu, &src, &wrong_type, &i, &opts, 0).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Model(ModelInputError::DestinationDType {
                expected: DType::F32,
                actual: DType::U8
            })
        ),
        "{e}"
    );

    let wrong_shape = Tensor::<f32>::new(&[1, 8, 16, 3], mem, None).unwrap();
    let e = convert_model(&gpu, &src, &wrong_shape, &i, &opts, 0).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Model(ModelInputError::DestinationShape { .. })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("[1, 8, 16, 3]"), "{e}");
    assert!(e.to_string().contains("[1, 3, 8, 16]"), "{e}");

    let right = Tensor::<f32>::new(&i.shape(), mem, None).unwrap();
    let e = convert_model(&gpu, &src, &right, &i, &opts, 1).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Model(ModelInputError::BatchIndex { index: 1, batch: 1 })
        ),
        "{e}"
    );

    let tiny = input(8, 8, DType::F32, ModelLayout::Nchw).fit(Fit::Letterbox { pad: [0; 3] });
    let long = frame(PixelFormat::Rgb, 400, 2, None);
    let t = Tensor::<f32>::new(&tiny.shape(), mem, None).unwrap();
    let e = convert_model(&gpu, &long, &t, &tiny, &opts, 0).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Model(ModelInputError::LetterboxTooSmall {
                source_width: 400,
                source_height: 2,
                ..
            })
        ),
        "{e}"
    );

    let u16s = TensorDyn::new(&i.shape(), DType::U16, mem, None).unwrap();
    let e = convert_model_dyn(&gpu, &src, &u16s, &i, &opts, 0).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Model(ModelInputError::DestinationDType {
                actual: DType::U16,
                ..
            })
        ),
        "{e}"
    );

    // An RGB image batch has the NHWC shape, but its rows are padded.
    let nhwc = input(6, 4, DType::U8, ModelLayout::Nhwc).batch(2).unwrap();
    let padded = Tensor::<u8>::builder_image(
        ImageLayout::new(6, 4, PixelFormat::Rgb)
            .with_row_stride(20)
            .with_batch(2),
    )
    .memory(TensorMemory::Mem)
    .build()
    .unwrap();
    let e = convert_model(&gpu, &src, &padded, &nhwc, &opts, 0).unwrap_err();
    assert!(
        matches!(
            &e,
            PreprocessError::Model(ModelInputError::DestinationNotPacked { expected, actual })
                if *expected == [72, 18, 3, 1] && *actual == [80, 20, 3, 1]
        ),
        "{e}"
    );

    let crop = ConvertOptions {
        crop: Some(Region::new(60, 0, 8, 8)),
        ..opts
    };
    let e = convert_model(&gpu, &src, &right, &i, &crop, 0).unwrap_err();
    assert!(
        matches!(e, PreprocessError::Gpu(GpuError::CropOutOfBounds { .. })),
        "{e}"
    );

    assert_eq!(gpu.stats().unwrap().converts, 0, "nothing ran");
}
