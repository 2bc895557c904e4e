//! `Gpu::convert_model` on real dma-bufs in the kernel lab (zink on lavapipe,
//! `cargo lab -p zerocam-gpu --test lab_model_gpu`): an NV12 frame in a
//! dma-heap buffer imported as an EGLImage and converted into memory, PBO and
//! in-place dma-buf model tensors, value by value against the f64 reference;
//! the imports, render targets and programs of a steady stream counted.
//!
//! The imported frame is sampled by the driver (an external texture: its
//! YUV → RGB, its filter and chroma siting), not by our shader, so the frame
//! holds smooth ramps (neighbouring samples differ by at most one step) and
//! the bound there is `imported_bound`'s, derived from them; the same frame
//! uploaded (our shader samples it) keeps the 1 step / 0.02.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

#[path = "common/model_gpu.rs"]
mod model_gpu;
#[path = "common/model_reference.rs"]
mod model_reference;

use model_gpu::{
    assert_element, destination, dyn_values, input, reference, sentinel, tolerance, MEAN, STD,
};
use model_reference::max_error;
use zerocam_gpu::{ConvertOptions, GpuStats, ImportPolicy};
use zerocam_preprocess::gpu::convert_model_dyn;
use zerocam_preprocess::{Fit, ModelInput, ModelLayout};
use zerocam_tensor::{DType, PixelFormat, Tensor, TensorMemory};
use zerocam_test_support::gl::{gpu, REQUIRE};
use zerocam_test_support::lab::{fd_count, lock};

const W: usize = 320;
const H: usize = 180;

/// The bound on an imported (driver-sampled) source: 3 steps for `u8`/`i8`,
/// 0.045 for normalized floats (the 1 step / 0.02 hold for our own
/// sampling, asserted beside it on the same frame uploaded). Why: zink on
/// lavapipe samples an imported NV12 frame *nearest*, not bilinear
/// (measured here: half-way between luma 114 and 115 it reads 115), so each
/// plane may read any of the four taps bilinear would average, off by up to
/// half their spread. On [`smooth_nv12`]'s ramps the 2x2 taps spread by at
/// most 2 in Y (a step right and one down) and 1 in Cb and in Cr, which
/// BT.601 limited range turns into at most 1.164 * 1 + 2.018 * 0.5 = 2.2
/// steps of blue (2.0 of red, 1.8 of green); integer outputs round on both
/// sides (3 steps), and 2.2 steps over ImageNet's smallest std is
/// 2.2 / (255 * 0.224) = 0.039 (0.045 with `f16` rounding). The driver's
/// chroma siting (EGL's default, co-sited) moves chroma by a quarter of a
/// chroma pixel, which these ramps make a fraction of that.
fn imported_bound(input: &ModelInput) -> f64 {
    match input.element_type() {
        DType::U8 | DType::I8 => 3.0,
        _ => 0.045,
    }
}

/// An NV12 frame of smooth ramps in `memory`; `phase` shifts them (so two
/// buffers differ).
fn smooth_nv12(memory: TensorMemory, phase: usize) -> Tensor<u8> {
    let t = Tensor::<u8>::image(W, H, PixelFormat::Nv12, Some(memory)).unwrap();
    {
        let mut m = t.map_write().unwrap();
        let (luma, chroma) = m.split_at_mut(W * H);
        for (i, b) in luma.iter_mut().enumerate() {
            let (x, y) = (i % W, i / W);
            *b = (30 + (x * 180) / W + (y * 30) / H + phase) as u8;
        }
        for (i, pair) in chroma.chunks_mut(2).enumerate() {
            let (x, y) = (i % (W / 2), i / (W / 2));
            pair[0] = (100 + (x * 30) / (W / 2) + phase) as u8; // Cb
            pair[1] = (150 - (y * 20) / (H / 2)) as u8; // Cr
        }
    }
    t
}

/// The inputs the imported frame is converted to: each element type, both
/// layouts, each fit, an odd size.
fn inputs() -> Vec<ModelInput> {
    vec![
        input(64, 48, DType::F32, ModelLayout::Nchw)
            .mean_std(MEAN, STD)
            .unwrap()
            .fit(Fit::Crop),
        input(63, 37, DType::U8, ModelLayout::Nhwc)
            .mean_std([0.5; 3], [0.5; 3])
            .unwrap()
            .quantization(1.0 / 128.0, 128)
            .unwrap()
            .fit(Fit::Letterbox { pad: [114; 3] }),
        input(31, 17, DType::F16, ModelLayout::Nhwc)
            .mean_std(MEAN, STD)
            .unwrap(),
        input(33, 21, DType::I8, ModelLayout::Nchw).fit(Fit::Crop),
    ]
}

fn max_off(dst: &zerocam_tensor::TensorDyn, src: &Tensor<u8>, i: &ModelInput) -> f64 {
    let want = reference(i, src, None, REQUIRE.color);
    max_error(i, &dyn_values(dst, 0), &want).0
}

