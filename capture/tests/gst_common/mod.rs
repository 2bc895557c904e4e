//! What the GStreamer tests and the overhead example share: a pool of
//! dma-buf frames without a dma-buf device (memfds wrapped by GStreamer's
//! dma-buf allocator: to GStreamer and zerocam alike, dma-buf memories) and
//! an `appsrc` pushing them.
#![allow(dead_code, clippy::unwrap_used)]

use zerocam_capture::GstSource;

/// A pool of `buffers` NV12 64x48 frames in memfds wrapped as GStreamer
/// dma-buf memory (the host has no dma-buf source), each plane filled with
/// its buffer's number: one memory holding both planes, or one per plane.
pub fn dma_buf_pool(
    buffers: usize,
    memory_per_plane: bool,
) -> Vec<zerocam_capture::gstreamer::Buffer> {
    dma_buf_pool_of(buffers, memory_per_plane, 64, 48)
}

/// As [`dma_buf_pool`], `w`x`h`.
pub fn dma_buf_pool_of(
    buffers: usize,
    memory_per_plane: bool,
    w: usize,
    h: usize,
) -> Vec<zerocam_capture::gstreamer::Buffer> {
    use zerocam_capture::gstreamer as gst;
    use zerocam_capture::gstreamer_allocators::{DmaBufAllocator, DmaBufAllocatorExtManual};
    use zerocam_capture::gstreamer_video as gst_video;
    gst::init().unwrap(); // the allocator needs GStreamer initialized
    let alloc = DmaBufAllocator::new();
    let (y, uv) = (w * h, w * h / 2);
    let memfd = |len: usize, fill: u8| {
        let flags =
            nix::sys::memfd::MFdFlags::MFD_ALLOW_SEALING | nix::sys::memfd::MFdFlags::MFD_CLOEXEC;
        let fd = nix::sys::memfd::memfd_create("zerocam-gst-test", flags).unwrap();
        nix::unistd::write(&fd, &vec![fill; len]).unwrap();
        fd
    };
    (0..buffers)
        .map(|b| {
            let mut buffer = gst::Buffer::new();
            {
                let buf = buffer.get_mut().unwrap();
                let sizes: &[usize] = if memory_per_plane {
                    &[y, uv]
                } else {
                    &[y + uv]
                };
                for &len in sizes {
                    // SAFETY: the memfd is ours to hand over; `len` is its size.
                    let mem = unsafe { alloc.alloc_dmabuf(memfd(len, b as u8 + 1), len) }.unwrap();
                    buf.append_memory(mem);
                }
                gst_video::VideoMeta::add_full(
                    buf,
                    gst_video::VideoFrameFlags::empty(),
                    gst_video::VideoFormat::Nv12,
                    w as u32,
                    h as u32,
                    &[0, y],
                    &[w as i32, w as i32],
                )
                .unwrap();
            }
            buffer
        })
        .collect()
}

/// An `appsrc` pushing `frames` NV12 64x48 frames that cycle through `pool`, then EOS.
pub fn appsrc_source(pool: Vec<zerocam_capture::gstreamer::Buffer>, frames: usize) -> GstSource {
    appsrc_source_of(pool, frames, 64, 48)
}

/// The `appsrc` description these helpers use, `w`x`h` NV12 (element `src`).
pub fn appsrc_description(w: usize, h: usize) -> String {
    format!("appsrc name=src format=time caps=video/x-raw,format=NV12,width={w},height={h},framerate=30/1")
}

/// Makes `pipeline`'s `appsrc` (`src`) push `frames` buffers cycling through `pool`, then EOS.
pub fn feed(
    pipeline: &zerocam_capture::gstreamer::Pipeline,
    pool: Vec<zerocam_capture::gstreamer::Buffer>,
    frames: usize,
) {
    use zerocam_capture::gstreamer::prelude::*;
    use zerocam_capture::gstreamer_app::{AppSrc, AppSrcCallbacks};
    let src = pipeline
        .by_name("src")
        .unwrap()
        .downcast::<AppSrc>()
        .unwrap();
    let mut sent = 0;
    src.set_callbacks(
        AppSrcCallbacks::builder()
            .need_data(move |src, _| {
                if sent == frames {
                    let _ = src.end_of_stream();
                    return;
                }
                let _ = src.push_buffer(pool[sent % pool.len()].clone());
                sent += 1;
            })
            .build(),
    );
}

/// As [`appsrc_source`], `w`x`h`.
pub fn appsrc_source_of(
    pool: Vec<zerocam_capture::gstreamer::Buffer>,
    frames: usize,
    w: usize,
    h: usize,
) -> GstSource {
    GstSource::with_setup(&appsrc_description(w, h), move |pipeline| {
        feed(pipeline, pool, frames);
        Ok(())
    })
    .unwrap()
}
