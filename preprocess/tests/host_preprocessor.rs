//! `Preprocessor` on the host: the device `Auto` chooses on llvmpipe (the CPU,
//! saying why), GPU and CPU results against the f64 reference of
//! `common/model_reference.rs`, the ring (free destinations reused, held ones
//! never overwritten, all held → `RingFull` naming the depth), no allocation
//! per frame in steady state, and the per-frame CPU fallback of `Auto` for a
//! source the GPU cannot take.
#![allow(clippy::unwrap_used)]

use zerocam_test_support::alloc as counting_alloc;
#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;
#[path = "common/model_reference.rs"]
mod model_reference;

use model_reference::{expected, max_error, read_element, Source};
use zerocam_gpu::{Gpu, GpuError};
use zerocam_preprocess::{
    Backend, BackendReason, ChosenBackend, CpuConvertError, Fit, ModelInput, ModelInputError,
    ModelLayout, PreprocessError, Preprocessor, SourceImage, DEFAULT_RING_DEPTH,
};
use zerocam_tensor::ColorSpec;
use zerocam_tensor::{DType, ImageLayout, PixelFormat, Region, Tensor, TensorDyn, TensorMemory};

const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// A pattern-like `w`x`h` picture of `format` with padded rows: smooth
/// gradients (so the CPU's and the GPU's resampling agree) plus a seed.
fn picture(format: PixelFormat, w: usize, h: usize, seed: usize) -> Tensor<u8> {
    let stride = w * format.samples_per_pixel() + 12;
    let layout = ImageLayout::new(w, h, format).with_row_stride(stride);
    let t = Tensor::<u8>::builder_image(layout)
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
    fill(&t, seed);
    t
}

fn fill(t: &Tensor<u8>, seed: usize) {
    let mut m = t.map().unwrap();
    let stride = t.row_stride().unwrap();
    for (i, b) in m.iter_mut().enumerate() {
        let (row, col) = (i / stride, i % stride);
        *b = ((row * 5 + col * 3 + seed * 40) % 200 + 20) as u8;
    }
}

fn f32_input() -> ModelInput {
    ModelInput::new(40, 40)
        .unwrap()
        .mean_std(MEAN, STD)
        .unwrap()
        .fit(Fit::Letterbox { pad: [114; 3] })
}

/// The largest difference between `got` and the reference of `src`.
fn worst_against_reference(src: &Tensor<u8>, input: &ModelInput, got: &TensorDyn) -> f64 {
    let full = Region::new(0, 0, src.width().unwrap(), src.height().unwrap());
    let color = ColorSpec::default();
    let pad = input.fit_mode().pad();
    let want = expected(
        input,
        &Source::new(src, color.matrix, color.range),
        full,
        pad,
    );
    let got = read_element(got, 0);
    assert_eq!(got.len(), want.len());
    max_error(input, &got, &want).0
}

#[test]
fn auto_takes_the_cpu_on_llvmpipe_and_says_why() {
    let renderer = Gpu::new().unwrap().info().renderer.clone();
    assert!(renderer.contains("llvmpipe"), "the host's Mesa: {renderer}");
    let auto = Preprocessor::new(f32_input(), Backend::Auto).unwrap();
    assert_eq!(auto.backend(), ChosenBackend::Cpu);
    assert_eq!(
        auto.reason(),
        &BackendReason::SoftwareRenderer {
            renderer: renderer.clone()
        }
    );
    assert_eq!(
        auto.reason().to_string(),
        format!("software rasterizer: {renderer}")
    );
    let cpu = Preprocessor::new(f32_input(), Backend::Cpu).unwrap();
    assert_eq!(
        (cpu.backend(), cpu.reason()),
        (ChosenBackend::Cpu, &BackendReason::Requested)
    );
    let gpu = Preprocessor::new(f32_input(), Backend::Gpu).unwrap();
    assert_eq!(
        (gpu.backend(), gpu.reason()),
        (ChosenBackend::Gpu, &BackendReason::Requested)
    );
    assert_eq!(auto.ring_depth(), DEFAULT_RING_DEPTH);
    assert_eq!(auto.stats().tensors_allocated, 0, "allocated lazily");
}

