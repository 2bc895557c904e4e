//! The CPU model-input path on threads allocates nothing per frame, counted
//! over every thread of the process, one image at a time or a batch of four
//! cameras into the caller's buffer (a test binary of its own: no other test
//! allocates meanwhile). 200 frames: a pool that allocated now and then
//! (rayon's injector: a block every 63 calls) shows.
#![allow(clippy::unwrap_used)]

use zerocam_test_support::alloc as counting_alloc;
#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

use zerocam_preprocess::{
    Backend, CpuPreprocessor, Fit, ModelInput, ModelLayout, Preprocessor, SourceImage,
};
use zerocam_tensor::ColorSpec;
use zerocam_tensor::{DType, PixelFormat, Region, Tensor, TensorDyn, TensorMemory};

#[test]
fn steady_state_on_threads_allocates_nothing_per_frame_on_any_thread() {
    let src = Tensor::<u8>::image(320, 240, PixelFormat::Nv12, Some(TensorMemory::Mem)).unwrap();
    let color = ColorSpec::default();
    for (dtype, layout) in [
        (DType::F32, ModelLayout::Nchw),
        (DType::U8, ModelLayout::Nhwc),
    ] {
        let input = ModelInput::new(64, 48)
            .unwrap()
            .dtype(dtype)
            .unwrap()
            .with_layout(layout)
            .fit(Fit::Crop);
        let dst = TensorDyn::new(&input.shape(), dtype, Some(TensorMemory::Mem), None).unwrap();
        let mut pre = CpuPreprocessor::with_threads(3);
        for _ in 0..3 {
            pre.convert(&src, None, color, &input, &dst, 0).unwrap();
        }
        let per_frame: Vec<u64> = (0..200)
            .map(|_| {
                let before = counting_alloc::all_threads();
                pre.convert(&src, None, color, &input, &dst, 0).unwrap();
                counting_alloc::all_threads() - before
            })
            .collect();
        assert_eq!(
            per_frame, [0; 200],
            "{dtype:?} {layout:?}: allocations per frame, every thread"
        );
        // Four cameras, each its own crop, into the caller's buffer.
        let four = input.clone().batch(4).unwrap();
        let dst = TensorDyn::new(&four.shape(), dtype, Some(TensorMemory::Mem), None).unwrap();
        let mut pre = Preprocessor::new(four, Backend::Cpu)
            .unwrap()
            .with_threads(2);
        let sources: [SourceImage<'_>; 4] = std::array::from_fn(|k| {
            SourceImage::new(&src).with_crop(Some(Region::new(16 * k, 0, 160, 120)))
        });
        for _ in 0..3 {
            pre.run_batch_into(&sources, &dst, |_, _| {}).unwrap();
        }
        let per_batch: Vec<u64> = (0..100)
            .map(|_| {
                let before = counting_alloc::all_threads();
                pre.run_batch_into(&sources, &dst, |_, _| {}).unwrap();
                counting_alloc::all_threads() - before
            })
            .collect();
        assert_eq!(
            per_batch, [0; 100],
            "{dtype:?} {layout:?}: allocations per 4-camera batch, every thread"
        );
    }
}
