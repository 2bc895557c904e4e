//! libcamera capture on libcamera 0.4.0's virtual camera `Virtual0` (640x480
//! NV12 colour bars, config written by the lab at boot). Built against the
//! guest root's libcamera by `tests/lab/libcamera-build`, run in the VM by
//! `tests/lab/test-all` (see docs/testing.md).
#![cfg(all(feature = "lab", feature = "libcamera"))]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod libcamera_common;

use libcamera_common::{fd_count, frames, lock, nv12, CAMERA, WAIT};

use std::collections::HashMap;
use std::time::Duration;

use zerocam_capture::{
    libcamera_cameras, ArgumentError, CaptureError, Frame, FrameSource, LibcameraConfig,
    LibcameraSource, Synthesized,
};
use zerocam_tensor::ColorSpec;

const FRAMES: usize = 120;
/// The virtual camera's eight bars, left to right (luma; BT.601 limited range of
/// white, yellow, cyan, green, magenta, red, blue, black).
const BARS_Y: [u8; 8] = [235, 210, 169, 144, 107, 82, 41, 16];

/// The luma values of row `row`.
fn luma_row(frame: &Frame, row: usize) -> Vec<u8> {
    let y = frame.tensor().plane(0).unwrap();
    let (width, stride) = (y.shape()[1], y.strides().unwrap()[0]);
    y.map_read().unwrap()[row * stride..][..width].to_vec()
}

/// The luma values of row `row`, runs of at least 8 equal pixels collapsed.
fn bars(frame: &Frame, row: usize) -> Vec<u8> {
    let line = luma_row(frame, row);
    let mut runs: Vec<(u8, usize)> = Vec::new();
    for v in line {
        match runs.last_mut() {
            Some((last, n)) if last.abs_diff(v) <= 2 => *n += 1,
            _ => runs.push((v, 1)),
        }
    }
    let mut bars: Vec<u8> = runs
        .into_iter()
        .filter(|&(_, n)| n >= 8)
        .map(|(v, _)| v)
        .collect();
    // The pattern scrolls left: a bar cut at the right edge goes on at the left.
    if bars.len() > 1 && bars.first().unwrap().abs_diff(*bars.last().unwrap()) <= 2 {
        bars.pop();
    }
    bars
}

/// The middle column of the longest white run (luma 235 ± 2, at least 8
/// pixels) of row `row`.
fn white_column(frame: &Frame, row: usize) -> Option<usize> {
    let line = luma_row(frame, row);
    let mut best: Option<(usize, usize)> = None; // (start, length)
    let mut start = None;
    for (x, &v) in line.iter().chain([&0]).enumerate() {
        match (v.abs_diff(BARS_Y[0]) <= 2, start) {
            (true, None) => start = Some(x),
            (false, Some(s)) => {
                if best.is_none_or(|(_, n)| x - s > n) {
                    best = Some((s, x - s));
                }
                start = None;
            }
            _ => {}
        }
    }
    best.filter(|&(_, n)| n >= 8).map(|(s, n)| s + n / 2)
}

/// Whether `got` is `BARS_Y` or a rotation of it (the pattern scrolls), ±2.
fn is_bars(got: &[u8]) -> bool {
    got.len() == BARS_Y.len()
        && (0..BARS_Y.len()).any(|r| {
            got.iter()
                .zip(BARS_Y.iter().cycle().skip(r))
                .all(|(a, b)| a.abs_diff(*b) <= 2)
        })
}

#[test]
fn lab_libcamera_lists_the_virtual_camera() {
    let _g = lock();
    let cameras = libcamera_cameras().unwrap();
    let cam = cameras.iter().find(|c| c.id == CAMERA);
    let cam = cam.unwrap_or_else(|| panic!("no {CAMERA} in {cameras:?}"));
    assert_eq!(cam.model.as_deref(), Some("Virtual Video Device"));
    assert_eq!(cam.location.as_deref(), Some("front"));
    let nv12 = cam.formats.iter().find(|f| f.name == "NV12");
    let nv12 = nv12.unwrap_or_else(|| panic!("no NV12 in {:?}", cam.formats));
    assert_eq!(nv12.capture.map(|c| c.name), Some("NV12"));
    assert!(nv12.min.0 <= 640 && nv12.max.0 >= 640, "{nv12:?}");
    assert!(
        nv12.sizes.contains(&(640, 480)) || nv12.max >= (640, 480),
        "{nv12:?}"
    );
}

