//! The GPU path on real dma-bufs in the kernel lab (`cargo lab-test`): vivid
//! frames imported as EGLImages by Mesa's zink on lavapipe (the one software
//! driver that imports 2-plane NV12, see ../shared/lab-notes.md), converted to
//! RGB and checked against vivid's solid red; the EGLImage cache counted.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

use std::time::Duration;

use zerocam_capture::{BufferMode, FrameSource};
use zerocam_gpu::{ConvertOptions, Gpu, GpuError};
use zerocam_tensor::{PixelFormat, Region, Tensor, TensorMemory};

const SINGLE: &str = "/dev/video0";
const MULTI: &str = "/dev/video1";
const WAIT: Duration = Duration::from_secs(10);
const FRAMES: usize = 12;
mod lab_common;

use lab_common::{assert_red, fd_count, fd_list, gpu, lock, red_stream, MODES, REQUIRE};

#[test]
fn the_lab_renderer_is_zink_with_dma_buf_import() {
    let _g = lock();
    let gpu = gpu();
    let info = gpu.info();
    assert!(info.renderer.contains("zink"), "{info:?}");
    assert!(info.dma_buf_import && info.image_external, "{info:?}");
}

/// One stream of FRAMES frames converted on `gpu`; returns the buffer count.
fn capture_and_convert(gpu: &Gpu, path: &str, name: &str, mode: BufferMode, what: &str) -> u64 {
    let before = gpu.stats().unwrap();
    let dst = Tensor::<u8>::image(64, 64, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let mut s = red_stream(path, name, mode);
    let mut fds_imported = 0;
    for n in 0..FRAMES {
        if n == 6 {
            fds_imported = fd_count(); // every buffer imported by now
        }
        let f = s.next_frame(WAIT).unwrap();
        assert_eq!(f.tensor().memory(), TensorMemory::Dma);
        gpu.convert(f.tensor(), &dst, &REQUIRE).unwrap();
        if n == 0 || n == FRAMES - 1 {
            assert_red(&dst, what);
        }
    }
    let buffers = s.stats().buffers as u64;
    let st = gpu.stats().unwrap();
    let imports = st.images.imports - before.images.imports;
    assert_eq!(imports, buffers, "{what}: one EGLImage per buffer");
    assert_eq!(
        st.images.hits - before.images.hits,
        FRAMES as u64 - buffers,
        "{what}"
    );
    assert_eq!(st.uploads, before.uploads, "{what}: nothing uploaded");
    assert_eq!(st.live_images, buffers, "{what}");
    assert_eq!(
        fd_count(),
        fds_imported,
        "{what}: no fd growth once imported"
    );
    drop(s); // the stream's buffers go: their images are swept or cleared
    gpu.clear_caches().unwrap();
    assert_eq!(
        gpu.stats().unwrap().live_images,
        0,
        "{what}: every image destroyed"
    );
    buffers
}

/// NV12 (one buffer, UV at its offset) and NV12M (two fds), MMAP+EXPBUF and
/// DMABUF: F frames from B buffers make exactly B EGLImages, pixels red; a
/// second identical round leaves no more fds open than the first (the driver
/// keeps a few of its own after the first).
#[test]
fn vivid_frames_are_imported_once_per_buffer_and_converted() {
    let _g = lock();
    for (path, name) in [(SINGLE, "NV12"), (MULTI, "NV12M")] {
        for &mode in MODES {
            let what = format!("{path} {name} {}", mode.name());
            let gpu = gpu();
            capture_and_convert(&gpu, path, name, mode, &what);
            let after_first = fd_list();
            capture_and_convert(&gpu, path, name, mode, &what);
            assert_eq!(
                fd_list(),
                after_first,
                "{what}: the second round leaked fds"
            );
        }
    }
}

/// A stop/start keeps every buffer's identity (MMAP: the same exported
/// dma-bufs and imports; DMABUF: the same pool), so the GPU image cache keeps
/// hitting: over two restarts, EGLImages created == buffers.
#[test]
fn restarts_keep_every_egl_image() {
    let _g = lock();
    for &mode in MODES {
        let what = format!("{SINGLE} NV12 {}", mode.name());
        let gpu = gpu();
        let dst = Tensor::<u8>::image(64, 64, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
        let mut s = red_stream(SINGLE, "NV12", mode);
        let buffers = s.stats().buffers as u64;
        let mut ids = std::collections::HashSet::new();
        let mut converted = 0;
        for round in 0..3 {
            if round > 0 {
                s.stop().unwrap();
                s.start().unwrap();
            }
            for _ in 0..2 * buffers {
                let f = s.next_frame(WAIT).unwrap();
                gpu.convert(f.tensor(), &dst, &REQUIRE).unwrap();
                ids.insert(f.tensor().buffer_identity().id());
                converted += 1;
            }
            assert_red(&dst, &format!("{what} round {round}"));
        }
        let st = gpu.stats().unwrap();
        assert_eq!(
            st.images.imports, buffers,
            "{what}: one EGLImage per buffer over two restarts"
        );
        assert_eq!(st.images.hits, converted - buffers, "{what}");
        assert_eq!(st.live_images, buffers, "{what}");
        assert_eq!(ids.len() as u64, buffers, "{what}: one identity per buffer");
        assert_eq!(s.stats().cache.misses, buffers, "{what}: no re-import");
    }
}

/// A crop of a frame view uses the frame's own image (no second import).
#[test]
fn a_view_of_a_frame_resolves_to_the_frame_image() {
    let _g = lock();
    let gpu = gpu();
    let mut s = red_stream(MULTI, "NV12M", BufferMode::Mmap);
    let dst = Tensor::<u8>::image(32, 32, PixelFormat::Rgba, Some(TensorMemory::Mem)).unwrap();
    let f = s.next_frame(WAIT).unwrap();
    gpu.convert(f.tensor(), &dst, &REQUIRE).unwrap();
    let view = f.tensor().view(Region::new(64, 32, 128, 96)).unwrap();
    let crop = ConvertOptions {
        crop: Some(Region::new(8, 8, 64, 64)),
        ..REQUIRE
    };
    gpu.convert(&view, &dst, &crop).unwrap();
    assert_red(&dst, "view");
    let st = gpu.stats().unwrap();
    assert_eq!((st.images.imports, st.images.hits), (1, 1));
}

/// A dma-buf destination is rendered in place (no readback); a batch of them
/// shares one imported render target.
#[test]
fn a_dma_buf_destination_is_rendered_in_place() {
    let _g = lock();
    let gpu = gpu();
    let mut s = red_stream(SINGLE, "NV12", BufferMode::DmaBuf);
    let batch = Tensor::<u8>::builder_image(
        zerocam_tensor::ImageLayout::new(64, 64, PixelFormat::Rgb).with_batch(2),
    )
    .memory(TensorMemory::Dma)
    .build()
    .unwrap();
    for n in 0..2 {
        let f = s.next_frame(WAIT).unwrap();
        gpu.convert(f.tensor(), &batch.batch(n).unwrap(), &REQUIRE)
            .unwrap();
    }
    let st = gpu.stats().unwrap();
    assert_eq!(st.readbacks, 0, "rendered into the dma-buf itself");
    assert_eq!((st.targets.imports, st.targets.hits), (1, 1));
    assert_red(&batch, "dma-buf batch");
}

/// An R8 EGLImage samples as (r, 0, 0): a grey source must still come out grey.
#[test]
fn a_grey_dma_buf_source_comes_out_grey() {
    let _g = lock();
    let gpu = gpu();
    let grey = Tensor::<u8>::image(32, 16, PixelFormat::Grey, Some(TensorMemory::Dma)).unwrap();
    grey.map_write().unwrap().fill(100);
    let dst = Tensor::<u8>::image(32, 16, PixelFormat::Rgba, Some(TensorMemory::Mem)).unwrap();
    gpu.convert(&grey, &dst, &REQUIRE).unwrap();
    assert_eq!(gpu.stats().unwrap().images.imports, 1);
    let m = dst.map_read().unwrap();
    assert!(
        m.chunks(4).all(|p| p == [100, 100, 100, 255]),
        "{:?}",
        &m[..8]
    );
}

#[test]
fn bad_dma_buf_inputs_are_typed_errors() {
    let _g = lock();
    let gpu = gpu();
    let shm = Tensor::<u8>::image(64, 64, PixelFormat::Nv12, Some(TensorMemory::Shm)).unwrap();
    let dst = Tensor::<u8>::image(64, 64, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let e = gpu.convert(&shm, &dst, &REQUIRE).unwrap_err();
    assert!(matches!(e, GpuError::UnsupportedMemory { .. }), "{e}");
    // A dma-buf held by a writer cannot be sampled meanwhile.
    let dma = Tensor::<u8>::image(64, 64, PixelFormat::Nv12, Some(TensorMemory::Dma)).unwrap();
    let writer = dma.map_write().unwrap();
    let e = gpu.convert(&dma, &dst, &REQUIRE).unwrap_err();
    assert!(e.to_string().contains("alias"), "{e}");
    drop(writer);
    gpu.convert(&dma, &dst, &REQUIRE).unwrap();
    let st = gpu.stats().unwrap();
    assert_eq!((st.images.imports, st.converts), (1, 1));
}
