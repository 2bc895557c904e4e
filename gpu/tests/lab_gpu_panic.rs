//! A panic on the GL thread with real dma-buf imports, in the kernel lab
//! (`cargo lab -p zerocam-gpu --test lab_gpu_panic`): zink on lavapipe imports
//! dma-heap tensors and vivid frames as EGLImages; a conversion panics midway
//! (through the `fault-injection` hook); the `Gpu` is poisoned, every imported
//! image is destroyed exactly once, the frames' device borrows are released,
//! capture carries on, and dropping everything leaves no fd behind.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

use std::sync::{Mutex, MutexGuard, Once};
use std::time::Duration;

use zerocam_capture::{BufferMode, Device, FrameSource, Stream, StreamConfig, CAPTURE_FORMATS};
use zerocam_gpu::{ConvertOptions, Gpu, GpuError, GpuStats, ImportPolicy};
use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

const MESSAGE: &str = "injected: a bug mid-conversion";
const REQUIRE: ConvertOptions = ConvertOptions {
    crop: None,
    color: zerocam_gpu::ColorSpec::new(zerocam_gpu::Matrix::Bt601, zerocam_gpu::Range::Limited),
    import: ImportPolicy::Require,
};

/// zink on lavapipe, surfaceless (what `tests/lab/run --egl` sets).
fn gpu() -> Gpu {
    static ENV: Once = Once::new();
    ENV.call_once(|| {
        std::env::set_var("LIBGL_ALWAYS_SOFTWARE", "1");
        std::env::set_var("GALLIUM_DRIVER", "zink");
        std::env::set_var("EGL_PLATFORM", "surfaceless");
    });
    Gpu::new().unwrap()
}

/// One test at a time: fd counts are per process.
fn lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The open fds, by what they are (for a readable failure).
fn fd_list() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

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

fn red_nv12m_stream() -> Stream {
    let mut d = Device::open("/dev/video1").unwrap();
    d.set_menu("Test Pattern", "100% Red").unwrap();
    d.set_menu("OSD Text Mode", "None").unwrap();
    let nv12m = CAPTURE_FORMATS
        .into_iter()
        .find(|f| f.name == "NV12M")
        .unwrap();
    d.set_format(nv12m, 320, 180).unwrap();
    d.set_frame_rate(60.0).unwrap();
    let config = StreamConfig {
        mode: BufferMode::Mmap,
        ..Default::default()
    };
    Stream::new(d, config).unwrap()
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
    let mut stream = red_nv12m_stream();
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
    let m = dst.map_read().unwrap();
    let not_red = m.chunks(3).position(|p| p[0] < 250 || p[1] > 3 || p[2] > 3);
    assert_eq!(not_red, None, "converted by the new Gpu: {:?}", &m[..6]);
    drop(m);
    let s = fresh.stats().unwrap();
    assert_eq!(
        (s.images.imports, s.live_images),
        (buffers, buffers),
        "{s:?}"
    );
}
