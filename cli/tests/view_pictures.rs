//! What a viewer of the live view sees is what was captured: `zerocam view
//! pattern:stamp` at 1280x720, its MJPEG stream read by FFmpeg (its
//! multipart JPEG demuxer, a decoder zerocam did not write), every
//! picture's stamp read back and measured against the source's own picture
//! of that frame. Loopback only.
#![allow(clippy::unwrap_used)]

mod common;
mod view;

use view::View;
use zerocam_capture::{PatternConfig, PatternSource, CAPTURE_FORMATS};
use zerocam_test_support::picture::{ffmpeg_luma, Pictures};

#[test]
fn every_picture_of_the_mjpeg_stream_is_its_captured_frame() {
    const PICTURES: usize = 90;
    let (w, h) = (1280, 720);
    let view = View::start_device("pattern:stamp", "1280x720", &["--fps", "30"]);
    let url = format!("http://{}/stream.mjpg", view.addr);
    let luma = ffmpeg_luma(&["-f", "mpjpeg"], &url, w, h, PICTURES);
    let stats = view.stats();
    let source = PatternSource::new(PatternConfig {
        stamp: true,
        ..PatternConfig::new(CAPTURE_FORMATS[0], w as u32, h as u32)
    })
    .unwrap();
    let pictures = Pictures::check(&luma, &source, w, h);
    assert_eq!((luma.len(), pictures.unreadable), (PICTURES, 0));
    assert!(pictures.increasing(), "{:?}", pictures.sequences());
    // A frame missing between two pictures is one the viewer skipped (it
    // was slower than the camera), which the view counts.
    let seq = pictures.sequences();
    let gaps: u64 = seq.windows(2).map(|p| u64::from(p[1] - p[0] - 1)).sum();
    let skips = stats["view"]["viewer_skips"].as_u64().unwrap();
    assert!(
        gaps <= skips,
        "{gaps} frames missing, {skips} counted: {seq:?}"
    );
    assert!(pictures.min_psnr() >= 35.0, "PSNR {:?}", pictures.psnr);
}
