//! [`Outputs`] with OpenH264 (a real encoder) and outputs that record what
//! they were given.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use zerocam_capture::{Frame, FrameSource, PatternConfig, PatternSource};
use zerocam_encode::encoder::EncoderConfig;
use zerocam_encode::{Codec, EncoderChoice};

use super::{Encoded, Output, OutputError, Outputs, SharedEncoder, SharedJpeg, Still, Takes, Want};

/// What a recording output saw: per frame, (encoder, index, access
/// units, keyframes), and frames shown.
#[derive(Default)]
struct Seen {
    h264: Vec<(u64, u64, usize, usize)>,
    frames: u64,
}

/// An output that answers `wants_h264` from a script (one entry per
/// frame, the last repeated) and records what it gets.
struct Recorder {
    takes: Takes,
    script: Vec<Want>,
    at: usize,
    seen: Arc<Mutex<Seen>>,
    fail: bool,
}

impl Recorder {
    fn new(takes: Takes, script: &[Want]) -> (Recorder, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let r = Recorder {
            takes,
            script: script.to_vec(),
            at: 0,
            seen: seen.clone(),
            fail: false,
        };
        (r, seen)
    }
}

impl Output for Recorder {
    fn takes(&self) -> Takes {
        self.takes
    }

    fn describe(&self) -> String {
        "recorder".into()
    }

    fn status(&self) -> String {
        "recorder".into()
    }

    fn frame(&mut self, _frame: &Frame, _source: &dyn FrameSource) -> Result<(), OutputError> {
        self.seen.lock().unwrap().frames += 1;
        match self.fail {
            true => Err(OutputError::Send {
                output: "recorder",
                reason: "gone".into(),
            }),
            false => Ok(()),
        }
    }

    fn wants_h264(&mut self) -> Want {
        let want = self.script[self.at.min(self.script.len() - 1)];
        self.at += 1;
        want
    }

    fn h264(&mut self, encoded: &Encoded) -> Result<(), OutputError> {
        let keyframes = encoded.packets.iter().filter(|p| p.keyframe).count();
        self.seen.lock().unwrap().h264.push((
            encoded.encoder,
            encoded.index,
            encoded.packets.len(),
            keyframes,
        ));
        Ok(())
    }
}

const H264: Takes = Takes {
    frames: false,
    h264: true,
    jpeg: false,
};

fn outputs() -> Outputs {
    let config = EncoderConfig {
        gop: Some(1000),
        ..EncoderConfig::new(Codec::H264)
    };
    Outputs::new(Some(SharedEncoder::new(
        "test",
        EncoderChoice::Software,
        config,
    )))
}

fn run(outputs: &mut Outputs, frames: usize) {
    let mut pattern =
        PatternSource::new(PatternConfig::new("NV12".parse().unwrap(), 320, 240)).unwrap();
    for _ in 0..frames {
        let frame = pattern.next_frame(Duration::from_secs(1)).unwrap();
        outputs.frame(&frame, &pattern);
    }
}

#[test]
fn one_encoder_for_every_output_and_each_frame_encoded_once() {
    let mut outputs = outputs();
    let (a, seen_a) = Recorder::new(H264, &[Want::Next]);
    let (b, seen_b) = Recorder::new(
        H264,
        &[Want::Off, Want::Off, Want::Off, Want::Keyframe, Want::Next],
    );
    let (c, seen_c) = Recorder::new(
        Takes {
            frames: true,
            h264: false,
            jpeg: false,
        },
        &[Want::Next],
    );
    outputs.push(Box::new(a));
    outputs.push(Box::new(b));
    outputs.push(Box::new(c));
    run(&mut outputs, 10);
    let stats = outputs.video().unwrap().stats();
    assert_eq!(
        (stats.opened, stats.frames, stats.requested),
        (1, 10, 1),
        "{stats:?}"
    );
    let a = seen_a.lock().unwrap();
    assert_eq!(a.h264.len(), 10);
    assert!(a
        .h264
        .iter()
        .enumerate()
        .all(|(i, h)| h.0 == 1 && h.1 == i as u64));
    assert_eq!(a.h264[0].3, 1, "the encoder's first is a keyframe");
    // The one that came at frame 3 asked for a keyframe, and got it then
    // (OpenH264 makes it on the next frame it encodes), from the same encoder.
    let b = seen_b.lock().unwrap();
    assert_eq!(b.h264.len(), 7);
    assert_eq!(
        (b.h264[0].0, b.h264[0].1, b.h264[0].3),
        (1, 3, 1),
        "{:?}",
        b.h264
    );
    assert_eq!(a.h264[3].3, 1, "the same keyframe for every output");
    // The frame-taker saw every frame, and took no H.264.
    let c = seen_c.lock().unwrap();
    assert_eq!((c.frames, c.h264.len()), (10, 0));
}

