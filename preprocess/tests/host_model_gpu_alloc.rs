//! Heap allocations of `convert_model` (through `Gpu::write_model`) in a
//! steady stream, counted by a counting global allocator: Rust allocations
//! of every thread of this test binary, and of the calling thread alone.
//! What other threads make is the GL thread's (Mesa's own C allocations are
//! not Rust's and not counted).
//! One test in the binary, so nothing else allocates meanwhile.
#![allow(clippy::unwrap_used)]

use zerocam_preprocess::gpu::convert_model_dyn;
use zerocam_test_support::alloc as counting_alloc;
#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;
#[path = "common/model_gpu.rs"]
mod model_gpu;
#[path = "common/model_reference.rs"]
mod model_reference;

use model_gpu::{destination, frame, input};
use zerocam_gpu::{ConvertOptions, Gpu};
use zerocam_preprocess::{Fit, ModelLayout};
use zerocam_tensor::{DType, PixelFormat, TensorMemory};

/// Allocations per run of `f` over `n` runs: `(on this thread, on others)`.
fn per_call(n: u64, mut f: impl FnMut()) -> (f64, f64) {
    let all = counting_alloc::all_threads();
    let this = counting_alloc::this_thread();
    for _ in 0..n {
        f();
    }
    let this = counting_alloc::this_thread() - this;
    let all = counting_alloc::all_threads() - all;
    (this as f64 / n as f64, (all - this) as f64 / n as f64)
}

/// In a steady stream a frame allocates nothing, on the caller's thread or
/// on the GL thread: the plan, the placement and the write's description
/// are arithmetic on the stack (`model_plan`'s unit test counts the plan
/// alone); the conversion job travels inline in the GL thread's queue (a
/// deque that keeps its capacity) and its reply comes back through the
/// calling thread's reply slot, made on its first conversion. A `stats()`
/// round trip, a boxed job with a reply channel of its own, is printed
/// beside it for comparison.
#[test]
fn convert_model_allocates_nothing_per_frame() {
    let gpu = Gpu::new().unwrap();
    let src = frame(PixelFormat::Nv12, 128, 72, None);
    let opts = ConvertOptions::default();
    for (dtype, memory, layout) in [
        (DType::F32, TensorMemory::Mem, ModelLayout::Nhwc),
        (DType::U8, TensorMemory::Pbo, ModelLayout::Nhwc),
        (DType::F16, TensorMemory::Shm, ModelLayout::Nhwc),
        (DType::F32, TensorMemory::Pbo, ModelLayout::Nchw),
        (DType::I8, TensorMemory::Mem, ModelLayout::Nchw),
    ] {
        // Odd sizes (shared texels, the scratch PBO) and every batch element.
        let i = input(63, 37, dtype, layout)
            .batch(3)
            .unwrap()
            .fit(Fit::Crop);
        let dst = destination(&gpu, &i, memory);
        for n in 0..3 {
            convert_model_dyn(&gpu, &src, &dst, &i, &opts, n).unwrap(); // warm up
        }
        const N: u64 = 30;
        let (round_trip, stats_gl) = per_call(N, || {
            gpu.stats().unwrap();
        });
        let mut k = 0;
        let (caller, gl) = per_call(N, || {
            convert_model_dyn(&gpu, &src, &dst, &i, &opts, k % 3).unwrap();
            k += 1;
        });
        println!(
            "{dtype:?} {memory:?} {layout:?}: a frame makes {caller} allocations on the \
             caller's thread and {gl} on the GL thread; a stats() round trip {round_trip} \
             and {stats_gl}"
        );
        assert_eq!(
            gl, 0.0,
            "{dtype:?} {memory:?} {layout:?}: GL-thread allocations a frame"
        );
        assert_eq!(
            caller, 0.0,
            "{dtype:?} {memory:?} {layout:?}: caller-thread allocations a frame"
        );
    }
}
