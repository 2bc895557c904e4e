//! `GstSource` on the host's GStreamer (Debian's packages, installed by
//! `.ci/run`): `videotestsrc` pipelines in every format zerocam takes, the
//! system-memory path (read-only, in place, counted), EOS, bad pipelines,
//! errors from elements, and no fd left behind. The dma-buf path needs a
//! dma-buf source (`v4l2src io-mode=dmabuf` on vivid): it runs in the kernel
//! lab.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use zerocam_capture::gst::GstError;
use zerocam_capture::{CaptureError, FrameSource, GstSource};
use zerocam_tensor::{Error, PixelFormat};

const WAIT: Duration = Duration::from_secs(5);

mod gst_common;

use gst_common::{appsrc_source, dma_buf_pool, dma_buf_pool_of};

fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Waits (up to a second) for the fd count to come back to `before`:
/// GStreamer may finish a teardown on its own threads.
fn assert_fds_back(before: usize, what: &str) {
    for _ in 0..20 {
        if fd_count() == before {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        fd_count(),
        before,
        "{what}: every fd closed with the source"
    );
}

/// One test at a time: the fd count must see only its own pipelines.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// A solid white `format` test pattern, `frames` long.
fn white(format: &str, frames: u32) -> String {
    format!(
        "videotestsrc pattern=white num-buffers={frames} ! video/x-raw,format={format},width=64,height=48,colorimetry=bt601"
    )
}

#[test]
fn every_format_arrives_as_its_image_with_the_right_pixels() {
    let _serial = serial();
    for (gst, pixel, first) in [
        ("NV12", PixelFormat::Nv12, 235),
        ("NV16", PixelFormat::Nv16, 235),
        ("YUY2", PixelFormat::Yuyv, 235),
        ("UYVY", PixelFormat::Uyvy, 128), // U first: neutral chroma
        ("RGB", PixelFormat::Rgb, 255),
        ("BGR", PixelFormat::Bgr, 255),
        ("GRAY8", PixelFormat::Grey, 235), // videotestsrc's grey is limited range
        ("BGRx", PixelFormat::Bgra, 255),
    ] {
        let mut src = GstSource::new(&white(gst, 3)).unwrap();
        assert_eq!(src.stream_format().format.pixel, pixel, "{gst}");
        assert_eq!(
            (src.stream_format().width, src.stream_format().height),
            (64, 48)
        );
        for n in 0..3 {
            let f = src.next_frame(WAIT).unwrap();
            let t = f.tensor();
            assert_eq!(
                (t.format(), t.width(), t.height()),
                (Some(pixel), Some(64), Some(48)),
                "{gst}"
            );
            assert_eq!(f.sequence(), n);
            let y = t.plane(0).unwrap();
            assert_eq!(
                y.map_read().unwrap()[0],
                first,
                "{gst}: the first byte of white"
            );
        }
        let st = src.stats();
        assert_eq!((st.frames, st.system_memory_frames), (3, 3), "{gst}");
    }
}

#[test]
fn system_memory_frames_are_read_in_place_and_read_only() {
    let _serial = serial();
    let mut src = GstSource::new(&white("NV12", 2)).unwrap();
    let f = src.next_frame(WAIT).unwrap();
    let t = f.tensor().clone();
    assert!(t.is_external(), "wrapped, not copied");
    assert!(matches!(t.map_write(), Err(Error::ReadOnly { .. })));
    let chroma = t.plane(1).unwrap();
    assert!(chroma.map_read().unwrap().iter().all(|&c| c == 128));
    drop(f);
    // The tensor keeps the GStreamer buffer mapped after its frame is gone.
    assert_eq!(t.plane(0).unwrap().map_read().unwrap()[64 * 48 - 1], 235);
}

#[test]
fn the_end_of_the_stream_is_a_typed_error() {
    let _serial = serial();
    let mut src = GstSource::new(&white("GRAY8", 2)).unwrap();
    for _ in 0..2 {
        src.next_frame(WAIT).unwrap();
    }
    match src.next_frame(WAIT) {
        Err(CaptureError::Gst(GstError::Eos { pipeline })) => {
            assert!(pipeline.starts_with("videotestsrc"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_pipelines_are_typed_errors_with_gstreamers_words() {
    let _serial = serial();
    match GstSource::new("no_such_element_zc ! fakesink") {
        Err(CaptureError::Gst(GstError::Parse { message, .. })) => {
            assert!(message.contains("no_such_element_zc"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        GstSource::new("videotestsrc ! ! video/x-raw"),
        Err(CaptureError::Gst(GstError::Parse { .. }))
    ));
    // Caps no element can meet: refused when the pipeline is linked.
    match GstSource::new(
        "videotestsrc ! video/x-raw,format=NV12,width=64,height=48 ! capsfilter caps=video/x-raw,format=RGB",
    ) {
        Err(CaptureError::Gst(GstError::Parse { message, .. })) => {
            assert!(message.contains("could not link"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // An element that fails when it starts: its own error, from the bus, one line.
    match GstSource::new("filesrc location=/nonexistent/zerocam.raw") {
        Err(CaptureError::Gst(e @ GstError::Element { .. })) => {
            let line = e.to_string();
            assert!(line.starts_with("filesrc0: "), "{line}");
            assert!(line.contains("/nonexistent/zerocam.raw"), "{line}");
            assert_eq!(line.lines().count(), 1, "{line}");
        }
        other => panic!("{other:?}"),
    }
    // A format zerocam does not take: the appsink's caps refuse it, so
    // the source cannot negotiate.
    match GstSource::new("videotestsrc num-buffers=1 ! video/x-raw,format=I420,width=64,height=48")
    {
        Err(CaptureError::Gst(GstError::Element { message, .. })) => {
            assert!(message.contains("not-negotiated"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_source_dropped_mid_stream_leaves_no_fd_behind() {
    let _serial = serial();
    let pipeline = "videotestsrc ! video/x-raw,format=NV12,width=320,height=240";
    // GStreamer's own first-use fds (its registry, the system clock) first.
    drop(GstSource::new(pipeline).unwrap());
    let before = fd_count();
    for _ in 0..3 {
        let mut src = GstSource::new(pipeline).unwrap();
        let held = src.next_frame(WAIT).unwrap();
        for _ in 0..10 {
            src.next_frame(WAIT).unwrap();
        }
        drop(src);
        drop(held); // a frame outliving its source is still valid, then freed
    }
    assert_fds_back(before, "three sources");
}

#[test]
fn a_caps_change_mid_stream_gives_frames_of_the_new_format() {
    use zerocam_capture::gstreamer::prelude::*;
    let _serial = serial();
    let mut src = GstSource::new(
        "videotestsrc pattern=white ! videoscale ! capsfilter name=size caps=video/x-raw,format=NV12,width=64,height=48",
    )
    .unwrap();
    for _ in 0..3 {
        let f = src.next_frame(WAIT).unwrap();
        assert_eq!(
            (f.tensor().width(), f.tensor().height()),
            (Some(64), Some(48))
        );
    }
    let caps: zerocam_capture::gstreamer::Caps = "video/x-raw,format=NV12,width=128,height=96"
        .parse()
        .unwrap();
    src.pipeline()
        .by_name("size")
        .unwrap()
        .set_property("caps", &caps);
    // Frames already queued in the sink may still be the old size; then only the new one.
    let mut new = 0;
    for _ in 0..10 {
        let f = src.next_frame(WAIT).unwrap();
        let size = (f.tensor().width().unwrap(), f.tensor().height().unwrap());
        if new > 0 {
            assert_eq!(size, (128, 96), "nothing stale after the change");
        }
        if size == (128, 96) {
            new += 1;
            assert_eq!(f.tensor().shape(), &[144, 128]);
            assert_eq!(
                f.tensor().plane(0).unwrap().map_read().unwrap()[128 * 96 - 1],
                235
            );
        }
    }
    assert!(new >= 7, "{new} frames of the new size");
    assert_eq!(
        (src.stream_format().width, src.stream_format().height),
        (128, 96)
    );
}

#[test]
fn dma_buf_frames_are_imported_once_per_pool_buffer() {
    for (per_plane, planes, name) in [(false, 1, "NV12"), (true, 2, "NV12M")] {
        let _serial = serial();
        let before = fd_count();
        {
            let mut src = appsrc_source(dma_buf_pool(3, per_plane), 30);
            assert_eq!(src.stream_format().format.name, name);
            let mut ids = std::collections::HashMap::new();
            for n in 0..30 {
                let f = src.next_frame(WAIT).unwrap();
                let t = f.tensor();
                // Imported from its fd (memfds stand for dma-bufs on the host: Shm
                // here, Dma in the lab), not wrapped.
                assert!(!t.is_external() && t.fd_identity().is_some(), "{name}");
                let b = (n % 3) as u8 + 1;
                assert_eq!(
                    t.plane(0).unwrap().map_read().unwrap()[0],
                    b,
                    "{name} frame {n}"
                );
                assert_eq!(
                    t.plane(1).unwrap().map_read().unwrap()[64 * 24 - 1],
                    b,
                    "{name} frame {n}"
                );
                let id = t.buffer_identity().id();
                assert_eq!(
                    *ids.entry(n % 3).or_insert(id),
                    id,
                    "{name}: a pool buffer keeps its identity"
                );
            }
            let st = src.stats();
            assert_eq!(
                st.cache.misses,
                3 * planes,
                "{name}: imports == pool buffers × planes"
            );
            assert_eq!(st.system_memory_frames, 0);
            assert_eq!(
                src.__layouts_worked_out(),
                1,
                "{name}: one stream, one caps: the layout is worked out once, not per frame"
            );
            assert!(matches!(
                src.next_frame(WAIT),
                Err(CaptureError::Gst(GstError::Eos { .. }))
            ));
        }
        assert_fds_back(before, name);
    }
}

#[test]
fn dma_buf_caps_pass_through_and_a_new_pool_after_a_caps_change_is_imported_anew() {
    use zerocam_capture::gstreamer::prelude::*;
    use zerocam_capture::gstreamer_app::{AppSrc, AppSrcCallbacks};
    let _serial = serial();
    let caps = |w: u32, h: u32| -> zerocam_capture::gstreamer::Caps {
        format!("video/x-raw(memory:DMABuf),format=NV12,width={w},height={h},framerate=30/1")
            .parse()
            .unwrap()
    };
    let (small, large) = (
        dma_buf_pool_of(2, false, 64, 48),
        dma_buf_pool_of(3, false, 128, 96),
    );
    let first = caps(64, 48).to_string();
    let desc = format!("appsrc name=src format=time caps=\"{first}\"");
    let mut src = GstSource::with_setup(&desc, move |pipeline| {
        let src = pipeline
            .by_name("src")
            .unwrap()
            .downcast::<AppSrc>()
            .unwrap();
        let mut sent = 0;
        src.set_callbacks(
            AppSrcCallbacks::builder()
                .need_data(move |src, _| {
                    match sent {
                        0..10 => {
                            let _ = src.push_buffer(small[sent % 2].clone());
                        }
                        10 => {
                            src.set_caps(Some(&caps(128, 96)));
                            {
                                let _ = src.push_buffer(large[0].clone());
                            };
                        }
                        11..20 => {
                            let _ = src.push_buffer(large[sent % 3].clone());
                        }
                        _ => {
                            let _ = src.end_of_stream();
                        }
                    }
                    sent += 1;
                })
                .build(),
        );
        Ok(())
    })
    .unwrap();
    let mut sizes = Vec::new();
    for _ in 0..20 {
        let f = src.next_frame(WAIT).unwrap();
        sizes.push((f.tensor().width().unwrap(), f.tensor().height().unwrap()));
        assert!(
            !f.tensor().is_external(),
            "a dma-buf, through memory:DMABuf caps"
        );
    }
    assert!(sizes[..10].iter().all(|&s| s == (64, 48)), "{sizes:?}");
    assert!(
        sizes[10..].iter().all(|&s| s == (128, 96)),
        "nothing stale: {sizes:?}"
    );
    assert_eq!(
        (src.stream_format().width, src.stream_format().height),
        (128, 96)
    );
    assert_eq!(
        src.stats().cache.misses,
        2 + 3,
        "the new pool imported once per buffer"
    );
}
