//! `GstSource` on vivid in the kernel lab (`cargo lab -p zerocam-capture
//! --features gstreamer --test lab_gst`): `v4l2src io-mode=dmabuf` on the
//! single- and multi-planar nodes, 300 frames each: imports == the pool's
//! buffers × planes, vivid's exact red in every frame, and no fd left behind.
//! (The same frames into EGL: zerocam-gpu's `lab_gst_import.rs`.)
#![cfg(all(feature = "lab", feature = "gstreamer"))]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod vivid_common;

use zerocam_capture::{FrameSource, GstSource};
use zerocam_tensor::TensorMemory;

use vivid_common::{lock, red_device, MULTI, SINGLE, WAIT};

const FRAMES: usize = 300;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// The fd count once GStreamer's own first-use fds are open (its registry,
/// the system clock, what the v4l2 plugin keeps once loaded): a first
/// `v4l2src` pipeline on `node` started and dropped.
fn settled_fds(node: &str) -> usize {
    let warm = format!("v4l2src device={node} ! video/x-raw,format=NV12,width=320,height=180");
    drop(GstSource::new(&warm).unwrap());
    open_fds()
}

/// Waits (up to a second) for the fd count to come back to `before`.
fn assert_fds_back(before: usize, what: &str) {
    for _ in 0..20 {
        if open_fds() == before {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        open_fds(),
        before,
        "{what}: every fd closed with the source"
    );
}

/// vivid's red in BT.601 limited range: Y 81, Cb 90, Cr 239.
fn assert_red(t: &zerocam_tensor::Tensor<u8>, what: &str) {
    let y = t.plane(0).unwrap();
    assert!(
        y.map_read().unwrap().iter().all(|&v| v == 81),
        "{what}: luma"
    );
    let uv = t.plane(1).unwrap();
    let m = uv.map_read().unwrap();
    assert!(m.chunks(2).all(|c| c == [90, 239]), "{what}: chroma");
}

/// `FRAMES` frames of `v4l2src` on `node`: each red, and the source's stats.
fn stream(
    node: &str,
    check: impl Fn(&zerocam_tensor::Tensor<u8>, usize),
) -> zerocam_capture::StreamStats {
    let desc = format!(
        "v4l2src device={node} io-mode=dmabuf ! video/x-raw,format=NV12,width=320,height=180"
    );
    let mut src = GstSource::new(&desc).unwrap();
    assert_eq!(
        src.stream_format().format.pixel,
        zerocam_tensor::PixelFormat::Nv12,
        "{node}"
    );
    for n in 0..FRAMES {
        let f = src.next_frame(WAIT).unwrap();
        check(f.tensor(), n);
        if n % 50 == 0 {
            assert_red(f.tensor(), &format!("{node} frame {n}"));
        }
    }
    src.stats()
}

#[test]
fn v4l2src_dma_bufs_are_imported_once_per_pool_buffer() {
    let _g = lock(SINGLE); // every test of this file: the fd counts see only their own
    drop(red_device(SINGLE));
    let before = settled_fds(SINGLE);
    let st = stream(SINGLE, |t, n| {
        assert_eq!(t.memory(), TensorMemory::Dma, "frame {n}: a dma-buf");
    });
    assert_eq!(st.system_memory_frames, 0);
    let pool = st.buffers as u64;
    assert!(pool >= 2, "{st:?}");
    assert_eq!(st.cache.misses, pool, "imports == pool buffers × 1 plane");
    assert_eq!(st.cache.hits, FRAMES as u64 - pool);
    assert_fds_back(before, "single-planar");
}

#[test]
fn frames_gstreamer_copied_are_counted_as_system_memory() {
    // On vivid's multi-planar node v4l2src's pool has 2 buffers, too few to
    // lend downstream: GStreamer copies each frame into system memory
    // (`gst_v4l2_buffer_pool_copy_buffer`). zerocam wraps the copy without
    // another and counts it, so the copy is visible.
    let _g = lock(SINGLE);
    drop(red_device(MULTI));
    let before = settled_fds(MULTI);
    let st = stream(MULTI, |t, n| {
        assert!(t.is_external(), "frame {n}: GStreamer's copy, wrapped");
    });
    assert_eq!(st.system_memory_frames, FRAMES as u64);
    assert_eq!(st.cache.misses, 0);
    assert_fds_back(before, "multi-planar");
}
