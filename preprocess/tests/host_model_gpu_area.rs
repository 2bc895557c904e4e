//! `Resample::Area` on the GPU (Mesa's llvmpipe, uploaded planes) against
//! the CPU path's Area, which weighs each covered texel exactly: NV12, RGB
//! and YUYV 1280x720 frames stretched to 192x192 and letterboxed into
//! 128x128, `u8` and normalized `f32`; a stripe pattern of 1-pixel columns
//! that Area averages to flat grey and Bilinear does not; the source samples
//! each mode counts; and the footprint past the shader's loop bound refused.
#![allow(clippy::unwrap_used)]

#[path = "common/model_gpu.rs"]
mod model_gpu;
#[path = "common/model_reference.rs"]
mod model_reference;

use model_gpu::{destination, dyn_values, frame, input, MEAN, STD};
use zerocam_gpu::{ConvertOptions, Gpu, GpuError, AREA_MAX_SAMPLES};
use zerocam_preprocess::gpu::convert_model_dyn;
use zerocam_preprocess::{
    convert_cpu, Backend, Fit, ModelInput, ModelLayout, PreprocessError, Preprocessor, Resample,
};
use zerocam_tensor::{DType, ImageLayout, PixelFormat, Tensor, TensorDyn, TensorMemory};

/// The largest difference between the GPU's and the CPU's Area output of
/// `src` as `input` says.
fn gpu_cpu_apart(gpu: &Gpu, src: &Tensor<u8>, input: &ModelInput) -> f64 {
    let opts = ConvertOptions::default();
    let on_gpu = destination(gpu, input, TensorMemory::Mem);
    convert_model_dyn(gpu, src, &on_gpu, input, &opts, 0).unwrap();
    let on_cpu = TensorDyn::new(
        &input.shape(),
        input.element_type(),
        Some(TensorMemory::Mem),
        None,
    )
    .unwrap();
    convert_cpu(src, None, opts.color, input, &on_cpu, 0).unwrap();
    dyn_values(&on_gpu, 0)
        .iter()
        .zip(dyn_values(&on_cpu, 0))
        .map(|(g, c)| (g - c).abs())
        .fold(0.0, f64::max)
}

/// The Area inputs of the comparison: `u8` levels and ImageNet-normalized
/// `f32`, stretched to 192x192 or letterboxed into 128x128.
fn area_inputs() -> Vec<(ModelInput, &'static str)> {
    let mut all = Vec::new();
    for (w, fit, what) in [
        (192, Fit::Stretch, "192 stretch"),
        (128, Fit::Letterbox { pad: [114; 3] }, "128 letterbox"),
    ] {
        let u8s = input(w, w, DType::U8, ModelLayout::Nhwc)
            .fit(fit)
            .resample(Resample::Area);
        let f32s = input(w, w, DType::F32, ModelLayout::Nchw)
            .mean_std(MEAN, STD)
            .unwrap()
            .fit(fit)
            .resample(Resample::Area);
        all.push((u8s, what));
        all.push((f32s, what));
    }
    all
}

/// How far apart the GPU's and the CPU's Area may be for a `dtype` output,
/// whatever the source format: the bounds of the GPU-vs-CPU bilinear tests (1 step
/// for `u8`, 0.02 for ImageNet-normalized `f32`, about 1.15 steps). Each
/// pair of texels is filtered in float from texel fetches (`bilinear` in the
/// shader), as the bilinear path is: a hardware-filtered pair (one fetch)
/// was 3 steps off on NV12 with llvmpipe's 8-bit fixed-point filtering,
/// which BT.601's matrix multiplies by up to 2.
fn bound(dtype: DType) -> f64 {
    match dtype {
        DType::U8 => 1.0,
        _ => 0.02,
    }
}

/// The GPU's Area is the CPU's within [`bound`]. The frames are the
/// busiest of the tests (texture in every byte), the worst case for the
/// hardware filter's rounding.
#[test]
fn area_on_the_gpu_is_the_cpus() {
    let gpu = Gpu::new().unwrap();
    for format in [PixelFormat::Nv12, PixelFormat::Rgb, PixelFormat::Yuyv] {
        let src = frame(format, 1280, 720, None);
        for (input, what) in area_inputs() {
            let apart = gpu_cpu_apart(&gpu, &src, &input);
            let dtype = input.element_type();
            eprintln!("{format:?} -> {what} {dtype:?}: GPU and CPU Area {apart:.4} apart");
            assert!(
                apart <= bound(dtype),
                "{format:?} -> {what} {dtype:?}: {apart} apart"
            );
        }
    }
}

/// The same through `Preprocessor` on each backend.
#[test]
fn preprocessors_on_both_backends_agree() {
    let src = frame(PixelFormat::Nv12, 1280, 720, None);
    let input = input(192, 192, DType::U8, ModelLayout::Nchw).resample(Resample::Area);
    let mut values = Vec::new();
    for backend in [Backend::Gpu, Backend::Cpu] {
        let mut pre = Preprocessor::new(input.clone(), backend).unwrap();
        let out = pre.run(&src, None, Default::default()).unwrap();
        values.push(model_reference::read_element(&out.tensor, 0));
    }
    let apart = values[0]
        .iter()
        .zip(&values[1])
        .map(|(g, c)| (g - c).abs())
        .fold(0.0, f64::max);
    assert!(apart <= bound(DType::U8), "{apart} apart");
}

