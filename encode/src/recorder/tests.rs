//! The recorder on the pattern source, its files read back by ffprobe.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use zerocam_capture::{FrameSource, PatternConfig, PatternSource};

use super::*;

/// ffprobe's view of `path`'s video stream: codec, width, height, frames
/// read, duration in seconds.
pub(crate) fn probe(path: &Path) -> (String, u64, u64, u64, f64) {
    let p = zerocam_test_support::media::ffprobe(path);
    (p.codec, p.width, p.height, p.frames, p.duration)
}

fn pattern(format: &str, fps: Option<f64>) -> PatternSource {
    PatternSource::new(PatternConfig {
        fps,
        ..PatternConfig::new(format.parse().unwrap(), 320, 240)
    })
    .unwrap()
}

fn record(path: &Path, format: &str, frames: usize, fps: Option<f64>) -> RecorderStats {
    let mut source = pattern(format, fps);
    let mut rec = Recorder::create(
        path,
        RecorderConfig {
            encoder: EncoderChoice::Software,
            gop: Some(10),
            ..RecorderConfig::default()
        },
    )
    .unwrap();
    for _ in 0..frames {
        rec.write(source.next_frame(Duration::from_secs(1)).unwrap())
            .unwrap();
    }
    rec.finish().unwrap()
}

#[test]
fn an_mp4_of_every_frame_timed_by_the_frames() {
    let dir = tempdir();
    let path = dir.join("clip.mp4");
    let stats = record(&path, "NV12", 30, Some(60.0));
    assert_eq!((stats.frames, stats.samples), (30, 30));
    assert_eq!(
        stats.encoder.copied_frames, 30,
        "NV12's chroma split is a copy"
    );
    assert!(stats.finished && stats.bytes == std::fs::metadata(&path).unwrap().len());
    let (codec, w, h, n, duration) = probe(&path);
    assert_eq!((codec.as_str(), w, h, n), ("h264", 320, 240, 30));
    assert!(
        (duration - 0.5).abs() < 0.1,
        "30 frames at 60 fps: {duration} s"
    );
}

#[test]
fn yuyv_grey_and_annex_b_record_too() {
    let dir = tempdir();
    for (format, copies) in [("YUYV", 12), ("GREY", 0), ("NV16", 12)] {
        let path = dir.join(format!("{format}.h264"));
        let stats = record(&path, format, 12, None);
        assert_eq!(stats.encoder.copied_frames, copies, "{format}");
        let (codec, w, h, n, _) = probe(&path);
        assert_eq!(
            (codec.as_str(), w, h, n),
            ("h264", 320, 240, 12),
            "{format}"
        );
    }
}

#[test]
fn a_wrong_extension_creates_nothing_and_no_frame_leaves_no_file() {
    let dir = tempdir();
    let avi = dir.join("clip.avi");
    let e = Recorder::create(&avi, RecorderConfig::default()).unwrap_err();
    assert!(matches!(e, EncodeError::Extension { .. }), "{e}");
    assert!(!avi.exists());
    let mp4 = dir.join("none.mp4");
    let mut rec = Recorder::create(&mp4, RecorderConfig::default()).unwrap();
    assert!(mp4.exists());
    assert_eq!(rec.finish().unwrap().frames, 0);
    assert!(!mp4.exists());
    let e = Recorder::create(dir.join("no/such/dir.mp4"), RecorderConfig::default());
    assert!(matches!(e, Err(EncodeError::Io { .. })));
}

