//! The V4L2 memory-to-memory encoder vanishing mid-recording, in the kernel
//! lab (`cargo lab -p zerocam-encode --test lab_m2m_vanish`): vivid's
//! `/dev/video0` (NV12 640x480, MMAP) recorded through vicodec's stateful
//! FWHT encoder into a `.fwht` file, then vicodec's platform device unbound
//! from its driver while the encoder is open. The next `write` must fail
//! with a typed error ([`M2mError::Disconnected`]) within the encoder's
//! step timeout, the capture must go on (more frames, every buffer back once
//! the recorder is dropped), the file must decode (vicodec's decoder, after
//! the device is bound again) to whole frames, no more than were written
//! before the failure, and no fd may be left over.
//!
//! Other lab tests of the same boot (`tests/lab/test-all`) use vicodec's
//! nodes by the numbers `ZEROCAM_LAB_VICODEC_*` name: [`Unbound`] binds the
//! device again even when an assertion fails, and the test checks that the
//! numbers came back as they were.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zerocam_capture::{BufferMode, CaptureError, Device, Frame, FrameSource, Stream, StreamConfig};
use zerocam_encode::container::ContainerError;
use zerocam_encode::m2m::M2mError;
use zerocam_encode::recorder::{Recorder, RecorderConfig};
use zerocam_encode::{EncodeError, EncoderChoice};
use zerocam_test_support::lab::{fd_count, fd_list, lock};
use zerocam_test_support::vivid::format;

const W: u32 = 640;
const H: u32 = 480;
const FRAME_BYTES: u64 = (W * H * 3 / 2) as u64;
const WAIT: Duration = Duration::from_secs(10);
/// Frames written before the encoder goes away.
const BEFORE: u64 = 20;
/// Frames captured after the failure.
const AFTER: usize = 10;
/// The encoder's step timeout (`STEP_TIMEOUT`, 5 s) and some slack: the
/// failing `write` returns within this.
const FAIL_WITHIN: Duration = Duration::from_secs(8);
/// How long the nodes may take to come back after the bind.
const REAPPEAR: Duration = Duration::from_secs(20);

fn env_node(var: &str) -> PathBuf {
    let p = std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} unset: the lab loads vicodec and names its nodes"));
    PathBuf::from(p)
}

/// `/sys/class/video4linux/videoN` of `/dev/videoN`.
fn sysfs(node: &Path) -> PathBuf {
    Path::new("/sys/class/video4linux").join(node.file_name().unwrap())
}