#[test]
fn the_encoder_closes_when_nobody_wants_it_and_stays_for_a_skip() {
    let mut outputs = outputs();
    let script = [
        Want::Next,
        Want::Skip,
        Want::Next,
        Want::Off,
        Want::Off,
        Want::Next,
    ];
    let (a, seen) = Recorder::new(H264, &script);
    outputs.push(Box::new(a));
    run(&mut outputs, 6);
    let stats = outputs.video().unwrap().stats();
    // Frames 0 and 2 by the first encoder (frame 1 skipped, not encoded),
    // closed at frame 3, a second opened at frame 5.
    assert_eq!((stats.opened, stats.frames), (2, 3), "{stats:?}");
    let seen = seen.lock().unwrap();
    let order: Vec<(u64, u64)> = seen.h264.iter().map(|h| (h.0, h.1)).collect();
    assert_eq!(order, [(1, 0), (1, 1), (2, 0)]);
}

#[test]
fn a_failing_output_is_counted_and_the_others_go_on() {
    let mut outputs = outputs();
    let takes = Takes {
        frames: true,
        h264: true,
        jpeg: false,
    };
    let (mut bad, _) = Recorder::new(takes, &[Want::Next]);
    bad.fail = true;
    let (good, seen) = Recorder::new(takes, &[Want::Next]);
    outputs.push(Box::new(bad));
    outputs.push(Box::new(good));
    run(&mut outputs, 5);
    let seen = seen.lock().unwrap();
    assert_eq!((seen.frames, seen.h264.len()), (5, 5));
    let status = outputs.status();
    assert!(status[0].ends_with("failures 5"), "{status:?}");
    assert!(status[1].ends_with("failures 0"), "{status:?}");
}

/// Each still a viewer got: its sequence, and where its bytes were.
type Stills = Arc<Mutex<Vec<(u32, usize)>>>;

/// An output of JPEG that wants the frames its script says (one entry per
/// frame) and records the stills it gets.
struct Viewer {
    script: Vec<bool>,
    at: usize,
    seen: Stills,
}

impl Viewer {
    fn new(script: &[bool]) -> (Viewer, Stills) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let v = Viewer {
            script: script.to_vec(),
            at: 0,
            seen: seen.clone(),
        };
        (v, seen)
    }
}

impl Output for Viewer {
    fn takes(&self) -> Takes {
        Takes {
            frames: false,
            h264: false,
            jpeg: true,
        }
    }

    fn describe(&self) -> String {
        "viewer".into()
    }

    fn status(&self) -> String {
        "viewer".into()
    }

    fn wants_jpeg(&mut self) -> bool {
        let want = self.script[self.at];
        self.at += 1;
        want
    }

    fn jpeg(&mut self, still: &Still<'_>) -> Result<(), OutputError> {
        assert_eq!(&still.data[..2], [0xff, 0xd8], "a JPEG");
        let at = still.data.as_ptr() as usize;
        self.seen.lock().unwrap().push((still.sequence, at));
        Ok(())
    }
}

