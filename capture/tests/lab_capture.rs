//! V4L2 capture on vivid in the kernel lab (`cargo lab-test`): `/dev/video0` is
//! vivid's single-planar capture device, `/dev/video1` its multi-planar one.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod vivid_common;
use vivid_common::{config, frames, lock, open_fds, red_device, MODES, MULTI, SINGLE, WAIT};

use std::collections::BTreeMap;
use std::time::Duration;

use zerocam_capture::v4l2::DriverMinimum;
use zerocam_capture::{
    ArgumentError, BufferMode, CaptureError, CaptureFormat, Device, Frame, FrameSource, Stream,
    StreamConfig, CAPTURE_FORMATS,
};
use zerocam_tensor::{ColorSpec, FdIdentity, PixelFormat, TensorMemory};

/// vivid's "100% Red" with the OSD off, as each format carries it: RGB and BGR
/// at full range; Y'CbCr BT.601 limited (Cr is 239 in vivid's rounding); GREY is
/// vivid's full-range luma.
fn expected_red(pixel: PixelFormat) -> (Vec<u8>, Vec<u8>) {
    match pixel {
        PixelFormat::Rgb => (vec![255, 0, 0], vec![]),
        PixelFormat::Bgr => (vec![0, 0, 255], vec![]),
        PixelFormat::Grey => (vec![54], vec![]),
        PixelFormat::Yuyv => (vec![81, 90, 81, 239], vec![]),
        PixelFormat::Uyvy => (vec![90, 81, 239, 81], vec![]),
        _ => (vec![81], vec![90, 239]),
    }
}

/// Checks that rows 0, the middle and the last of every plane hold the
/// colour, and that the frame says so: vivid's default colorimetry (sRGB,
/// encoding and quantization "default") is BT.601, limited for YCbCr and GREY,
/// full for RGB.
fn check_red(frame: &Frame, what: &str) {
    let t = frame.tensor();
    let (luma, chroma) = expected_red(t.format().unwrap());
    let rgb = matches!(t.format(), Some(PixelFormat::Rgb | PixelFormat::Bgr));
    let want = if rgb {
        ColorSpec::BT601_FULL
    } else {
        ColorSpec::BT601_LIMITED
    };
    assert_eq!(frame.color_spec(), want, "{what}: vivid's default colour");
    for p in 0..t.plane_count() {
        let plane = t.plane(p).unwrap();
        let want = if p == 0 { &luma } else { &chroma };
        let (rows, row) = (plane.shape()[0], plane.shape()[1]);
        let stride = plane.strides().unwrap()[0];
        let m = plane.map_read().unwrap();
        for r in [0, rows / 2, rows - 1] {
            let line = &m[r * stride..r * stride + row];
            for (i, px) in line.chunks(want.len()).enumerate().step_by(37) {
                assert_eq!(px, &want[..], "{what}: plane {p} row {r} sample {i}");
            }
        }
    }
}

fn open_red(path: &str, format: CaptureFormat, w: u32, h: u32) -> Device {
    let mut d = red_device(path);
    let got = d.set_format(format, w, h).unwrap();
    assert_eq!((got.width, got.height, got.format), (w, h, format));
    d.set_frame_rate(60.0).unwrap();
    d
}

fn offered(path: &str) -> Vec<CaptureFormat> {
    let d = Device::open(path).unwrap();
    let offered: Vec<_> = d
        .formats()
        .unwrap()
        .into_iter()
        .filter_map(|f| f.capture)
        .collect();
    CAPTURE_FORMATS
        .into_iter()
        .filter(|f| offered.contains(f))
        .collect()
}

const FRAMES: u64 = 300;

