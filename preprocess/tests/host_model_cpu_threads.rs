//! The CPU model-input path on threads allocates nothing per frame, counted
//! over every thread of the process (a test binary of its own: no other
//! test allocates meanwhile).
#![allow(clippy::unwrap_used)]

use zerocam_test_support::alloc as counting_alloc;
#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

use zerocam_preprocess::{CpuPreprocessor, Fit, ModelInput, ModelLayout};
use zerocam_tensor::ColorSpec;
use zerocam_tensor::{DType, PixelFormat, Tensor, TensorDyn, TensorMemory};

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
        let per_frame: Vec<u64> = (0..5)
            .map(|_| {
                let before = counting_alloc::all_threads();
                pre.convert(&src, None, color, &input, &dst, 0).unwrap();
                counting_alloc::all_threads() - before
            })
            .collect();
        assert_eq!(
            per_frame, [0; 5],
            "{dtype:?} {layout:?}: allocations per frame, every thread"
        );
    }
}