#[test]
fn gpu_and_cpu_agree_with_the_reference_and_each_other() {
    let src = picture(PixelFormat::Rgb, 64, 48, 1);
    let inputs = [
        f32_input(),
        ModelInput::new(40, 28)
            .unwrap()
            .dtype(DType::U8)
            .unwrap()
            .with_layout(ModelLayout::Nhwc)
            .fit(Fit::Crop),
    ];
    for input in inputs {
        let tolerance = if input.element_type() == DType::U8 {
            1.0
        } else {
            0.02
        };
        let mut results = Vec::new();
        for device in [Backend::Gpu, Backend::Cpu] {
            let mut pre = Preprocessor::new(input.clone(), device).unwrap();
            let out = pre.run(&src, None, ColorSpec::default()).unwrap();
            let want_memory = match device {
                Backend::Gpu => TensorMemory::Pbo,
                _ => TensorMemory::Mem,
            };
            assert_eq!(out.tensor.memory(), want_memory);
            assert_eq!(out.tensor.shape(), input.shape());
            let worst = worst_against_reference(&src, &input, &out.tensor);
            assert!(worst <= tolerance, "{device:?}: {worst} off for {input:?}");
            results.push((out.placement, read_element(&out.tensor, 0)));
        }
        assert_eq!(results[0].0, results[1].0, "the same placement");
        let apart = results[0]
            .1
            .iter()
            .zip(&results[1].1)
            .map(|(g, c)| (g - c).abs())
            .fold(0.0, f64::max);
        assert!(
            apart <= tolerance,
            "GPU and CPU {apart} apart for {input:?}"
        );
    }
}

/// The ring on `device`: a free destination is written again (same
/// buffer), a held one never is, and with all held the call is refused.
fn ring_rules(device: Backend) {
    let mut pre = Preprocessor::new(f32_input(), device)
        .unwrap()
        .with_ring_depth(2)
        .unwrap();
    let (a, b) = (
        picture(PixelFormat::Rgb, 48, 32, 1),
        picture(PixelFormat::Rgb, 48, 32, 2),
    );
    let color = ColorSpec::default();
    let first = pre
        .run(&a, None, color)
        .unwrap()
        .tensor
        .buffer_identity()
        .id();
    let again = pre.run(&a, None, color).unwrap();
    assert_eq!(
        again.tensor.buffer_identity().id(),
        first,
        "reused: nothing held it"
    );
    let held = again.tensor.clone();
    drop(again);
    let other = pre.run(&b, None, color).unwrap();
    assert_ne!(
        other.tensor.buffer_identity().id(),
        first,
        "the held one is left alone"
    );
    assert_eq!(pre.held(), 2);
    let before = read_element(&held, 0);
    let e = pre.run(&b, None, color).unwrap_err();
    assert!(matches!(e, PreprocessError::RingFull { depth: 2 }), "{e}");
    assert!(e.to_string().contains("all 2 results"), "{e}");
    assert_eq!(read_element(&held, 0), before, "nothing overwritten");
    // A map holds its destination as a tensor does.
    let map = match &held {
        TensorDyn::F32(t) => t.map_read().unwrap(),
        other => panic!("{:?}", other.dtype()),
    };
    drop(held);
    assert!(matches!(
        pre.run(&b, None, color),
        Err(PreprocessError::RingFull { depth: 2 })
    ));
    drop((map, other));
    let third = pre.run(&b, None, color).unwrap();
    assert_eq!(third.tensor.buffer_identity().id(), first, "round-robin");
    assert_eq!(
        pre.stats().tensors_allocated,
        2,
        "never more than the depth"
    );
}

#[test]
fn the_ring_reuses_free_destinations_and_never_overwrites_a_held_one() {
    ring_rules(Backend::Cpu);
    ring_rules(Backend::Gpu);
}