/// Every zerocam format vivid offers on `path`, at two sizes, in both buffer
/// modes, 300 frames each: pixels, and imports == buffers x planes.
fn formats_sizes_modes(path: &str) -> Vec<String> {
    let _g = lock(path);
    let mut ran = Vec::new();
    for format in offered(path) {
        for (w, h) in [(320, 180), (640, 480)] {
            for &mode in MODES {
                let what = format!("{path} {} {w}x{h} {}", format.name, mode.name());
                let d = open_red(path, format, w, h);
                let mut s = Stream::new(d, config(|c| c.mode = mode)).unwrap();
                let mut ids = std::collections::HashSet::new();
                for n in 0..FRAMES {
                    let f = s.next_frame(WAIT).unwrap();
                    if n % 50 == 0 {
                        check_red(&f, &what);
                    }
                    assert_eq!(
                        f.tensor().memory(),
                        TensorMemory::Dma,
                        "{what}: frames are dma-bufs"
                    );
                    ids.insert(f.tensor().buffer_identity().id());
                }
                let st = s.stats();
                let imports = (st.buffers * st.planes) as u64;
                assert_eq!(st.planes, format.memory_planes, "{what}");
                assert_eq!(
                    st.cache.misses, imports,
                    "{what}: each buffer plane imported once"
                );
                assert_eq!(st.cache.hits, FRAMES * st.planes as u64 - imports, "{what}");
                assert_eq!(ids.len(), st.buffers, "{what}: one identity per buffer");
                assert_eq!(st.frames, FRAMES);
                ran.push(format!("{what}: dropped {}", st.dropped));
            }
        }
    }
    ran
}

#[test]
fn lab_capture_every_format_size_and_mode_single_planar() {
    let ran = formats_sizes_modes(SINGLE);
    println!("{}", ran.join("\n"));
    assert!(ran.len() >= 6 * 4, "{ran:?}");
}

#[test]
fn lab_capture_every_format_size_and_mode_multi_planar() {
    let ran = formats_sizes_modes(MULTI);
    println!("{}", ran.join("\n"));
    assert!(ran.iter().any(|r| r.contains("NV12M")) && ran.iter().any(|r| r.contains("NV16M")));
}

#[test]
fn lab_capture_hold_n_minus_one_frames_and_all_n() {
    let _g = lock(MULTI);
    let d = open_red(MULTI, "NV12M".parse().unwrap(), 320, 180);
    let mut s = Stream::new(d, config(|c| c.buffers = 4)).unwrap();
    let held: Vec<_> = (0..3).map(|_| s.next_frame(WAIT).unwrap()).collect();
    frames(&mut s, 20); // capture goes on with one buffer
    let last = s.next_frame(WAIT).unwrap();
    let e = s.next_frame(WAIT).unwrap_err();
    assert!(
        matches!(e, CaptureError::NoFreeBuffer { buffers: 4, .. }),
        "{e}"
    );
    drop(last);
    drop(held);
    frames(&mut s, 8);
}

/// Frames of `n` buffers' worth: (buffer index → (identity, file)) seen.
fn identities(s: &mut Stream, frames: usize) -> BTreeMap<usize, (u64, FdIdentity)> {
    (0..frames)
        .map(|_| {
            let f = s.next_frame(WAIT).unwrap();
            let t = f.tensor();
            (
                f.buffer_index(),
                (t.buffer_identity().id(), t.fd_identity().unwrap()),
            )
        })
        .collect()
}

#[test]
fn lab_capture_stop_start_keeps_imports_and_a_format_change_reimports() {
    let _g = lock(SINGLE);
    let d = open_red(SINGLE, "NV12".parse().unwrap(), 320, 180);
    let mut s = Stream::new(d, StreamConfig::default()).unwrap();
    let before = identities(&mut s, 12);
    let b = s.stats().buffers as u64;
    assert_eq!(before.len() as u64, b, "every buffer came round");
    assert_eq!(s.stats().cache.misses, b);
    for round in 0..2 {
        s.stop().unwrap();
        assert_eq!(s.stats().cache.live as u64, b, "stop keeps the imports");
        assert!(matches!(
            s.next_frame(WAIT),
            Err(CaptureError::NotStreaming { .. })
        ));
        s.start().unwrap();
        let after = identities(&mut s, 12);
        assert_eq!(after, before, "round {round}: same tensors, same files");
        let st = s.stats();
        assert_eq!(
            (st.cache.misses, st.cache.invalidated),
            (b, 0),
            "round {round}: no new import"
        );
    }

    let mut d = s.into_device().unwrap();
    d.set_format("YUYV".parse().unwrap(), 640, 480).unwrap();
    let mut s = Stream::new(d, config(|c| c.buffers = 3)).unwrap();
    for _ in 0..9 {
        let f = s.next_frame(WAIT).unwrap();
        check_red(&f, "after the format change");
    }
    assert_eq!(s.stats().cache.misses, s.stats().buffers as u64);
}