/// An imported NV12 dma-buf into memory and into a PBO, each element type:
/// within [`imported_bound`] of the reference, and beside it the same frame
/// uploaded (our shader samples it) within the bound.
#[test]
fn an_imported_nv12_dma_buf_matches_the_reference() {
    let _g = lock();
    let gpu = gpu();
    let frame = smooth_nv12(TensorMemory::Dma, 0);
    let upload = ConvertOptions {
        import: ImportPolicy::Never,
        ..REQUIRE
    };
    for i in inputs() {
        for memory in [TensorMemory::Mem, TensorMemory::Pbo] {
            let dst = destination(&gpu, &i, memory);
            convert_model_dyn(&gpu, &frame, &dst, &i, &REQUIRE, 0).unwrap();
            let imported = max_off(&dst, &frame, &i);
            convert_model_dyn(&gpu, &frame, &dst, &i, &upload, 0).unwrap();
            let uploaded = max_off(&dst, &frame, &i);
            println!(
                "{:?} {:?} {memory:?}: max off by {imported:.4} imported, {uploaded:.4} uploaded",
                i.element_type(),
                i.layout()
            );
            assert!(
                imported <= imported_bound(&i),
                "{i:?} {memory:?}: imported off by {imported}"
            );
            assert!(
                uploaded <= tolerance(&i),
                "{i:?} {memory:?}: uploaded off by {uploaded}"
            );
        }
    }
    let s = gpu.stats().unwrap();
    assert_eq!(s.images.imports, 1, "one frame, one EGLImage: {s:?}");
}

/// The GL work a steady stream must not repeat.
fn gl_work(s: &GpuStats) -> [u64; 6] {
    [
        s.images.imports,
        s.images_created,
        s.targets.imports,
        s.programs_linked,
        s.upload_allocations,
        s.live_images,
    ]
}

/// Frames from a ring of two dma-bufs, over and over, into one destination:
/// two imports in all, then cache hits; no upload, no new render target,
/// program or image, no fd growth.
#[test]
fn repeated_frames_of_the_same_buffers_are_not_imported_again() {
    let _g = lock();
    let gpu = gpu();
    let ring = [
        smooth_nv12(TensorMemory::Dma, 0),
        smooth_nv12(TensorMemory::Dma, 7),
    ];
    let i = input(63, 37, DType::U8, ModelLayout::Nchw)
        .batch(2)
        .unwrap()
        .fit(Fit::Crop);
    let dst = destination(&gpu, &i, TensorMemory::Mem);
    for (n, f) in ring.iter().enumerate() {
        convert_model_dyn(&gpu, f, &dst, &i, &REQUIRE, n).unwrap();
    }
    let (first, fds) = (gpu.stats().unwrap(), fd_count());
    assert_eq!(first.images.imports, 2);
    const N: u64 = 10;
    for k in 0..N as usize {
        convert_model_dyn(&gpu, &ring[k % 2], &dst, &i, &REQUIRE, k % 2).unwrap();
    }
    let after = gpu.stats().unwrap();
    assert_eq!(gl_work(&after), gl_work(&first), "{after:?}");
    assert_eq!(
        after.images.hits - first.images.hits,
        N,
        "every frame a hit"
    );
    assert_eq!(after.uploads, 0, "nothing uploaded");
    assert_eq!(after.targets.hits - first.targets.hits, N);
    assert_eq!(fd_count(), fds, "no fd growth");
    for (n, f) in ring.iter().enumerate() {
        assert_element(&dst, n, f, &i, &REQUIRE, imported_bound(&i), "ring");
    }
}

/// Model tensors in dma-bufs are rendered in place (no readback), one
/// imported render target for the whole batch; at an odd size the batch
/// elements share texels, and the colour mask keeps each one's bytes: after
/// elements 0 and 2, element 1 is untouched, and after 1, 0 and 2 still match.
#[test]
fn a_dma_buf_model_tensor_is_rendered_in_place() {
    let _g = lock();
    let gpu = gpu();
    let imported = smooth_nv12(TensorMemory::Dma, 0);
    let uploaded = smooth_nv12(TensorMemory::Mem, 3);
    let auto = ConvertOptions {
        import: ImportPolicy::Auto,
        ..REQUIRE
    };
    for i in [
        input(63, 37, DType::U8, ModelLayout::Nchw)
            .batch(3)
            .unwrap()
            .fit(Fit::Crop),
        input(15, 9, DType::F16, ModelLayout::Nhwc)
            .batch(3)
            .unwrap()
            .mean_std(MEAN, STD)
            .unwrap(),
        input(20, 12, DType::F32, ModelLayout::Nchw)
            .batch(3)
            .unwrap()
            .mean_std(MEAN, STD)
            .unwrap(),
    ] {
        let before = gpu.stats().unwrap();
        let dst = destination(&gpu, &i, TensorMemory::Dma);
        // Elements 0 and 2 from the uploaded frame, 1 from the imported one.
        convert_model_dyn(&gpu, &uploaded, &dst, &i, &auto, 0).unwrap();
        convert_model_dyn(&gpu, &uploaded, &dst, &i, &auto, 2).unwrap();
        let s = sentinel(i.element_type());
        let untouched = dyn_values(&dst, 1).iter().all(|&v| v == s);
        assert!(untouched, "{i:?}: element 1 written by 0 or 2");
        convert_model_dyn(&gpu, &imported, &dst, &i, &REQUIRE, 1).unwrap();
        let after = gpu.stats().unwrap();
        assert_eq!(
            after.readbacks, before.readbacks,
            "{i:?}: rendered in place"
        );
        assert_eq!(
            after.targets.imports - before.targets.imports,
            1,
            "one target"
        );
        for n in [0, 2] {
            assert_element(&dst, n, &uploaded, &i, &auto, tolerance(&i), "in place");
        }
        assert_element(
            &dst,
            1,
            &imported,
            &i,
            &REQUIRE,
            imported_bound(&i),
            "in place",
        );
        println!(
            "{:?} {:?} in place: element 1 (imported) max off by {:.4}",
            i.element_type(),
            i.layout(),
            {
                let want = reference(&i, &imported, None, REQUIRE.color);
                max_error(&i, &dyn_values(&dst, 1), &want).0
            }
        );
    }
}
