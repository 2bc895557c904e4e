//! The stamp reader against a real encoder's damage: a stamped pattern
//! encoded by OpenH264 starved of bits, and a stream with bytes
//! overwritten in its slices, decoded by FFmpeg (a decoder zerocam did
//! not write). Every stamp read must be its own frame's: a mangled one
//! reads as nothing, never as another sequence.

use std::time::Duration;

use zerocam_capture::pattern::stamp::read_stamp;
use zerocam_capture::{FrameSource, PatternConfig, PatternSource, CAPTURE_FORMATS};
use zerocam_test_support::picture::ffmpeg_luma;

use super::SoftwareH264;
use crate::encoder::{EncoderConfig, VideoEncoder};
use crate::Codec;

const W: usize = 640;
const H: usize = 480;
const FRAMES: usize = 60;

/// `FRAMES` stamped frames encoded at `bitrate` (GOP 30), each access
/// unit with its frame's sequence number, `spoil` applied to each. Each
/// `encode` call must give its own frame's access unit (OpenH264 holds
/// none back).
fn encoded(bitrate: u32, spoil: impl Fn(usize, &mut Vec<u8>)) -> Vec<(u32, Vec<u8>)> {
    let mut source = PatternSource::new(PatternConfig {
        stamp: true,
        ..PatternConfig::new(CAPTURE_FORMATS[0], W as u32, H as u32)
    })
    .unwrap();
    let mut config = EncoderConfig::new(Codec::H264);
    config.bitrate = Some(bitrate);
    config.gop = Some(30);
    let mut encoder = None;
    let mut out = Vec::new();
    for i in 0..FRAMES {
        let frame = source.next_frame(Duration::from_secs(1)).unwrap();
        let (sequence, pts) = (frame.sequence(), frame.timestamp());
        let e = encoder.get_or_insert_with(|| SoftwareH264::open(&config, &frame).unwrap());
        // No frame held back: each call gives its own frame's access unit.
        let mut packets = e.encode(frame).unwrap();
        assert_eq!(packets.len(), 1, "frame {sequence}");
        let mut packet = packets.remove(0);
        assert_eq!(packet.pts, pts, "frame {sequence}");
        spoil(i, &mut packet.data);
        out.push((sequence, packet.data));
    }
    out
}

/// The stamps FFmpeg's pictures of `units` carry, in order (`None`: an
/// unreadable stamp). FFmpeg may drop a picture it cannot decode.
fn read_back(units: &[(u32, Vec<u8>)], name: &str) -> Vec<Option<u32>> {
    let file = std::env::temp_dir().join(format!(
        "zerocam-starved-{}-{name}.h264",
        std::process::id()
    ));
    let bytes: Vec<u8> = units.iter().flat_map(|(_, d)| d.iter().copied()).collect();
    std::fs::write(&file, bytes).unwrap();
    let luma = ffmpeg_luma(&["-f", "h264"], &file.display().to_string(), W, H, FRAMES);
    let _ = std::fs::remove_file(&file);
    luma.iter()
        .map(|picture| read_stamp(picture, W, H, W).map(|s| s.sequence))
        .collect()
}

/// OpenH264 at 1 kbit/s, as starved as its rate control goes (it does
/// not skip frames, so it cannot keep to that rate and the pictures are
/// merely poor): every picture's stamp is its own frame's.
#[test]
fn a_starved_encoders_pictures_read_as_their_own_frames() {
    let units = encoded(1_000, |_, _| {});
    let read = read_back(&units, "starved");
    assert_eq!(read.len(), units.len(), "one picture per access unit");
    for ((sequence, _), stamp) in units.iter().zip(&read) {
        assert!(
            stamp.is_none_or(|s| s == *sequence),
            "frame {sequence} read as {stamp:?}"
        );
    }
}

/// Bytes overwritten inside the slices of frames 10 to 39 (the keyframe
/// at 30 among them), where a network or a disk would spoil them: FFmpeg
/// conceals what it can, and the damaged pictures (those frames, and the
/// ones predicted from them) read as unreadable, never as another frame.
#[test]
fn a_corrupted_streams_pictures_read_right_or_not_at_all() {
    for offset in [8usize, 60] {
        let units = encoded(1_000_000, |i, data| {
            if (10..40).contains(&i) && data.len() > offset + 16 {
                data[offset..offset + 16]
                    .iter_mut()
                    .for_each(|b| *b ^= 0x5a);
            }
        });
        let read = read_back(&units, &format!("corrupt-{offset}"));
        let what = format!("bytes {offset}.. spoiled: read {read:?}");
        assert_eq!(
            read[..10],
            (0..10).map(Some).collect::<Vec<_>>(),
            "{what}: the frames before the damage"
        );
        assert!(
            read.iter().filter(|s| s.is_none()).count() >= 20,
            "{what}: the damage shows"
        );
        // What is read is a frame that was encoded, in order: a frame
        // whose picture FFmpeg left untouched by the damage.
        if read.len() == units.len() {
            for ((sequence, _), stamp) in units.iter().zip(&read) {
                assert!(stamp.is_none_or(|s| s == *sequence), "{what}");
            }
        }
        let readable: Vec<u32> = read.iter().flatten().copied().collect();
        assert!(readable.windows(2).all(|w| w[0] < w[1]), "{what}");
        assert!(readable.iter().all(|s| (*s as usize) < FRAMES), "{what}");
    }
}
