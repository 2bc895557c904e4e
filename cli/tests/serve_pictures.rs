//! What a `unix:` subscriber gets is what was captured, bit for bit: `zerocam
//! serve pattern:stamp --socket` lends its raw NV12 frames, and each
//! frame's luma, read through the subscriber's map, is the source's own
//! picture of the frame its stamp names.
#![allow(clippy::unwrap_used)]

use std::io::BufRead;
use std::time::Duration;

use zerocam_capture::open::{open, SourceSpec};
use zerocam_capture::pattern::stamp::read_stamp;
use zerocam_capture::{PatternConfig, PatternSource, CAPTURE_FORMATS};

mod common;

#[test]
fn every_frame_a_subscriber_maps_is_the_captured_frame_bit_for_bit() {
    const FRAMES: usize = 60;
    let (w, h) = (1280usize, 720usize);
    let dir = std::env::temp_dir().join(format!("zerocam-serve-pictures-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("cam.sock");
    let (serve, out) = common::serve_socket(
        &["pattern:stamp", "--size", "1280x720", "--fps", "30"],
        &socket,
    );
    std::thread::spawn(move || for _ in out.lines() {});

    let spec = SourceSpec::new(Some(format!("unix:{}", socket.display())));
    let mut sub = open(&spec).unwrap().source;
    let f = sub.stream_format().clone();
    assert_eq!((f.width, f.height, f.format.name), (1280, 720, "NV12"));
    let stride = f.planes[0].bytes_per_line as usize;
    let source = PatternSource::new(PatternConfig {
        stamp: true,
        ..PatternConfig::new(CAPTURE_FORMATS[0], w as u32, h as u32)
    })
    .unwrap();
    let mut last = None;
    for _ in 0..FRAMES {
        let frame = sub.next_frame(Duration::from_secs(10)).unwrap();
        let map = frame.tensor().map_read().unwrap();
        let luma: Vec<u8> = (0..h)
            .flat_map(|y| map[y * stride..y * stride + w].iter().copied())
            .collect();
        let stamp = read_stamp(&luma, w, h, w).expect("a readable stamp");
        assert_eq!(stamp.sequence, frame.sequence(), "the stamp is the frame's");
        if let Some(prev) = last {
            assert!(stamp.sequence > prev, "{prev} then {}", stamp.sequence);
        }
        last = Some(stamp.sequence);
        let want = source.luma(stamp.sequence, Some(&stamp)).unwrap();
        let differ = luma.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(
            differ, 0,
            "frame {}: {differ} luma bytes differ",
            stamp.sequence
        );
    }
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}