#[test]
fn a_write_after_an_encoder_error_is_refused_and_the_file_plays_to_it() {
    let dir = tempdir();
    let path = dir.join("cut.mp4");
    let software = RecorderConfig {
        encoder: EncoderChoice::Software,
        ..RecorderConfig::default()
    };
    let mut rec = Recorder::create(&path, software).unwrap();
    let mut small = pattern("NV12", None);
    for _ in 0..5 {
        rec.write(small.next_frame(Duration::from_secs(1)).unwrap())
            .unwrap();
    }
    // A frame of another size: the encoder refuses, the file is closed.
    let mut big =
        PatternSource::new(PatternConfig::new("NV12".parse().unwrap(), 640, 480)).unwrap();
    let e = rec.write(big.next_frame(Duration::from_secs(1)).unwrap());
    assert!(matches!(e, Err(EncodeError::Software(_))), "{e:?}");
    let again = rec.write(small.next_frame(Duration::from_secs(1)).unwrap());
    assert!(matches!(again, Err(EncodeError::Container(_))));
    assert!(rec.finish().unwrap().finished);
    assert_eq!(probe(&path).3, 5);
}

/// A fresh directory under the target's tmp (removed by the next run).
fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "zerocam-recorder-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[cfg(feature = "gstreamer")]
#[test]
fn gstreamer_x264enc_records_an_mp4_too() {
    let dir = tempdir();
    let path = dir.join("x264.mp4");
    let mut source = pattern("NV12", Some(30.0));
    let mut rec = Recorder::create(
        &path,
        RecorderConfig {
            encoder: EncoderChoice::Gst("x264enc".into()),
            ..RecorderConfig::default()
        },
    )
    .unwrap();
    for _ in 0..20 {
        rec.write(source.next_frame(Duration::from_secs(1)).unwrap())
            .unwrap();
    }
    assert!(rec.describe().contains("x264enc"), "{}", rec.describe());
    let stats = rec.finish().unwrap();
    assert_eq!(stats.samples, 20);
    let (codec, w, h, n, _) = probe(&path);
    assert_eq!((codec.as_str(), w, h, n), ("h264", 320, 240, 20));
}

#[test]
fn a_full_disk_is_a_typed_enospc_and_later_writes_are_refused() {
    // /dev/full: every write fails with ENOSPC, as on a full disk; the
    // moov cannot be written either (the documented limit).
    let dir = tempdir();
    let path = dir.join("full.mp4");
    std::os::unix::fs::symlink("/dev/full", &path).unwrap();
    let software = RecorderConfig {
        encoder: EncoderChoice::Software,
        ..RecorderConfig::default()
    };
    let mut rec = Recorder::create(&path, software).unwrap();
    let mut source = pattern("NV12", None);
    let mut error = None;
    for _ in 0..400 {
        if let Err(e) = rec.write(source.next_frame(Duration::from_secs(1)).unwrap()) {
            error = Some(e);
            break;
        }
    }
    let e = error.expect("a write fails once a chunk reaches the file");
    let enospc = |e: &EncodeError| {
        matches!(e, EncodeError::Container(ContainerError::Io { source, .. })
            if source.raw_os_error() == Some(28))
    };
    assert!(enospc(&e), "{e:?}");
    let again = rec.write(source.next_frame(Duration::from_secs(1)).unwrap());
    assert!(matches!(
        again,
        Err(EncodeError::Container(ContainerError::Finished { .. }))
    ));
    assert!(rec.finish().unwrap().finished);
}

#[test]
fn a_bare_stream_takes_its_codec_from_the_extension() {
    // `.mjpeg` holds Motion JPEG: with no codec asked for, the recorder
    // encodes JPEGs (in software) and ffprobe reads every one back.
    let dir = tempdir();
    let path = dir.join("clip.mjpeg");
    let stats = record(&path, "NV12", 12, None);
    assert_eq!((stats.frames, stats.samples), (12, 12));
    let (codec, w, h, n, _) = probe(&path);
    assert_eq!((codec.as_str(), w, h, n), ("mjpeg", 320, 240, 12));
    // An MP4 holds H.264 only: MJPEG into it is refused before the file is made.
    let mp4 = dir.join("mjpeg.mp4");
    let refused = Recorder::create(
        &mp4,
        RecorderConfig {
            codec: Some(Codec::Mjpeg),
            ..RecorderConfig::default()
        },
    );
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("hold h264, not mjpeg"), "{message}");
    assert!(!mp4.exists());
}
