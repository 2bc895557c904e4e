//! The pattern source on the host: every format, the frame guard, the import
//! cache's counts, pixel values, pacing and bad arguments.
#![allow(clippy::unwrap_used)] // tests may panic

use std::time::{Duration, Instant};

use zerocam_capture::pattern::{rgb_to_yuv, BARS_RGB};
use zerocam_capture::{
    ArgumentError, CaptureError, CaptureFormat, FrameSource, PatternConfig, PatternSource,
    CAPTURE_FORMATS,
};
use zerocam_tensor::{ColorSpec, PixelFormat, TensorMapTrait, TensorMemory};

const SECOND: Duration = Duration::from_secs(1);

fn source(format: &str, w: u32, h: u32) -> PatternSource {
    PatternSource::new(PatternConfig::new(format.parse().unwrap(), w, h)).unwrap()
}

/// A pattern source of `format` at `w`x`h` with `edit`'s changes to the config.
fn configured(
    format: &str,
    (w, h): (u32, u32),
    edit: impl FnOnce(&mut PatternConfig),
) -> Result<PatternSource, CaptureError> {
    let mut config = PatternConfig::new(format.parse().unwrap(), w, h);
    edit(&mut config);
    PatternSource::new(config)
}

/// The bytes of the next frame's (first) plane.
fn next_bytes(s: &mut PatternSource) -> Vec<u8> {
    let f = s.next_frame(SECOND).unwrap();
    f.tensor().map_read().unwrap().to_vec()
}

#[test]
fn imports_equal_buffers_times_planes_in_every_format() {
    for format in CAPTURE_FORMATS {
        for (w, h) in [(320, 240), (1280, 720)] {
            let mut s = PatternSource::new(PatternConfig::new(format, w, h)).unwrap();
            for _ in 0..50 {
                let f = s.next_frame(SECOND).unwrap();
                assert_eq!(f.tensor().format(), Some(format.pixel), "{}", format.name);
                assert_eq!(
                    (f.tensor().width(), f.tensor().height()),
                    (Some(w as usize), Some(h as usize))
                );
                assert_eq!(f.tensor().memory(), TensorMemory::Shm);
            }
            let st = s.stats();
            let imports = (st.buffers * st.planes) as u64;
            assert_eq!(st.planes, format.memory_planes, "{}", format.name);
            assert_eq!(st.cache.misses, imports, "{} {w}x{h}", format.name);
            assert_eq!(
                st.cache.hits,
                50 * format.memory_planes as u64 - imports,
                "{}",
                format.name
            );
            assert_eq!((st.frames, st.dropped), (50, 0));
        }
    }
}

#[test]
fn a_buffer_keeps_its_identity_frame_after_frame() {
    let mut s = source("NV12M", 64, 32);
    let ids: Vec<u64> = (0..8)
        .map(|_| {
            s.next_frame(SECOND)
                .unwrap()
                .tensor()
                .buffer_identity()
                .id()
        })
        .collect();
    assert_eq!(
        ids[0], ids[4],
        "two frames later... the same buffer, the same identity"
    );
    assert_ne!(ids[0], ids[1]);
}

