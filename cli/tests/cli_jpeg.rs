//! `zerocam capture -o snap.jpg` on the pattern source: a JPEG that decodes
//! to the picture `-o snap.png` writes of the same frame; output names
//! zerocam does not write, places it cannot write to and bad qualities
//! refused with nothing created.
#![allow(clippy::unwrap_used)] // tests may panic

mod common;

use std::path::{Path, PathBuf};

use common::{fails, zerocam};
use zerocam_encode::jpeg::{decode_rgb, psnr, Upsampling};

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zerocam-jpeg-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `zerocam capture pattern` of 3 frames of `format` at `size` to `out`.
fn capture_at(format: &str, size: &str, out: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "capture",
        "pattern",
        "--format",
        format,
        "--size",
        size,
        "--frames",
        "3",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    zerocam(&args)
}

/// [`capture_at`] 320x240.
fn capture(format: &str, out: &Path, extra: &[&str]) -> String {
    capture_at(format, "320x240", out, extra)
}

/// PSNR in dB of the JPEG at `jpg` decoded with `up` against the PNG at `png`.
fn psnr_jpeg_png(jpg: &Path, png: &Path, up: Upsampling) -> f64 {
    let bytes = std::fs::read(jpg).unwrap();
    assert_eq!(&bytes[..2], &[0xff, 0xd8], "a JPEG's SOI marker");
    let img = decode_rgb(&bytes, up).unwrap();
    let (w, h, want) = png_rgb(png);
    assert_eq!((img.width, img.height), (w as usize, h as usize));
    psnr(&img.pixels, &want).unwrap()
}

/// The PNG at `path` as packed RGB.
fn png_rgb(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

#[test]
fn a_jpeg_snapshot_is_the_png_snapshots_picture() {
    // The PNG reads each chroma sample for its pixels as they are; a
    // decoder upsampling the chroma the same way sees the same picture.
    let d = dir("psnr");
    for format in ["NV12", "NV12M", "YUYV", "UYVY", "NV16", "RGB24"] {
        let (jpg, png) = (
            d.join(format!("{format}.jpg")),
            d.join(format!("{format}.png")),
        );
        let out = capture(format, &jpg, &[]);
        assert!(
            out.contains("320x240 JPEG at quality 85 of frame 2"),
            "{out}"
        );
        capture(format, &png, &[]);
        let db = psnr_jpeg_png(&jpg, &png, Upsampling::Nearest);
        assert!(db >= 30.0, "{format}: PSNR {db:.1} dB against the PNG");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_viewers_decode_of_a_720p_snapshot_is_the_png_too() {
    // libjpeg's default (smooth) chroma upsampling blends the chroma of
    // neighbouring bars at each of the pattern's saturated edges, which
    // costs a few dB at small sizes (the edges are a larger share of the
    // pixels); at 1280x720 it is well above 30 dB.
    let d = dir("smooth");
    let (jpg, png) = (d.join("s.jpg"), d.join("s.png"));
    capture_at("NV12", "1280x720", &jpg, &[]);
    capture_at("NV12", "1280x720", &png, &[]);
    let db = psnr_jpeg_png(&jpg, &png, Upsampling::Smooth);
    assert!(db >= 30.0, "PSNR {db:.1} dB against the PNG");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn quality_changes_the_size() {
    let d = dir("quality");
    let (lo, hi) = (d.join("lo.jpeg"), d.join("hi.JPG"));
    capture("NV12", &lo, &["--quality", "20"]);
    let out = capture("NV12", &hi, &["--quality", "100"]);
    assert!(out.contains("quality 100"), "{out}");
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    assert!(size(&lo) < size(&hi), "{} vs {}", size(&lo), size(&hi));
    for q in ["0", "101", "-5"] {
        let bad = d.join(format!("q{q}.jpg"));
        let quality = format!("--quality={q}");
        let err = fails(&["capture", "pattern", &quality, "-o", bad.to_str().unwrap()]);
        assert!(
            err.contains(&format!("JPEG quality {q} is outside 1..=100")),
            "{err}"
        );
        assert!(!bad.exists());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_extension_zerocam_does_not_write_is_refused_and_nothing_is_created() {
    let d = dir("ext");
    for name in ["snap.bmp", "snap", "snap.tiff"] {
        let out = d.join(name);
        let err = fails(&[
            "capture",
            "pattern",
            "--frames",
            "1",
            "-o",
            out.to_str().unwrap(),
        ]);
        for known in [".png", ".jpg", ".jpeg", ".raw", ".yuv"] {
            assert!(err.contains(known), "{name}: {err}");
        }
        assert!(!out.exists(), "{name} was created");
    }
    // Refused before the source is opened: a device that does not exist
    // is not what the error is about.
    let err = fails(&[
        "capture",
        "/dev/video-nope",
        "-o",
        d.join("x.bmp").to_str().unwrap(),
    ]);
    assert!(err.contains("\"bmp\""), "{err}");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_unwritable_place_is_refused_and_nothing_is_created() {
    let d = dir("unwritable");
    let file = d.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for out in [
        d.join("missing-dir").join("snap.jpg"),
        file.join("snap.png"),
        d.join("missing-dir").join("frames.raw"),
    ] {
        let err = fails(&[
            "capture",
            "pattern",
            "--frames",
            "1",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(
            err.contains("cannot write") && err.contains(out.to_str().unwrap()),
            "{err}"
        );
        assert!(!out.exists());
    }
    let err = fails(&[
        "capture",
        "pattern",
        "--frames",
        "1",
        "-o",
        d.to_str().unwrap(),
    ]);
    assert!(
        err.contains("does not write"),
        "a directory has no extension: {err}"
    );
    let as_dir = d.join("dir.jpg");
    std::fs::create_dir(&as_dir).unwrap();
    let err = fails(&[
        "capture",
        "pattern",
        "--frames",
        "1",
        "-o",
        as_dir.to_str().unwrap(),
    ]);
    assert!(err.contains("cannot write"), "{err}");
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        2,
        "a-file and dir.jpg only"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
