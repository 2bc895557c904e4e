//! A panic on the GL thread with real dma-buf imports, in the kernel lab
//! (`cargo lab -p zerocam-gpu --test lab_gpu_panic`): zink on lavapipe imports
//! dma-heap tensors and vivid frames as EGLImages; a conversion panics midway
//! (through the `fault-injection` hook); the `Gpu` is poisoned, every imported
//! image is destroyed exactly once, the frames' device borrows are released,
//! capture carries on, and dropping everything leaves no fd behind.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

use std::time::Duration;

use zerocam_capture::{BufferMode, FrameSource};
use zerocam_gpu::{Gpu, GpuError, GpuStats};
use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

mod lab_common;

use lab_common::{assert_red, fd_list, gpu, lock, red_stream, REQUIRE};

const MESSAGE: &str = "injected: a bug mid-conversion";
/// Runs `round` twice: the second leaves exactly the fds the first left (the
/// first context and the first imports open the driver's own files for the
/// process; a leak on the panic path shows as growth in every round).
fn twice_without_fd_growth(round: impl Fn()) {
    round();
    let after_first = fd_list();
    round();
    assert_eq!(fd_list(), after_first, "the second round left fds behind");
}

fn assert_poisoned(e: &GpuError) {
    assert!(
        matches!(e, GpuError::Poisoned { job: "convert", message } if message == MESSAGE),
        "{e:?}"
    );
}

/// No image alive, and every one created was destroyed exactly once.
fn assert_images_all_destroyed(s: &GpuStats, created: u64) {
    assert_eq!(
        (s.live_images, s.images_created, s.images_destroyed),
        (0, created, created),
        "{s:?}"
    );
    assert_eq!((s.images.live, s.targets.live), (0, 0), "{s:?}");
}

#[test]
fn a_panic_mid_convert_destroys_each_dma_buf_image_once() {
    let _g = lock();
    twice_without_fd_growth(dma_buf_images_then_a_panic);
}

fn dma_buf_images_then_a_panic() {
    let gpu = gpu();
    let sources: Vec<Tensor<u8>> = (0..3)
        .map(|i| {
            let t = Tensor::<u8>::image(64, 32, PixelFormat::Nv12, Some(TensorMemory::Dma));
            let t = t.unwrap();
            t.map_write().unwrap().fill(60 + i * 40);
            t
        })
        .collect();
    let dst = Tensor::<u8>::image(32, 16, PixelFormat::Rgba, Some(TensorMemory::Dma)).unwrap();
    for src in &sources {
        gpu.convert(src, &dst, &REQUIRE).unwrap();
    }
    let s = gpu.stats().unwrap();
    assert_eq!((s.images.imports, s.targets.imports), (3, 1), "{s:?}");
    assert_eq!((s.live_images, s.images_created), (4, 4), "{s:?}");
    assert_eq!(s.readbacks, 0, "the destination was rendered in place");

    gpu.__panic_in_next_convert(MESSAGE).unwrap();
    assert_poisoned(&gpu.convert(&sources[0], &dst, &REQUIRE).unwrap_err());
    assert_images_all_destroyed(&gpu.stats().unwrap(), 4);
    // The half-done conversion's device borrows are gone with it.
    sources[0].map_write().unwrap().fill(0);
    dst.map_write().unwrap().fill(0);
    assert_poisoned(&gpu.convert(&sources[1], &dst, &REQUIRE).unwrap_err());
}

/// Capture keeps running after a panic mid-conversion of one of its frames:
/// every buffer comes back, and a new `Gpu` imports each buffer once again.
#[test]
fn capture_carries_on_after_a_panic_and_a_new_gpu_imports_again() {
    let _g = lock();
    twice_without_fd_growth(capture_then_a_panic);
}

fn capture_then_a_panic() {
    let wait = Duration::from_secs(10);
    let dst = Tensor::<u8>::image(32, 32, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let mut stream = red_stream("/dev/video1", "NV12M", BufferMode::Mmap);
    let gpu = gpu();
    let buffers = stream.stats().buffers as u64;
    for _ in 0..2 * buffers {
        gpu.convert(stream.next_frame(wait).unwrap().tensor(), &dst, &REQUIRE)
            .unwrap();
    }
    let created = gpu.stats().unwrap().images_created;
    assert_eq!(created, buffers, "one image per buffer");

    gpu.__panic_in_next_convert(MESSAGE).unwrap();
    let frame = stream.next_frame(wait).unwrap();
    assert_poisoned(&gpu.convert(frame.tensor(), &dst, &REQUIRE).unwrap_err());
    drop(frame);
    assert_images_all_destroyed(&gpu.stats().unwrap(), created);

    let fresh = Gpu::new().unwrap();
    for _ in 0..2 * buffers {
        let f = stream.next_frame(wait).unwrap();
        fresh.convert(f.tensor(), &dst, &REQUIRE).unwrap();
    }
    assert_red(&dst, "converted by the new Gpu");
    let s = fresh.stats().unwrap();
    assert_eq!(
        (s.images.imports, s.live_images),
        (buffers, buffers),
        "{s:?}"
    );
}