/// 1-pixel black and white columns, 1281x720 RGB, centre-cropped to 90x90:
/// the 720x720 crop starts half-way into column 280, so each model pixel's
/// footprint is 8 columns from the middle of one (4 black, 4 white: Area's
/// 127.5 everywhere), and its centre is the centre of a column (Bilinear's
/// one sample: all black or all white).
#[test]
fn stripes_average_to_grey_with_area_only() {
    let gpu = Gpu::new().unwrap();
    let layout = ImageLayout::new(1281, 720, PixelFormat::Rgb);
    let src = Tensor::<u8>::builder_image(layout)
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
    {
        let mut m = src.map_write().unwrap();
        for (i, px) in m.chunks_exact_mut(3).enumerate() {
            px.fill(if (i % 1281) % 2 == 0 { 0 } else { 255 });
        }
    }
    let opts = ConvertOptions::default();
    let mut spans = Vec::new();
    for resample in [Resample::Area, Resample::Bilinear] {
        let input = input(90, 90, DType::U8, ModelLayout::Nchw)
            .fit(Fit::Crop)
            .resample(resample);
        let dst = destination(&gpu, &input, TensorMemory::Mem);
        let placed = convert_model_dyn(&gpu, &src, &dst, &input, &opts, 0).unwrap();
        assert_eq!(placed.source.x, 280.5);
        let v = dyn_values(&dst, 0);
        let (lo, hi) = v
            .iter()
            .fold((255.0f64, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        eprintln!("stripes, {resample:?}: min {lo}, max {hi}, mean {mean:.3}");
        spans.push((lo, hi));
    }
    let (lo, hi) = spans[0];
    assert!(
        (125.5..=129.5).contains(&lo) && (125.5..=129.5).contains(&hi),
        "Area: {lo}..{hi}, not 127.5 ± 2"
    );
    let (lo, hi) = spans[1];
    assert!(
        lo < 100.0 || hi > 155.0,
        "Bilinear: {lo}..{hi}, grey as well"
    );
}

/// `GpuStats::source_samples`: one a model pixel for Bilinear; for Area,
/// each target pixel's footprint's bilinear samples in luma texels
/// (`ceil((ceil(len) + 1) / 2)` across times down), a bar pixel one.
#[test]
fn area_counts_its_samples_and_bilinear_stays_at_one() {
    let gpu = Gpu::new().unwrap();
    let src = frame(PixelFormat::Nv12, 1280, 720, None);
    let opts = ConvertOptions::default();
    // 192x192 stretch: 6.67 x 3.75 luma texels a pixel, 4 x 3 samples.
    // 128x128 letterbox: 128x72 target pixels of 10 x 10 texels, 6 x 6
    // samples; 128x56 bar pixels.
    let cases = [
        (192, Fit::Stretch, 192 * 192, 192 * 192 * 12),
        (
            128,
            Fit::Letterbox { pad: [114; 3] },
            128 * 128,
            128 * 72 * 36 + 128 * 56,
        ),
    ];
    for (w, fit, bilinear, area) in cases {
        for (resample, want) in [(Resample::Bilinear, bilinear), (Resample::Area, area)] {
            let input = input(w, w, DType::F32, ModelLayout::Nchw)
                .fit(fit)
                .resample(resample);
            let dst = destination(&gpu, &input, TensorMemory::Mem);
            let before = gpu.stats().unwrap();
            convert_model_dyn(&gpu, &src, &dst, &input, &opts, 0).unwrap();
            let after = gpu.stats().unwrap();
            let samples = after.source_samples - before.source_samples;
            eprintln!("{w}x{w} {fit:?} {resample:?}: {samples} source samples");
            assert_eq!(samples, want, "{w}x{w} {fit:?} {resample:?}");
            assert_eq!(after.draws - before.draws, 2, "still two passes");
        }
    }
}

/// A footprint past `AREA_MAX_SAMPLES` samples across is refused with its
/// figures (1280 columns onto 32: 40 texels, 21 samples), not averaged over
/// part of it; 31 texels (1240 onto 40) is the widest taken. Bilinear takes
/// both.
#[test]
fn a_footprint_past_the_loop_bound_is_refused() {
    let gpu = Gpu::new().unwrap();
    let src = frame(PixelFormat::Nv12, 1280, 720, None);
    let opts = ConvertOptions::default();
    let wide = input(32, 32, DType::U8, ModelLayout::Nchw).resample(Resample::Area);
    let dst = destination(&gpu, &wide, TensorMemory::Mem);
    let e = convert_model_dyn(&gpu, &src, &dst, &wide, &opts, 0).unwrap_err();
    match &e {
        PreprocessError::Gpu(GpuError::AreaFootprint { samples, max, .. }) => {
            assert_eq!((*samples, *max), ((21, 12), AREA_MAX_SAMPLES));
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("1280x720"), "{e}");
    let bilinear = wide.clone().resample(Resample::Bilinear);
    convert_model_dyn(&gpu, &src, &dst, &bilinear, &opts, 0).unwrap();
    let view = src
        .view(zerocam_tensor::Region::new(0, 0, 1240, 720))
        .unwrap();
    let widest = input(40, 40, DType::U8, ModelLayout::Nchw).resample(Resample::Area);
    let dst = destination(&gpu, &widest, TensorMemory::Mem);
    convert_model_dyn(&gpu, &view, &dst, &widest, &opts, 0).unwrap();
    let apart = gpu_cpu_apart(&gpu, &view, &widest);
    eprintln!("1240x720 -> 40x40 Area (16 x 10 samples): GPU and CPU {apart} apart");
    assert!(apart <= bound(DType::U8), "{apart} apart");
}
