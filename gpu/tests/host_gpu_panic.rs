//! A panic on the GL thread, on the host's Mesa (llvmpipe, surfaceless EGL):
//! the `Gpu` is poisoned — the panicking job's caller and every later call
//! that would use the context get `GpuError::Poisoned` naming the job and the
//! message — its EGLImages are destroyed exactly once, its PBOs are still
//! freed, and dropping it all leaks no fd. The panics are injected through the
//! test-only hooks of the `fault-injection` feature (this crate's
//! dev-dependency on itself). The host's EGL cannot import dma-bufs, so the
//! images here are EGLImages of GL textures; `lab_gpu_panic.rs` does the same
//! with dma-buf imports in the kernel lab.
#![allow(clippy::unwrap_used)]

use zerocam_gpu::{ConvertOptions, Gpu, GpuError, GpuStats};
use zerocam_tensor::{Error, PixelFormat, Tensor, TensorMemory};

mod common;

const MESSAGE: &str = "injected: index 9 out of range for a plane of 8";

/// The error names the job that panicked and its message.
fn assert_poisoned(e: &GpuError, job: &str) {
    assert!(
        matches!(e, GpuError::Poisoned { job: j, message } if *j == job && message == MESSAGE),
        "{e:?}"
    );
    assert!(e.to_string().contains(MESSAGE), "{e}");
}

/// A PBO error that carries the poison (the tensor crate's `Error::Pbo`).
fn assert_pbo_poisoned(e: &Error) {
    assert!(matches!(e, Error::Pbo { .. }), "{e:?}");
    assert!(e.to_string().contains("poisoned"), "{e}");
    assert!(e.to_string().contains(MESSAGE), "{e}");
}

/// Every image made was destroyed once: none live, created == destroyed.
fn assert_images_all_destroyed(s: &GpuStats, created: u64) {
    assert_eq!(
        (s.live_images, s.images_created, s.images_destroyed),
        (0, created, created),
        "{s:?}"
    );
}

fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// One test of this file at a time: every test makes `Gpu`s, whose threads
/// open and close fds (the DRM render node, the display), so a neighbour
/// running alongside would move the count `dropping_..._leaks_no_fd` checks.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn a_panicking_job_poisons_the_gpu_and_its_caller_gets_the_message() {
    let _serial = serial();
    let gpu = Gpu::new().unwrap();
    gpu.__hold_texture_images(3).unwrap();
    let s = gpu.stats().unwrap();
    assert_eq!((s.live_images, s.images_created), (3, 3), "{s:?}");
    let kept = gpu.pbo_tensor::<u8>(&[4096]).unwrap();

    let e = gpu.__inject_panic(MESSAGE).unwrap_err();
    assert_poisoned(&e, "inject_panic");

    // The 3 held images and the one the job had in hand: destroyed once each.
    let s = gpu.stats().unwrap();
    assert_images_all_destroyed(&s, 4);
    assert_eq!(s.live_pbos, 1, "a tensor still owns its PBO");

    // Every later call that would use the context is refused, naming the panic.
    let src = common::picture(PixelFormat::Rgb, 16, 8);
    let dst = Tensor::<u8>::image(16, 8, PixelFormat::Rgba, Some(TensorMemory::Mem)).unwrap();
    let options = ConvertOptions::default();
    assert_poisoned(
        &gpu.convert(&src, &dst, &options).unwrap_err(),
        "inject_panic",
    );
    assert_poisoned(&gpu.pbo_tensor::<u8>(&[64]).unwrap_err(), "inject_panic");
    assert_poisoned(&gpu.clear_caches().unwrap_err(), "inject_panic");
    assert_poisoned(&gpu.clear_imports().unwrap_err(), "inject_panic");
    assert_poisoned(&gpu.__hold_texture_images(1).unwrap_err(), "inject_panic");
    assert_pbo_poisoned(&kept.map_read().unwrap_err());

    // Freeing still works: the PBO is deleted when its tensor drops.
    drop(kept);
    let s = gpu.stats().unwrap();
    assert_eq!(s.live_pbos, 0, "{s:?}");
    assert_images_all_destroyed(&s, 4);
}

