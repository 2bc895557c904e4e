//! What the GPU crate's lab tests share: zink on lavapipe, one test at a time,
//! the process's fds, and vivid streams of solid red.
#![allow(dead_code)] // each lab binary uses its part

use std::sync::{Mutex, MutexGuard, Once};

use zerocam_capture::{BufferMode, CaptureFormat, Device, Stream, StreamConfig, CAPTURE_FORMATS};
use zerocam_gpu::{ConvertOptions, Gpu, ImportPolicy};
use zerocam_tensor::Tensor;

/// BT.601 limited range, EGLImage import required (no upload fallback).
pub const REQUIRE: ConvertOptions = ConvertOptions {
    crop: None,
    color: zerocam_gpu::ColorSpec::new(zerocam_gpu::Matrix::Bt601, zerocam_gpu::Range::Limited),
    import: ImportPolicy::Require,
};

/// The environment `tests/lab/run --egl` sets, set here so the test binary
/// needs no runner flag: zink on lavapipe, surfaceless.
pub fn gpu() -> Gpu {
    static ENV: Once = Once::new();
    ENV.call_once(|| {
        std::env::set_var("LIBGL_ALWAYS_SOFTWARE", "1");
        std::env::set_var("GALLIUM_DRIVER", "zink");
        std::env::set_var("EGL_PLATFORM", "surfaceless");
    });
    Gpu::new().unwrap()
}

/// One test at a time: vivid's nodes and the (slow, emulated) GPU.
pub fn lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// What the open fds are (for failure messages).
pub fn fd_list() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

pub fn format(name: &str) -> CaptureFormat {
    CAPTURE_FORMATS
        .into_iter()
        .find(|f| f.name == name)
        .unwrap()
}

pub fn red_stream(path: &str, name: &str, mode: BufferMode) -> Stream {
    let mut d = Device::open(path).unwrap();
    d.set_menu("Test Pattern", "100% Red").unwrap();
    d.set_menu("OSD Text Mode", "None").unwrap();
    d.set_format(format(name), 320, 180).unwrap();
    d.set_frame_rate(60.0).unwrap();
    let config = StreamConfig {
        mode,
        ..Default::default()
    };
    Stream::new(d, config).unwrap()
}

/// Every pixel of an RGB(A) image is vivid's red (BT.601 limited 81,90,239 →
/// 254,0,0 or so), within 3 steps.
pub fn assert_red(t: &Tensor<u8>, what: &str) {
    let bpp = t.format().unwrap().samples_per_pixel();
    let m = t.map_read().unwrap();
    for (i, px) in m.chunks(bpp).enumerate() {
        let ok = px[0] >= 250 && px[1] <= 3 && px[2] <= 3;
        assert!(ok, "{what}: pixel {i} is {:?}, not red", &px[..3]);
    }
}