#[test]
fn lab_libcamera_nv12_frames_are_the_bars_imported_once_per_buffer() {
    let _g = lock();
    let before = fd_count();
    {
        let mut cam = LibcameraSource::open(nv12(640, 480)).unwrap();
        assert_eq!(cam.name().to_str(), Some("libcamera:Virtual0"));
        let f = cam.stream_format().clone();
        assert_eq!((f.format.name, f.width, f.height), ("NV12", 640, 480));
        assert_eq!(f.planes.len(), 1, "NV12 in one dma-buf: {f:?}");
        // The bars' luma (BARS_Y) is BT.601 limited range: the spec the
        // stream says its frames are read with.
        assert_eq!(f.color, ColorSpec::BT601_LIMITED, "{f:?}");
        let buffers = cam.stats().buffers;
        assert!(buffers >= 4, "{buffers} buffers");
        let mut ids: HashMap<usize, u64> = HashMap::new();
        let mut last_ts = Duration::ZERO;
        let t0 = std::time::Instant::now();
        for i in 0..FRAMES {
            let frame = cam.next_frame(WAIT).unwrap();
            let t = frame.tensor();
            assert_eq!(t.shape(), &[720, 640]);
            assert_eq!(frame.color_spec(), f.color);
            let id = *ids
                .entry(frame.buffer_index())
                .or_insert(t.buffer_identity().id());
            assert_eq!(t.buffer_identity().id(), id, "frame {i}: a cache hit");
            // libcamera 0.4.0's virtual camera writes no frame metadata, but
            // the request's SensorTimestamp: sequence and bytes_used are ours.
            assert_eq!(
                frame.synthesized(),
                Synthesized {
                    sequence: true,
                    timestamp: false,
                    bytes_used: true
                }
            );
            assert_eq!(frame.sequence(), i as u32);
            assert!(
                frame.timestamp() > last_ts,
                "frame {i}: timestamps increase"
            );
            last_ts = frame.timestamp();
            let now: Duration = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
                .unwrap()
                .into();
            assert!(
                last_ts <= now && now - last_ts < Duration::from_secs(5),
                "frame {i}: the sensor timestamp {last_ts:?} is CLOCK_MONOTONIC (now {now:?})"
            );
            assert_eq!(frame.bytes_used(), 640 * 480 * 3 / 2);
            if i % 40 == 0 {
                for row in [0, 240, 479] {
                    let got = bars(&frame, row);
                    assert!(is_bars(&got), "frame {i} row {row}: luma bars {got:?}");
                }
                // Chroma row 0 (luma rows 0 and 1) under the white bar: Cb, Cr 128.
                let x = white_column(&frame, 0)
                    .unwrap_or_else(|| panic!("frame {i}: no white run on row 0"));
                let uv = t.plane(1).unwrap();
                assert_eq!(uv.shape(), &[240, 640]);
                let m = uv.map_read().unwrap();
                let (cb, cr) = (m[x / 2 * 2], m[x / 2 * 2 + 1]);
                assert!(
                    cb.abs_diff(128) <= 2 && cr.abs_diff(128) <= 2,
                    "frame {i}: white chroma at column {x}: Cb {cb} Cr {cr}"
                );
            }
        }
        let elapsed = t0.elapsed();
        let s = cam.stats();
        println!(
            "{FRAMES} frames from {buffers} buffers in {elapsed:?} ({:.1} fps): {:?}",
            FRAMES as f64 / elapsed.as_secs_f64(),
            s.cache
        );
        assert_eq!(s.frames, FRAMES as u64);
        assert_eq!(
            s.cache.misses, buffers as u64,
            "imports == buffers x 1 dma-buf"
        );
        assert_eq!(s.cache.hits, (FRAMES - buffers) as u64);
        assert_eq!(ids.len(), buffers);
    }
    assert_eq!(fd_count(), before, "fds after close == before open");
}