#[test]
fn a_cpu_map_taken_before_the_panic_stays_valid_until_it_ends() {
    let _serial = serial();
    let gpu = Gpu::new().unwrap();
    let t = gpu.pbo_tensor::<u8>(&[1 << 16]).unwrap();
    let mut map = t.map_write().unwrap();
    gpu.__inject_panic(MESSAGE).unwrap_err();
    drop(gpu); // the last handle, too: the map keeps the thread
    map.fill(7); // the mapping was not torn down under it
    assert_eq!(map[(1 << 16) - 1], 7);
    // Its unmap still runs, and reports the poison.
    assert_pbo_poisoned(&map.finish().unwrap_err());
    // The thread has exited now: the tensor outlived it.
    let e = t.map_read().unwrap_err();
    assert!(matches!(e, Error::PboDisconnected { .. }), "{e:?}");
}

#[test]
fn a_panic_mid_convert_poisons_and_a_new_gpu_converts_correctly() {
    let _serial = serial();
    let src = common::picture(PixelFormat::Nv12, 32, 16);
    let options = ConvertOptions::default();
    let image = || Tensor::<u8>::image(32, 16, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let bytes = |t: &Tensor<u8>| t.map_read().unwrap().to_vec();

    let gpu = Gpu::new().unwrap();
    let before = image();
    gpu.convert(&src, &before, &options).unwrap();
    assert_eq!(gpu.stats().unwrap().targets.live, 1);

    gpu.__panic_in_next_convert(MESSAGE).unwrap();
    let dst = image();
    assert_poisoned(&gpu.convert(&src, &dst, &options).unwrap_err(), "convert");
    let s = gpu.stats().unwrap();
    assert_eq!(s.converts, 1, "the panicking one is not counted");
    assert_eq!((s.targets.live, s.images.live), (0, 0), "caches freed");
    // Nothing of the half-done conversion holds the tensors.
    dst.map_write().unwrap().fill(1);
    src.map_write().unwrap();
    assert_poisoned(&gpu.convert(&src, &dst, &options).unwrap_err(), "convert");

    // A new Gpu is a new context: it converts exactly as the first one did.
    let fresh = Gpu::new().unwrap();
    let after = image();
    fresh.convert(&src, &after, &options).unwrap();
    assert_eq!(bytes(&after), bytes(&before));
    assert_eq!(fresh.stats().unwrap().converts, 1);
}

#[test]
fn calls_queued_behind_the_panic_get_the_typed_error_and_none_hangs() {
    let _serial = serial();
    let gpu = Gpu::new().unwrap();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let gpu = gpu.clone();
            std::thread::spawn(move || {
                (0..50)
                    .map(|_| gpu.pbo_tensor::<u8>(&[256]).map(drop))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    assert_poisoned(&gpu.__inject_panic(MESSAGE).unwrap_err(), "inject_panic");
    for w in workers {
        for r in w.join().unwrap() {
            if let Err(e) = r {
                assert_poisoned(&e, "inject_panic");
            }
        }
    }
    assert_eq!(gpu.stats().unwrap().live_pbos, 0, "every PBO deleted");
}

#[test]
fn dropping_a_poisoned_gpu_and_its_tensors_leaks_no_fd() {
    let _serial = serial();
    // The first context opens the display (and its fds) for the process.
    drop(Gpu::new().unwrap());
    let before = fd_count();
    for round in 0..3 {
        let gpu = Gpu::new().unwrap();
        gpu.__hold_texture_images(2).unwrap();
        let pbo = gpu.pbo_image(16, 16, PixelFormat::Rgba).unwrap();
        let held = gpu.pbo_tensor::<u8>(&[1024]).unwrap();
        let map = held.map_read().unwrap();
        gpu.__inject_panic(MESSAGE).unwrap_err();
        let clone = gpu.clone();
        drop(gpu);
        drop(pbo);
        drop(map); // unmap on the poisoned thread: the error goes unseen
        drop(clone); // the thread exits here, freeing its context
        drop(held);
        assert_eq!(fd_count(), before, "round {round}");
    }
}