#[test]
fn lab_capture_dmabuf_pool_survives_stop_start() {
    let _g = lock(MULTI);
    let d = open_red(MULTI, "NV12M".parse().unwrap(), 320, 180);
    let mut s = Stream::new(d, config(|c| c.mode = BufferMode::DmaBuf)).unwrap();
    let before = identities(&mut s, 8);
    let imports = s.stats().cache.misses;
    assert_eq!(imports, 2 * s.stats().buffers as u64, "NV12M: two planes");
    s.stop().unwrap();
    s.start().unwrap();
    assert_eq!(identities(&mut s, 8), before, "the same pool buffers");
    assert_eq!(s.stats().cache.misses, imports, "no new import");
}

/// vivid has no `V4L2_CID_MIN_BUFFERS_FOR_CAPTURE`: 1 is assumed and the
/// count is `max(buffers, 1 + hold)`; the caller then holds `hold` frames
/// while capture goes on.
#[test]
fn lab_capture_buffer_count_from_the_hold_and_the_driver_minimum() {
    let _g = lock(MULTI);
    for (buffers, hold) in [(2, 1), (4, 1), (2, 5)] {
        let d = open_red(MULTI, "NV12".parse().unwrap(), 320, 180);
        let mut s = Stream::new(
            d,
            config(|c| {
                c.buffers = buffers;
                c.hold = hold;
            }),
        )
        .unwrap();
        let plan = s.buffer_plan();
        println!("buffers {buffers} hold {hold}: {plan}");
        assert_eq!(plan.driver, DriverMinimum::Absent, "{plan}");
        assert_eq!(plan.requested, buffers.max(1 + hold), "{plan}");
        assert!(plan.granted >= plan.needed(), "{plan}");
        assert_eq!(s.stats().buffers, plan.granted as usize, "{plan}");
        assert!(plan
            .to_string()
            .contains("no V4L2_CID_MIN_BUFFERS_FOR_CAPTURE"));
        let held: Vec<_> = (0..hold).map(|_| s.next_frame(WAIT).unwrap()).collect();
        frames(&mut s, 6); // capture goes on while `hold` are held
        drop(held);
    }
    let d = Device::open(MULTI).unwrap();
    let e = Stream::new(d, config(|c| c.hold = 0)).unwrap_err();
    assert!(
        matches!(
            e.error,
            CaptureError::InvalidArgument(ArgumentError::ZeroHold)
        ),
        "{e}"
    );
    // The device came back: it streams.
    let mut s = Stream::new(*e.device, StreamConfig::default()).unwrap();
    s.next_frame(WAIT).unwrap();
}