#[test]
fn steady_state_allocates_nothing_per_frame() {
    let src = picture(PixelFormat::Nv12, 128, 72, 3);
    let color = ColorSpec::default();
    // Results dropped at once: one destination serves every frame.
    let mut pre = Preprocessor::new(f32_input(), Backend::Cpu).unwrap();
    for _ in 0..3 {
        pre.run(&src, None, color).unwrap();
    }
    let before = counting_alloc::this_thread();
    for _ in 0..20 {
        let out = pre.run(&src, None, color).unwrap();
        assert_eq!(out.tensor.shape(), &[1, 3, 40, 40]);
    }
    assert_eq!(
        counting_alloc::this_thread() - before,
        0,
        "allocations in 20 frames"
    );
    // One result held while the next is made (a Python loop's `x = pre(f)`).
    let first = pre.run(&src, None, color).unwrap();
    let mut held = pre.run(&src, None, color).unwrap(); // the second destination
    drop(first);
    let before = counting_alloc::this_thread();
    for _ in 0..20 {
        held = pre.run(&src, None, color).unwrap();
    }
    assert_eq!(
        counting_alloc::this_thread() - before,
        0,
        "allocations in 20 held frames"
    );
    drop(held);
    assert_eq!(pre.stats().tensors_allocated, 2);
    assert_eq!(pre.stats().cpu_images, 45);
    // On the GPU the call itself allocates (its GL job), the ring does not.
    let mut gpu = Preprocessor::new(f32_input(), Backend::Gpu).unwrap();
    let mut held = gpu.run(&src, None, color).unwrap();
    for _ in 0..10 {
        held = gpu.run(&src, None, color).unwrap();
    }
    drop(held);
    assert_eq!(gpu.stats().tensors_allocated, 2);
    assert_eq!(gpu.stats().gpu_images, 11);
}

#[test]
fn auto_sends_a_model_input_too_big_for_the_gpu_to_the_cpu() {
    // 1x3x5600x64 f32 NCHW: a texel grid 64 wide and 3 x 5600 = 16800 rows,
    // past llvmpipe's GL_MAX_TEXTURE_SIZE of 16384.
    let input = ModelInput::new(64, 5600).unwrap();
    let src = picture(PixelFormat::Rgb, 32, 40, 3);
    let color = ColorSpec::default();
    let mut gpu = Preprocessor::new(input.clone(), Backend::Gpu).unwrap();
    let e = gpu.run(&src, None, color).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Gpu(GpuError::BadSize {
                what: "destination",
                ..
            })
        ),
        "the premise: the GPU refuses it ({e})"
    );
    let mut auto = Preprocessor::__auto_on_any_gpu(input.clone()).unwrap();
    let out = auto.run(&src, None, color).unwrap();
    assert_eq!(out.backend, ChosenBackend::Cpu, "converted on the CPU");
    assert!(worst_against_reference(&src, &input, &out.tensor) <= 0.02);
    assert_eq!(auto.stats().cpu_fallbacks, 1);
}

#[test]
fn a_huge_ring_depth_allocates_nothing_up_front() {
    let pre = Preprocessor::new(f32_input(), Backend::Cpu)
        .unwrap()
        .with_ring_depth(usize::MAX)
        .unwrap();
    assert_eq!(pre.ring_depth(), usize::MAX);
    assert_eq!(pre.stats().tensors_allocated, 0);
}