#[test]
fn each_frame_is_one_jpeg_lent_to_every_output_that_wants_it() {
    let mut outputs = Outputs::new(None).with_jpeg(SharedJpeg::new(80).unwrap());
    let (a, seen_a) = Viewer::new(&[true, true, true, true, true, false]);
    let (b, seen_b) = Viewer::new(&[false, false, true, true, true, false]);
    outputs.push(Box::new(a));
    outputs.push(Box::new(b));
    run(&mut outputs, 6);
    // Frames 0 to 4 wanted (by one or both), each encoded once; frame 5 by
    // nobody, not encoded.
    let stats = outputs.stills().unwrap().stats();
    assert_eq!((stats.frames, stats.errors), (5, 0), "{stats:?}");
    let (a, b) = (seen_a.lock().unwrap(), seen_b.lock().unwrap());
    let sequences = |seen: &[(u32, usize)]| seen.iter().map(|s| s.0).collect::<Vec<_>>();
    assert_eq!(sequences(&a), [0, 1, 2, 3, 4]);
    assert_eq!(sequences(&b), [2, 3, 4]);
    // The same bytes lent to both, not a copy each.
    assert_eq!(&a[2..], &b[..], "the same JPEG at the same address");
    let status = outputs.status();
    assert!(
        status
            .iter()
            .any(|l| l.starts_with("jpeg: frames encoded 5,")),
        "{status:?}"
    );
}

/// `frames` frames of a 640x480 pattern through `outputs`.
fn run_vga(outputs: &mut Outputs, frames: usize) {
    let mut pattern =
        PatternSource::new(PatternConfig::new("NV12".parse().unwrap(), 640, 480)).unwrap();
    for _ in 0..frames {
        let frame = pattern.next_frame(Duration::from_secs(1)).unwrap();
        outputs.frame(&frame, &pattern);
    }
}

/// A recording beside another H.264 output: it joins the running encoder
/// (no second one), starts its file at a keyframe asked for it, writes
/// every access unit from there, and the file is whole at the end.
#[test]
fn a_recording_takes_the_running_encoder_from_a_keyframe() {
    let path = std::env::temp_dir().join(format!("zerocam-outputs-{}.h264", std::process::id()));
    let mut outputs = outputs();
    let (other, seen) = Recorder::new(H264, &[Want::Next]);
    outputs.push(Box::new(other));
    run_vga(&mut outputs, 3);
    // A second list would open a second encoder; this one joins at frame 3.
    outputs.push(Box::new(super::Recording::create(&path, 30).unwrap()));
    run_vga(&mut outputs, 12);
    outputs.finish();
    let stats = outputs.video().unwrap().stats();
    assert_eq!((stats.opened, stats.requested), (1, 1), "{stats:?}");
    let status = outputs.status().join("; ");
    assert!(
        status.contains("record: access units written 12,"),
        "{status}"
    );
    assert!(status.contains("failures 0; "), "{status}");
    let file = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let nal = file
        .iter()
        .skip_while(|b| **b == 0)
        .nth(1)
        .map(|b| b & 0x1f);
    assert_eq!(nal, Some(7), "the file starts with an SPS (a keyframe)");
    assert_eq!(seen.lock().unwrap().h264.len(), 15);
}

/// A recording on a full disk (`/dev/full`: every write `ENOSPC`): it
/// fails once, counted, ends itself, and the other output and the encoder
/// go on.
#[test]
fn a_full_disk_ends_the_recording_alone() {
    let path = std::env::temp_dir().join(format!("zerocam-full-{}.h264", std::process::id()));
    let _ = std::fs::remove_file(&path);
    std::os::unix::fs::symlink("/dev/full", &path).unwrap();
    let mut outputs = outputs();
    let (other, seen) = Recorder::new(H264, &[Want::Next]);
    outputs.push(Box::new(super::Recording::create(&path, 30).unwrap()));
    outputs.push(Box::new(other));
    run_vga(&mut outputs, 30);
    outputs.finish();
    let _ = std::fs::remove_file(&path);
    let status = outputs.status();
    assert!(
        status[0].contains("ended: ") && status[0].contains("No space left on device"),
        "{status:?}"
    );
    assert!(
        status[0].ends_with("failures 1"),
        "logged and counted once: {status:?}"
    );
    assert!(status[1].ends_with("failures 0"), "{status:?}");
    assert_eq!(
        seen.lock().unwrap().h264.len(),
        30,
        "the other output went on"
    );
}