/// A failed `Stream::new` gives the device back with its buffers freed: the
/// caller retries in another buffer mode on the same open device.
#[test]
fn lab_capture_a_failed_stream_gives_the_device_back() {
    let _g = lock(SINGLE); // no other test's fds come or go meanwhile
    let _g2 = lock(MULTI);
    let before = open_fds();
    let d = open_red(MULTI, "NV12M".parse().unwrap(), 320, 180);
    let e = Stream::new(
        d,
        config(|c| {
            c.mode = BufferMode::DmaBuf;
            c.dma_heap = Some("no-such-heap".into());
        }),
    )
    .unwrap_err();
    assert!(
        matches!(
            e.error,
            CaptureError::UnsupportedMode { mode: "dmabuf", .. }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("no-such-heap"), "{e}");
    // MMAP on the device that came back, after a DMABUF REQBUFS: the pool
    // buffers allocated before the failure are gone, the driver's freed.
    let mut s = Stream::new(*e.device, StreamConfig::default()).unwrap();
    for _ in 0..8 {
        check_red(&s.next_frame(WAIT).unwrap(), "MMAP after a failed DMABUF");
    }
    drop(s);
    assert_eq!(open_fds(), before, "nothing of the failed stream is left");
}

#[test]
fn lab_capture_fd_count_after_close_equals_before_open() {
    let _g = lock(SINGLE);
    let _g2 = lock(MULTI);
    // Warm up process-wide fds (the DMA heap device stays open once used).
    if MODES.contains(&BufferMode::DmaBuf) {
        drop(zerocam_tensor::Tensor::<u8>::new(&[64], Some(TensorMemory::Dma), None).unwrap());
    }
    let before = open_fds();
    for (path, format) in [(SINGLE, "NV12"), (MULTI, "NV12M"), (MULTI, "RGB24")] {
        for &mode in MODES {
            let d = open_red(path, format.parse().unwrap(), 320, 180);
            let mut s = Stream::new(d, config(|c| c.mode = mode)).unwrap();
            let held = s.next_frame(WAIT).unwrap();
            frames(&mut s, 10);
            drop(s); // a frame outlives its stream...
            drop(held); // ...and the last of them closes everything
        }
    }
    assert_eq!(open_fds(), before);
}

#[test]
fn lab_capture_bad_input_is_typed() {
    let _g = lock(SINGLE);
    let mut d = Device::open(SINGLE).unwrap();
    let e = d
        .set_format("NV12M".parse().unwrap(), 640, 480)
        .unwrap_err();
    assert!(matches!(e, CaptureError::UnsupportedFormat { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("/dev/video0: format NM12 is not supported"),
        "{e}"
    );
    assert!(
        e.to_string().contains("NV12"),
        "the message lists what is offered: {e}"
    );

    let e = d
        .set_format("NV12".parse().unwrap(), 1000, 500)
        .unwrap_err();
    assert!(
        matches!(
            e,
            CaptureError::UnsupportedSize {
                width: 1000,
                height: 500,
                ..
            }
        ),
        "{e}"
    );

    let e = Stream::new(d, config(|c| c.buffers = 0)).unwrap_err();
    assert!(
        matches!(
            e.error,
            CaptureError::InvalidArgument(ArgumentError::TooFewBuffers(0))
        ),
        "{e}"
    );

    let mut d = *e.device; // the device comes back with the error
    d.set_format("GREY".parse().unwrap(), 320, 180).unwrap();
    d.set_frame_rate(1.0).unwrap();
    let mut s = Stream::new(d, StreamConfig::default()).unwrap();
    drop(s.next_frame(WAIT).unwrap()); // vivid delivers the first frame at once
    let e = s.next_frame(Duration::from_millis(20)).unwrap_err();
    assert!(matches!(e, CaptureError::Timeout { .. }), "{e}");
    assert!(
        e.to_string().contains("/dev/video0: no frame within 20ms"),
        "{e}"
    );

    let e = Device::open("/dev/dri/renderD128").unwrap_err();
    assert!(
        matches!(e, CaptureError::NotV4l2 { .. }),
        "vgem is no camera: {e}"
    );
    let e = Device::open("/dev/video77").unwrap_err();
    assert!(matches!(e, CaptureError::NoDevice { .. }), "{e}");
}

#[test]
fn lab_capture_enumerates_the_device() {
    let _g = lock(MULTI);
    let d = Device::open(MULTI).unwrap();
    assert_eq!(d.info().driver, "vivid");
    assert_eq!(d.info().api, zerocam_capture::v4l2::BufferApi::MultiPlanar);
    assert_eq!(
        Device::open(SINGLE).unwrap().info().api,
        zerocam_capture::v4l2::BufferApi::SinglePlanar
    );
    let nv12 = zerocam_capture::FourCc(*b"NV12");
    match d.frame_sizes(nv12).unwrap() {
        zerocam_capture::v4l2::FrameSizes::Discrete(sizes) => assert!(sizes.contains(&(640, 480))),
        other => panic!("vivid's webcam input has discrete sizes, got {other:?}"),
    }
    let ivals = d.frame_intervals(nv12, 640, 480).unwrap();
    assert!(ivals.iter().any(|i| i.fps() >= 60.0), "{ivals:?}");
    assert!(d
        .controls()
        .unwrap()
        .iter()
        .any(|c| c.name == "Test Pattern"));
}

#[test]
fn lab_capture_a_mapped_buffer_is_not_queued_and_a_queued_one_not_mapped() {
    let _g = lock(SINGLE);
    let mut d = Device::open(SINGLE).unwrap();
    d.set_menu("OSD Text Mode", "All").unwrap(); // counters: every frame differs
    d.set_format("GREY".parse().unwrap(), 320, 180).unwrap();
    d.set_frame_rate(60.0).unwrap();
    let mut s = Stream::new(d, StreamConfig::default()).unwrap();
    let first = s.next_frame(WAIT).unwrap();
    let (kept, index) = (first.tensor().clone(), first.buffer_index());
    let map = kept.map_read().unwrap();
    let before = map.to_vec();
    drop(first); // its buffer waits: the map is alive
    for _ in 0..12 {
        assert_ne!(s.next_frame(WAIT).unwrap().buffer_index(), index);
    }
    assert_eq!(map.to_vec(), before, "no DMA under a live map");
    drop(map);
    let seen: Vec<_> = (0..8)
        .map(|_| s.next_frame(WAIT).unwrap().buffer_index())
        .collect();
    assert!(
        seen.contains(&index),
        "queued again once unmapped: {seen:?}"
    );

    let f = s.next_frame(WAIT).unwrap();
    let clone = f.tensor().clone();
    drop(f); // queued to the driver again
    let e = clone.map_read().unwrap_err();
    assert!(
        matches!(e, zerocam_tensor::Error::MapConflict { .. }),
        "{e}"
    );
}

#[test]
fn lab_capture_into_device_hands_the_stream_back_while_frames_are_held() {
    let _g = lock(MULTI);
    let d = open_red(MULTI, "NV12".parse().unwrap(), 320, 180);
    let mut s = Stream::new(d, StreamConfig::default()).unwrap();
    let held = s.next_frame(WAIT).unwrap();
    let err = s.into_device().unwrap_err();
    assert!(
        matches!(err.error, CaptureError::FramesHeld { held: 1, .. }),
        "{}",
        err.error
    );
    let mut s = err.stream.expect("the stream comes back");
    s.next_frame(WAIT).unwrap();
    drop(held);
    let d = s.into_device().unwrap();
    assert_eq!(d.info().driver, "vivid");
}

/// On the arm64 lab, whose kernel has no DMA heap: `dmabuf` mode, which
/// allocates its buffers from one, is refused with a typed error naming the
/// mode and the heaps looked for, and the device is given back, streaming in
/// `mmap` mode at once.
#[cfg(target_arch = "aarch64")]
#[test]
fn lab_capture_dmabuf_mode_without_a_heap_is_a_typed_error() {
    let _g = lock(MULTI);
    assert!(zerocam_tensor::dma_heaps().is_empty());
    let d = open_red(MULTI, "NV12M".parse().unwrap(), 320, 180);
    let e = Stream::new(d, config(|c| c.mode = BufferMode::DmaBuf)).unwrap_err();
    let msg = e.error.to_string();
    assert!(
        matches!(&e.error, CaptureError::UnsupportedMode { mode: "dmabuf", reason, .. }
            if reason.contains("no DMA heap is available")),
        "{msg}"
    );
    let mut s = Stream::new(*e.device, config(|c| c.mode = BufferMode::Mmap)).unwrap();
    frames(&mut s, 5);
    assert_eq!(s.stats().cache.misses, (s.stats().buffers * 2) as u64);
}
