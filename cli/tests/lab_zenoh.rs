//! `zerocam serve --zenoh` on vivid in the kernel lab (`cargo lab -p
//! zerocam-cli --test lab_zenoh`, features lab and zenoh): one capture
//! served on the Unix socket and on Zenoh at once, a `unix:` client and a
//! `zenoh:` subscriber both reading it, all on the guest's loopback.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod common;

use std::io::BufReader;
use std::process::{Command, Stdio};
use std::time::Duration;

use zerocam_capture::share::Subscriber;
use zerocam_capture::zenoh_source::ZenohOptions;
use zerocam_capture::{FrameSource, ZenohSource, ZenohSourceConfig};

use common::{free_port, read_until, serial};

const ZEROCAM: &str = env!("CARGO_BIN_EXE_zerocam");
/// How long a subscriber waits for a frame (emulated guest, JPEG in software).
const WAIT: Duration = Duration::from_secs(20);

#[test]
fn lab_one_vivid_capture_served_on_the_socket_and_zenoh_at_once() {
    let _g = serial();
    let port = free_port();
    let socket =
        std::env::temp_dir().join(format!("zerocam-lab-zenoh-{}.sock", std::process::id()));
    let mut child = Command::new(ZEROCAM)
        .args([
            "serve",
            "/dev/video0",
            "--format",
            "NV12",
            "--size",
            "640x360",
        ])
        .args(["--fps", "15", "--buffers", "8", "--socket"])
        .arg(&socket)
        .args(["--zenoh", "--topic", "rt/lab", "--h264", "none"])
        .args(["--listen", &format!("tcp/127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut out, "serving at");
    let line = read_until(&mut out, "publishing on Zenoh");
    assert!(line.contains("rt/lab/jpeg"), "{line}");

    let mut local = Subscriber::connect(&socket).unwrap();
    let mut remote = ZenohSource::new(ZenohSourceConfig {
        options: ZenohOptions {
            connect: vec![format!("tcp/127.0.0.1:{port}")],
            ..ZenohOptions::default()
        },
        first_sample: WAIT,
        ..ZenohSourceConfig::new("rt/lab/jpeg")
    })
    .unwrap();
    let f = remote.stream_format();
    assert_eq!((f.width, f.height, f.format.name), (640, 360, "RGB24"));
    let mut local_seq = Vec::new();
    let mut remote_seq = Vec::new();
    for _ in 0..20 {
        local_seq.push(local.next_frame(WAIT).unwrap().sequence());
        let frame = remote.next_frame(WAIT).unwrap();
        // vivid's own sequence numbers, carried in the attachment.
        assert!(!frame.synthesized().sequence);
        remote_seq.push(frame.sequence());
    }
    // One capture: both see vivid's sequence numbers, rising.
    assert!(local_seq.windows(2).all(|w| w[1] > w[0]), "{local_seq:?}");
    assert!(remote_seq.windows(2).all(|w| w[1] > w[0]), "{remote_seq:?}");
    let overlap = local_seq.iter().any(|s| remote_seq.contains(s));
    assert!(overlap, "the same frames: {local_seq:?} {remote_seq:?}");
    let st = remote.stats();
    assert_eq!((st.rejected, st.late), (0, 0), "{st:?}");
    drop(local);
    drop(remote);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&socket);
}