#[test]
fn holding_every_buffer_is_a_clear_error_not_a_deadlock() {
    let mut s = source("YUYV", 64, 32);
    let held: Vec<_> = (0..3).map(|_| s.next_frame(SECOND).unwrap()).collect();
    let fourth = s.next_frame(SECOND).unwrap();
    let e = s.next_frame(SECOND).unwrap_err();
    assert!(
        matches!(e, CaptureError::NoFreeBuffer { buffers: 4, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("all 4 buffers"), "{e}");
    drop(fourth);
    let again = s.next_frame(SECOND).unwrap();
    assert_eq!(again.buffer_index(), 3);
    drop(held);
}

/// A shared frame's buffer goes back only when both holders are gone
/// (whichever goes last), and the holders see the same buffer.
#[test]
fn a_shared_frame_comes_back_with_its_last_holder() {
    let mut s = source("NV12", 64, 48);
    let held: Vec<_> = (0..3).map(|_| s.next_frame(SECOND).unwrap()).collect();
    for last_is_first in [true, false] {
        let (a, b) = s.next_frame(SECOND).unwrap().share();
        assert_eq!(a.buffer_index(), b.buffer_index());
        assert_eq!(a.tensor().buffer_identity(), b.tensor().buffer_identity());
        assert_eq!(a.sequence(), b.sequence());
        let (first, last) = if last_is_first { (b, a) } else { (a, b) };
        drop(first);
        let e = s.next_frame(SECOND).unwrap_err();
        assert!(matches!(e, CaptureError::NoFreeBuffer { .. }), "{e}");
        drop(last);
        s.next_frame(SECOND).unwrap().release();
    }
    drop(held);
}

#[test]
fn rgb_bars_have_the_exact_colours() {
    let mut s = source("RGB24", 80, 8);
    let f = s.next_frame(SECOND).unwrap(); // frame 0: no scroll; the white line is row 0
    let m = f.tensor().map_read().unwrap();
    let v = m.view().unwrap();
    for (bar, rgb) in BARS_RGB.iter().enumerate() {
        let x = bar * 10 + 5;
        assert_eq!(
            [v[[4, x, 0]], v[[4, x, 1]], v[[4, x, 2]]],
            *rgb,
            "bar {bar}"
        );
    }
    assert_eq!(v[[0, 75, 0]], 255, "the white line");
    assert_eq!(
        f.tensor().row_stride(),
        Some(256),
        "rows padded to 64 bytes"
    );
}

#[test]
fn nv12_bars_are_bt601_limited_range() {
    let mut s = source("NV12", 64, 16);
    let f = s.next_frame(SECOND).unwrap();
    let y = f.tensor().plane(0).unwrap();
    let uv = f.tensor().plane(1).unwrap();
    let (ym, cm) = (y.map_read().unwrap(), uv.map_read().unwrap());
    let (yv, cv) = (ym.view().unwrap(), cm.view().unwrap());
    let red = rgb_to_yuv(BARS_RGB[5]);
    assert_eq!(red, [81, 90, 240]);
    let x = 5 * 8 + 2;
    assert_eq!(yv[[6, x]], red[0]);
    assert_eq!([cv[[3, x]], cv[[3, x + 1]]], [red[1], red[2]]);
    assert_eq!(yv[[6, 2]], 235, "white bar");
    assert_eq!(
        f.color_spec(),
        ColorSpec::BT601_LIMITED,
        "what it is drawn with"
    );
}

#[test]
fn every_frame_says_the_colour_it_is_drawn_with() {
    for format in CAPTURE_FORMATS {
        let mut s = PatternSource::new(PatternConfig::new(format, 64, 16)).unwrap();
        let rgb = matches!(format.pixel, PixelFormat::Rgb | PixelFormat::Bgr);
        // YCbCr (and GREY's luma) from rgb_to_yuv: BT.601 limited; RGB: full range.
        let want = if rgb {
            ColorSpec::BT601_FULL
        } else {
            ColorSpec::BT601_LIMITED
        };
        assert_eq!(s.stream_format().color, want, "{}", format.name);
        for _ in 0..3 {
            assert_eq!(
                s.next_frame(SECOND).unwrap().color_spec(),
                want,
                "{}",
                format.name
            );
        }
    }
}

#[test]
fn the_pattern_moves() {
    let mut s = source("GREY", 64, 16);
    assert_ne!(next_bytes(&mut s), next_bytes(&mut s));
}

#[test]
fn sequence_and_timestamps_advance() {
    let mut s = configured("NV16", (32, 8), |c| c.fps = Some(200.0)).unwrap();
    let start = Instant::now();
    let frames: Vec<_> = (0..3)
        .map(|_| {
            let f = s.next_frame(SECOND).unwrap();
            (f.sequence(), f.timestamp())
        })
        .collect();
    assert!(
        start.elapsed() >= Duration::from_millis(9),
        "paced at 200 fps"
    );
    assert_eq!(frames.iter().map(|f| f.0).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(frames[0].1 < frames[1].1 && frames[1].1 < frames[2].1);
}

#[test]
fn a_timeout_shorter_than_the_frame_interval_times_out() {
    let mut s = configured("GREY", (32, 8), |c| c.fps = Some(1.0)).unwrap();
    s.next_frame(SECOND).unwrap();
    let e = s.next_frame(Duration::from_millis(10)).unwrap_err();
    assert!(matches!(e, CaptureError::Timeout { .. }), "{e}");
    assert!(
        e.to_string().contains("pattern: no frame within 10ms"),
        "{e}"
    );
}

#[test]
fn bad_arguments_are_typed_errors() {
    let nv12: CaptureFormat = "NV12".parse().unwrap();
    let e = configured("NV12", (64, 32), |c| c.buffers = 0).unwrap_err();
    assert!(
        matches!(
            e,
            CaptureError::InvalidArgument(ArgumentError::TooFewBuffers(0))
        ),
        "{e}"
    );
    // A hostile count is refused before a single buffer is allocated.
    let e = configured("NV12", (64, 32), |c| c.buffers = 100_000).unwrap_err();
    assert!(
        matches!(
            e,
            CaptureError::InvalidArgument(ArgumentError::TooManyBuffers(100_000))
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "buffer count 100000 is too large: at most 64 are kept"
    );
    let e = configured("NV12", (63, 32), |_| {}).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the pattern source cannot make NV12 63x32: the chroma subsampling needs even sizes"
    );
    let e = configured("GREY", (65536, 65537), |_| {}).unwrap_err();
    assert!(e.to_string().contains("exceed 4 GiB"), "{e}");
    for fps in [1e-300, -1.0] {
        let e = configured("NV12", (64, 32), |c| c.fps = Some(fps)).unwrap_err();
        assert!(
            matches!(
                e,
                CaptureError::InvalidArgument(ArgumentError::BadFrameRate(_))
            ),
            "{e}"
        );
    }
    let rgba = CaptureFormat {
        pixel: PixelFormat::Rgba,
        ..nv12
    };
    let e = PatternSource::new(PatternConfig::new(rgba, 64, 32)).unwrap_err();
    assert!(matches!(e, CaptureError::UnsupportedFormat { .. }), "{e}");
    assert!(configured("NV12", (0, 32), |_| {}).is_err());
}

#[test]
fn planes_are_exposed_without_a_copy() {
    let mut s = source("NV12M", 64, 32);
    let f = s.next_frame(SECOND).unwrap();
    assert_eq!(f.tensor().format(), Some(PixelFormat::Nv12));
    let uv = f.tensor().plane(1).unwrap();
    assert_eq!(uv.shape(), &[16, 64]);
    assert_ne!(
        f.tensor().plane(0).unwrap().fd_identity(),
        uv.fd_identity(),
        "two memfds"
    );
}

#[test]
fn a_map_of_an_old_frame_keeps_its_buffer_out_of_the_cycle() {
    let mut s = source("RGB24", 64, 16);
    let first = s.next_frame(SECOND).unwrap();
    let kept = first.tensor().clone();
    drop(first);
    let map = kept.map_read().unwrap(); // the caller keeps reading frame 0
    let before = map.to_vec();
    for _ in 0..8 {
        let f = s.next_frame(SECOND).unwrap();
        assert_ne!(f.buffer_index(), 0, "buffer 0 is mapped: not drawn into");
    }
    assert_eq!(map.to_vec(), before, "the mapped bytes did not change");
    drop(map);
    let indices: Vec<_> = (0..4)
        .map(|_| s.next_frame(SECOND).unwrap().buffer_index())
        .collect();
    assert!(
        indices.contains(&0),
        "buffer 0 is back once the map drops: {indices:?}"
    );
}

/// `stamp: true`: every frame of every format carries its own sequence
/// number and capture time (its metadata's), read back from its luma by
/// the stamp's reader; `PatternSource::luma` regenerates the very luma
/// plane from the stamp (what a decoded picture is measured against); a
/// picture too small for a stamp is refused.
#[test]
fn stamped_frames_carry_their_sequence_and_time() {
    use zerocam_capture::pattern::stamp::{read_stamp, Stamp};
    for format in CAPTURE_FORMATS {
        let (w, h) = (320usize, 240usize);
        let mut s = configured(format.name, (w as u32, h as u32), |c| c.stamp = true).unwrap();
        assert!(s.stamps());
        for _ in 0..3 {
            let f = s.next_frame(SECOND).unwrap();
            let want = Stamp::new(f.sequence(), f.timestamp());
            let Some(luma) = s.luma(f.sequence(), Some(&want)) else {
                // RGB: the stamp's blocks black and white in every channel.
                let m = f.tensor().map_read().unwrap();
                let stride = f.tensor().row_stride().unwrap();
                let grey: Vec<u8> = (0..h)
                    .flat_map(|r| (0..w).map(move |x| r * stride + 3 * x))
                    .map(|i| m[i])
                    .collect();
                assert_eq!(read_stamp(&grey, w, h, w), Some(want), "{}", format.name);
                continue;
            };
            assert_eq!(read_stamp(&luma, w, h, w), Some(want), "{}", format.name);
            // The regenerated plane is the frame's own luma, byte for byte.
            // NV12M: the luma's own memfd; else the one buffer, luma first.
            let plane = (format.memory_planes == 2).then(|| f.tensor().plane(0).unwrap());
            let tensor = plane.as_ref().unwrap_or(f.tensor());
            let m = tensor.map_read().unwrap();
            let stride = f.tensor().row_stride().unwrap();
            let step = if matches!(format.pixel, PixelFormat::Yuyv | PixelFormat::Uyvy) {
                2
            } else {
                1
            };
            let first = usize::from(format.pixel == PixelFormat::Uyvy);
            let drawn: Vec<u8> = (0..h)
                .flat_map(|r| (0..w).map(move |x| r * stride + first + step * x))
                .map(|i| m[i])
                .collect();
            assert!(drawn == luma, "{}: regenerated luma differs", format.name);
        }
    }
    // Unstamped frames read as nothing; too small a picture is refused.
    let mut plain = source("NV12", 320, 240);
    let f = plain.next_frame(SECOND).unwrap();
    assert!(!plain.stamps());
    assert_eq!(read_stamp_of(&plain, f.sequence()), None);
    let e = configured("NV12", (62, 48), |c| c.stamp = true).unwrap_err();
    assert!(e.to_string().contains("64x48"), "{e}");
}

/// The stamp read from `s`'s regenerated luma of frame `sequence`, unstamped.
fn read_stamp_of(
    s: &PatternSource,
    sequence: u32,
) -> Option<zerocam_capture::pattern::stamp::Stamp> {
    let luma = s.luma(sequence, None)?;
    zerocam_capture::pattern::stamp::read_stamp(&luma, 320, 240, 320)
}