#[test]
fn auto_sends_a_source_the_gpu_cannot_take_to_the_cpu() {
    // A PBO of another GL context: its name means nothing to this one.
    let other = Gpu::new().unwrap();
    let src = other.pbo_image(48, 32, PixelFormat::Rgb).unwrap();
    let copy = picture(PixelFormat::Rgb, 48, 32, 2);
    {
        let from = copy.map_read().unwrap();
        let stride = copy.row_stride().unwrap();
        let mut to = src.map_write().unwrap();
        for (row, out) in to.chunks_mut(48 * 3).enumerate() {
            out.copy_from_slice(&from[row * stride..row * stride + 48 * 3]);
        }
    }
    let color = ColorSpec::default();
    let mut cpu = Preprocessor::new(f32_input(), Backend::Cpu).unwrap();
    let want = read_element(&cpu.run(&copy, None, color).unwrap().tensor, 0);

    let mut auto = Preprocessor::__auto_on_any_gpu(f32_input()).unwrap();
    assert_eq!(auto.backend(), ChosenBackend::Gpu);
    let out = auto.run(&src, None, color).unwrap();
    assert_eq!(
        out.backend,
        ChosenBackend::Cpu,
        "this frame went to the CPU"
    );
    assert_eq!(
        out.tensor.memory(),
        TensorMemory::Pbo,
        "into the ring's PBO"
    );
    assert_eq!(read_element(&out.tensor, 0), want);
    drop(out);
    let s = auto.stats();
    assert_eq!((s.cpu_fallbacks, s.cpu_images, s.gpu_images), (1, 1, 0));
    assert_eq!(
        auto.run(&copy, None, color).unwrap().backend,
        ChosenBackend::Gpu
    );

    let mut gpu = Preprocessor::new(f32_input(), Backend::Gpu).unwrap();
    let e = gpu.run(&src, None, color).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Gpu(GpuError::ForeignPbo { role: "source", .. })
        ),
        "Backend::Gpu does not fall back: {e}"
    );

    // Planar RGB: neither device reads it.
    let planar =
        Tensor::<u8>::image(16, 8, PixelFormat::PlanarRgb, Some(TensorMemory::Mem)).unwrap();
    let e = auto.run(&planar, None, color).unwrap_err();
    let PreprocessError::NoDeviceTakes { gpu: g, cpu: c } = &e else {
        panic!("{e}");
    };
    assert!(
        matches!(**g, GpuError::UnsupportedFormat { role: "source", .. }),
        "{e}"
    );
    assert!(
        matches!(**c, CpuConvertError::UnsupportedSource { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("PlanarRgb"), "{e}");
    let e = gpu.run(&planar, None, color).unwrap_err();
    assert!(
        matches!(e, PreprocessError::Gpu(GpuError::UnsupportedFormat { .. })),
        "{e}"
    );
}

#[test]
fn batches_take_one_source_per_image() {
    let input = f32_input().batch(2).unwrap();
    let (a, b) = (
        picture(PixelFormat::Rgb, 48, 32, 1),
        picture(PixelFormat::Nv12, 40, 40, 2),
    );
    let color = ColorSpec::default();
    for device in [Backend::Cpu, Backend::Gpu] {
        let mut pre = Preprocessor::new(input.clone(), device).unwrap();
        let e = pre.run(&a, None, color).unwrap_err();
        assert!(
            matches!(
                e,
                PreprocessError::BatchSize {
                    batch: 2,
                    sources: 1
                }
            ),
            "{e}"
        );
        let mut placements = Vec::new();
        let out = pre
            .run_batch(&[SourceImage::new(&a), SourceImage::new(&b)], |n, p| {
                placements.push((n, p))
            })
            .unwrap();
        assert_eq!(out.tensor.shape(), &[2, 3, 40, 40]);
        assert_eq!(placements.len(), 2);
        assert_eq!(out.placement, placements[0].1);
        assert_eq!(
            placements[1].1.offset(),
            (0, 0),
            "a square source fills the square"
        );
        assert_eq!(
            placements[0].1.offset(),
            (0, 6),
            "48x32 in 40x27, (40 - 27) / 2 down"
        );
    }
}

#[test]
fn bad_inputs_are_typed_errors_with_their_values() {
    let e = Preprocessor::new(f32_input(), Backend::Cpu)
        .unwrap()
        .with_ring_depth(0)
        .unwrap_err();
    assert!(
        matches!(e, PreprocessError::ZeroRingDepth { depth: 0 }),
        "{e}"
    );
    let src = picture(PixelFormat::Rgb, 48, 32, 1);
    let color = ColorSpec::default();
    let mut pre = Preprocessor::new(f32_input(), Backend::Cpu).unwrap();
    let e = pre
        .run(&src, Some(Region::new(40, 0, 16, 16)), color)
        .unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Cpu(CpuConvertError::CropOutOfBounds {
                width: 48,
                height: 32,
                ..
            })
        ),
        "{e}"
    );
    let thin = ModelInput::new(8, 8)
        .unwrap()
        .fit(Fit::Letterbox { pad: [0; 3] });
    let wide = picture(PixelFormat::Grey, 400, 2, 1);
    let mut pre = Preprocessor::new(thin, Backend::Cpu).unwrap();
    let e = pre.run(&wide, None, color).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Cpu(CpuConvertError::Model(ModelInputError::LetterboxTooSmall {
                source_width: 400,
                ..
            }))
        ),
        "{e}"
    );
    assert_eq!(
        pre.stats().tensors_allocated,
        1,
        "the failed call's destination stays"
    );
    let array = Tensor::<u8>::new(&[8, 8], Some(TensorMemory::Mem), None).unwrap();
    let e = pre.run(&array, None, color).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::Cpu(CpuConvertError::UnsupportedSource { format: None })
        ),
        "{e}"
    );
}
