//! What the GPU crate's lab tests share: the check that an image is vivid's
//! red, and from zerocam-test-support a `Gpu` on zink over lavapipe, vivid
//! streams of solid red, one test at a time and the process's fds.
#![allow(dead_code, unused_imports)] // each lab binary uses its part

use zerocam_capture::BufferMode;
use zerocam_tensor::Tensor;
pub use zerocam_test_support::gl::{gpu, REQUIRE};
pub use zerocam_test_support::lab::{fd_count, fd_list, lock, zink_env};
pub use zerocam_test_support::vivid::{format, red_stream};

/// The buffer modes vivid streams in this lab: both on the x86 lab; `mmap`
/// only on the arm64 lab, whose kernel (Debian's arm64 config) has no DMA
/// heap for `dmabuf` mode to allocate from.
pub const MODES: &[BufferMode] = if cfg!(target_arch = "aarch64") {
    &[BufferMode::Mmap]
} else {
    &[BufferMode::Mmap, BufferMode::DmaBuf]
};

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