#[test]
fn lab_libcamera_stop_start_and_reconfigure_invalidate_the_cache() {
    let _g = lock();
    let before = fd_count();
    {
        let mut cam = LibcameraSource::open(nv12(640, 480)).unwrap();
        let b = cam.stats().buffers as u64;
        frames(&mut cam, 10);
        let held = cam.next_frame(WAIT).unwrap();
        cam.stop().unwrap();
        let s = cam.stats();
        assert_eq!((s.cache.misses, s.cache.live), (b, 0));
        assert_eq!(s.cache.invalidated, b);
        assert!(matches!(
            cam.next_frame(WAIT),
            Err(CaptureError::NotStreaming { .. })
        ));
        // The held frame stays valid memory after the stop.
        assert!(is_bars(&bars(&held, 100)));
        drop(held);
        cam.start().unwrap();
        for i in 0..10 {
            let f = cam.next_frame(WAIT).unwrap();
            assert_eq!(f.sequence(), i, "the count restarts");
        }
        assert_eq!(
            cam.stats().cache.misses,
            2 * b,
            "every buffer imported again"
        );

        let held = cam.next_frame(WAIT).unwrap();
        let six = LibcameraConfig {
            buffers: 6,
            ..nv12(640, 480)
        };
        assert!(matches!(
            cam.reconfigure(six.clone()),
            Err(CaptureError::FramesHeld { held: 1, .. })
        ));
        drop(held);
        cam.reconfigure(six).unwrap();
        // The virtual camera runs 640x480 only, and 4 buffers whatever is
        // asked: libcamera says so, and new buffers are new dma-bufs anyway.
        let b6 = cam.stats().buffers as u64;
        if b6 != 6 {
            assert_eq!(cam.adjustments(), [format!("buffers 6 -> {b6}")]);
        }
        frames(&mut cam, 20);
        let s = cam.stats();
        assert_eq!(
            s.cache.misses,
            2 * b + b6,
            "a reconfigure imports its buffers"
        );
        assert!(s.cache.invalidated >= 2 * b);
    }
    assert_eq!(fd_count(), before);
}

#[test]
fn lab_libcamera_holding_every_buffer_is_no_free_buffer() {
    let _g = lock();
    let mut cam = LibcameraSource::open(nv12(640, 480)).unwrap();
    let n = cam.stats().buffers;
    let held: Vec<Frame> = (0..n).map(|_| cam.next_frame(WAIT).unwrap()).collect();
    assert!(matches!(
        cam.next_frame(WAIT),
        Err(CaptureError::NoFreeBuffer { buffers, .. }) if buffers == n
    ));
    drop(held);
    cam.next_frame(WAIT).unwrap();
}

#[test]
fn lab_libcamera_bad_input_is_typed_and_leaks_nothing() {
    let _g = lock();
    // Warm up: the libcamera thread and libcamera's own process-wide state.
    drop(libcamera_cameras().unwrap());
    let before = fd_count();
    for _ in 0..3 {
        let e = LibcameraSource::open(LibcameraConfig {
            camera: Some("NoSuchCamera".into()),
            ..nv12(640, 480)
        })
        .unwrap_err();
        match &e {
            CaptureError::UnknownCamera { id, available } => {
                assert_eq!(id, "NoSuchCamera");
                assert!(available.contains(CAMERA), "{e}");
            }
            other => panic!("unknown camera: {other}"),
        }

        let e = LibcameraSource::open(nv12(1000, 1002)).unwrap_err();
        assert!(
            matches!(&e, CaptureError::ConfigAdjusted { asked, got, .. }
                if asked.contains("1000x1002") && !got.contains("1000x1002")),
            "adjusted size: {e}"
        );
        let e = LibcameraSource::open(LibcameraConfig {
            camera: Some(CAMERA.into()),
            ..LibcameraConfig::new("YUYV".parse().unwrap(), 640, 480)
        })
        .unwrap_err();
        assert!(
            matches!(&e, CaptureError::ConfigAdjusted { got, .. } if got.starts_with("NV12")),
            "adjusted format: {e}"
        );

        let e = LibcameraSource::open(LibcameraConfig {
            buffers: 1,
            ..nv12(640, 480)
        });
        assert!(matches!(
            e,
            Err(CaptureError::InvalidArgument(ArgumentError::TooFewBuffers(
                1
            )))
        ));

        let first = LibcameraSource::open(nv12(640, 480)).unwrap();
        let e = LibcameraSource::open(nv12(640, 480)).unwrap_err();
        assert!(
            matches!(
                &e,
                CaptureError::Libcamera {
                    operation: "acquire",
                    ..
                }
            ),
            "camera in use: {e}"
        );
        drop(first);
    }
    assert_eq!(fd_count(), before, "no fd growth over the error paths");
}

#[test]
fn lab_libcamera_accepting_an_adjustment_runs_what_libcamera_chose() {
    let _g = lock();
    let mut cam = LibcameraSource::open(LibcameraConfig {
        accept_adjusted: true,
        ..nv12(1000, 1002)
    })
    .unwrap();
    assert!(
        cam.adjustments()
            .iter()
            .any(|a| a.starts_with("size 1000x1002 -> ")),
        "{:?}",
        cam.adjustments()
    );
    let f = cam.stream_format().clone();
    let frame = cam.next_frame(WAIT).unwrap();
    assert_eq!(
        frame.tensor().shape(),
        &[f.height as usize * 3 / 2, f.width as usize]
    );
}