/// The name the driver gives `node` (`stateful-encoder`…), if it exists.
fn node_name(node: &Path) -> Option<String> {
    std::fs::read_to_string(sysfs(node).join("name"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The vicodec nodes the lab named, with the sysfs names each must have.
fn vicodec_nodes() -> Vec<(PathBuf, &'static str)> {
    vec![
        (env_node("ZEROCAM_LAB_VICODEC_ENC"), "stateful-encoder"),
        (env_node("ZEROCAM_LAB_VICODEC_DEC"), "stateful-decoder"),
        (
            env_node("ZEROCAM_LAB_VICODEC_STATELESS_DEC"),
            "stateless-decoder",
        ),
    ]
}

/// vicodec's platform device unbound from its driver; bound again by
/// [`Unbound::rebind`] or, when the test fails first, on drop. Declared
/// before the recorder so that it drops after it (no fd left on the old
/// nodes, whose numbers are freed only when their last fd closes).
struct Unbound {
    /// The platform device (`vicodec.0`).
    device: String,
    /// `/sys/bus/platform/drivers/vicodec`.
    driver: PathBuf,
    unbound: bool,
}

impl Unbound {
    /// The platform device behind the encoder node `enc` and its driver; nothing unbound yet.
    fn of(enc: &Path) -> Unbound {
        let dev = std::fs::canonicalize(sysfs(enc).join("device")).unwrap();
        let driver = std::fs::canonicalize(dev.join("driver")).unwrap();
        let device = dev.file_name().unwrap().to_str().unwrap().to_string();
        println!(
            "{}: platform device {device} ({}), driver {}",
            enc.display(),
            dev.display(),
            driver.display()
        );
        assert!(device.starts_with("vicodec"), "{device}");
        Unbound {
            device,
            driver,
            unbound: false,
        }
    }

    /// `echo -n vicodec.0 > DRIVER/unbind`.
    fn unbind(&mut self) {
        std::fs::write(self.driver.join("unbind"), &self.device).unwrap();
        self.unbound = true;
        println!("unbound {} from {}", self.device, self.driver.display());
    }

    /// `echo -n vicodec.0 > DRIVER/bind`, then waits for each node of
    /// `nodes` to carry its name again.
    fn rebind(&mut self, nodes: &[(PathBuf, &'static str)]) -> Result<Duration, String> {
        if !self.unbound {
            return Ok(Duration::ZERO);
        }
        self.unbound = false;
        let t = Instant::now();
        std::fs::write(self.driver.join("bind"), &self.device)
            .map_err(|e| format!("binding {} again: {e}", self.device))?;
        let deadline = t + REAPPEAR;
        loop {
            let wrong: Vec<String> = nodes
                .iter()
                .filter(|(n, name)| node_name(n).as_deref() != Some(*name) || !n.exists())
                .map(|(n, name)| format!("{} is {:?}, not {name}", n.display(), node_name(n)))
                .collect();
            if wrong.is_empty() {
                return Ok(t.elapsed());
            }
            if Instant::now() >= deadline {
                let all: Vec<String> = std::fs::read_dir("/sys/class/video4linux")
                    .map(|d| {
                        d.filter_map(Result::ok)
                            .map(|e| {
                                let p = Path::new("/dev").join(e.file_name());
                                format!("{}={:?}", p.display(), node_name(&p))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                return Err(format!(
                    "after binding {} again: {} (video4linux now: {})",
                    self.device,
                    wrong.join("; "),
                    all.join(", ")
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Unbound {
    fn drop(&mut self) {
        if self.unbound {
            let nodes = vicodec_nodes();
            match self.rebind(&nodes) {
                Ok(t) => eprintln!("{} bound again on drop after {t:?}", self.device),
                Err(e) => eprintln!(
                    "LAB BROKEN for the tests after this one: {e} (later vicodec tests of this boot will fail)"
                ),
            }
        }
    }
}

fn vivid() -> Stream {
    let mut d = Device::open("/dev/video0").unwrap();
    d.set_menu("Test Pattern", "75% Colorbar").unwrap();
    d.set_format(format("NV12"), W, H).unwrap();
    d.set_frame_rate(60.0).unwrap();
    let config = StreamConfig {
        mode: BufferMode::Mmap,
        buffers: 4,
        hold: 3,
        ..Default::default()
    };
    Stream::new(d, config).unwrap()
}

/// The source's free buffers: frames held at once until it answers
/// [`CaptureError::NoFreeBuffer`] (the rest are held elsewhere, e.g. by an
/// encoder); all given back after.
fn free_buffers(s: &mut Stream) -> usize {
    let buffers = s.stats().buffers;
    let mut held: Vec<Frame> = Vec::new();
    for _ in 0..=buffers {
        match s.next_frame(WAIT) {
            Ok(f) => held.push(f),
            Err(CaptureError::NoFreeBuffer { .. }) => break,
            Err(e) => panic!("probing free buffers with {} held: {e}", held.len()),
        }
    }
    held.len()
}

#[test]
fn encoder_unbound_mid_recording_is_a_typed_error_the_file_plays_and_capture_goes_on() {
    let _l = lock();
    let nodes = vicodec_nodes();
    for (n, name) in &nodes {
        assert_eq!(node_name(n).as_deref(), Some(*name), "{}", n.display());
    }
    let enc = nodes[0].0.clone();
    let dec = nodes[1].0.clone();
    let clip = std::env::temp_dir().join("zerocam-lab-vanish.fwht");
    let decoded = std::env::temp_dir().join("zerocam-lab-vanish.nv12");
    let _ = std::fs::remove_file(&decoded);
    let fds_start = fd_count();

    let mut source = vivid();
    let buffers = source.stats().buffers;
    let free_start = free_buffers(&mut source);
    assert_eq!(free_start, buffers, "every buffer free before recording");
    let mut unbound = Unbound::of(&enc);
    let config = RecorderConfig {
        encoder: EncoderChoice::Device(enc.clone()),
        ..Default::default()
    };
    let mut rec = Recorder::create(&clip, config).unwrap();
    for _ in 0..BEFORE {
        rec.write(source.next_frame(WAIT).unwrap()).unwrap();
    }
    let before = rec.stats();
    println!("{}; before the unbind: {before:?}", rec.describe());
    assert_eq!(before.frames, BEFORE);
    assert!(before.samples > 0, "{before:?}");

    unbound.unbind();
    assert!(node_name(&enc).is_none(), "the node left sysfs");
    let mut failed = None;
    let mut written_after = 0;
    for _ in 0..5 {
        let frame = source.next_frame(WAIT).unwrap();
        let t = Instant::now();
        match rec.write(frame) {
            Ok(()) => written_after += 1,
            Err(e) => {
                failed = Some((e, t.elapsed()));
                break;
            }
        }
    }
    let (err, took) = failed.expect("a write fails after the encoder went away");
    println!("after {written_after} more write(s), write failed in {took:?}: {err}\n  {err:?}");
    assert_eq!(written_after, 0, "the very next write fails");
    assert!(took < FAIL_WITHIN, "bounded: {took:?}");
    match &err {
        EncodeError::M2m(M2mError::Disconnected { path, ioctl, errno }) => {
            assert_eq!(path, &enc);
            println!("Disconnected: {} during {ioctl}: {errno}", path.display());
        }
        other => panic!("not M2mError::Disconnected: {other} ({other:?})"),
    }
    let after = rec.stats();
    println!("after the failure: {after:?}");
    assert!(after.finished, "the file is closed at the failure");
    // Later writes are refused (the frame goes back to the source).
    let again = rec.write(source.next_frame(WAIT).unwrap()).unwrap_err();
    assert!(
        matches!(
            again,
            EncodeError::Container(ContainerError::Finished { .. })
        ),
        "{again}"
    );

    // The capture goes on while the failed recorder still exists.
    for i in 0..AFTER {
        let f = source
            .next_frame(WAIT)
            .unwrap_or_else(|e| panic!("frame {i} after the failure: {e}"));
        assert_eq!(f.tensor().width(), Some(W as usize));
    }
    // vicodec encodes a frame as soon as it is queued, so the encoder has
    // usually given every frame back by the failure; a driver that lags
    // would hold some until the recorder drops (printed, not asserted).
    let free_failed = free_buffers(&mut source);
    println!(
        "free capture buffers: {free_start}/{buffers} before, {free_failed}/{buffers} after the failure with the recorder alive ({} held by the failed encoder)",
        buffers - free_failed
    );
    assert!(free_failed >= 1, "the source is not starved");

    // Every fd on the old nodes closed before the bind.
    drop(rec);
    let free_dropped = free_buffers(&mut source);
    println!("free capture buffers with the recorder dropped: {free_dropped}/{buffers}");
    assert_eq!(free_dropped, buffers, "the encoder's frames came back");
    let t = unbound.rebind(&nodes).unwrap_or_else(|e| panic!("{e}"));
    println!("{} bound again; nodes back after {t:?}", unbound.device);
    for (n, name) in &nodes {
        assert_eq!(node_name(n).as_deref(), Some(*name), "{}", n.display());
    }
    drop(source);

    let clip_bytes = std::fs::metadata(&clip).unwrap().len();
    let status = std::process::Command::new("v4l2-ctl")
        .arg("-d")
        .arg(&dec)
        .args([
            "--set-fmt-video=pixelformat=NV12",
            "--stream-mmap",
            "--stream-out-mmap",
        ])
        .arg(format!("--stream-from={}", clip.display()))
        .arg(format!("--stream-to={}", decoded.display()))
        .status()
        .unwrap();
    assert!(status.success(), "v4l2-ctl: {status}");
    let bytes = std::fs::metadata(&decoded).unwrap().len();
    let frames = bytes / FRAME_BYTES;
    println!(
        "{}: {clip_bytes} bytes, {} packets; decoded {bytes} bytes = {frames} whole frames of {BEFORE} written before the failure ({} lost: frames a lagging encoder still held when it went away)",
        clip.display(),
        after.samples,
        BEFORE.saturating_sub(frames)
    );
    assert!(bytes > 0 && bytes.is_multiple_of(FRAME_BYTES), "{bytes}");
    assert!(frames <= BEFORE, "{frames}");
    assert_eq!(frames, after.samples, "every packet in the file decodes");
    let _ = std::fs::remove_file(&decoded);
    let _ = std::fs::remove_file(&clip);

    let fds_end = fd_count();
    println!("fds: {fds_start} at the start, {fds_end} at the end");
    assert_eq!(fds_start, fds_end, "fds grew: {:?}", fd_list());
}
