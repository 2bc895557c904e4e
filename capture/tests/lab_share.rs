//! Frame sharing on vivid in the kernel lab: real dma-bufs from both buffer
//! modes, NV12 and NV12M, exported or allocated read-only; subscriber
//! children (this binary with `--child`) see the publisher's pixels, import
//! each buffer plane once and cannot write; a vivid disconnect mid-stream
//! reaches every client. `harness = false`: see share_common.
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod share_common;
use share_common::*;
mod vivid_common;
use vivid_common::{reload_vivid, MODES};

use std::time::Duration;

use zerocam_capture::{BufferMode, Device, Stream, StreamConfig};

fn stream(path: &str, format: &str, mode: BufferMode) -> Stream {
    let mut d = Device::open(path).unwrap();
    d.set_format(format.parse().unwrap(), 320, 180).unwrap();
    d.set_frame_rate(15.0).unwrap(); // slow clients under emulation: no frame reclaimed early
    let config = StreamConfig {
        buffers: 8,
        mode,
        read_only: true,
        ..Default::default()
    };
    Stream::new(d, config).unwrap()
}

/// NV12 on the single-planar node, NV12M on the multi-planar one, each in
/// MMAP and DMABUF: two clients see the publisher's pixels, import buffers x
/// planes, and a third cannot write.
fn clients_share_vivid_frames_read_only() {
    for (path, format) in [("/dev/video0", "NV12"), ("/dev/video1", "NV12M")] {
        for &mode in MODES {
            let name = format!("vivid{format}{}", mode.name());
            let serving = Serving::start(&name, stream(path, format, mode), |c| {
                c.lease = Duration::from_secs(30);
            });
            let children: Vec<_> = (0..2)
                .map(|_| spawn_child("count", &serving.socket, 20))
                .collect();
            let writer = spawn_child("write", &serving.socket, 1);
            let reports: Vec<_> = children.into_iter().map(finish_child).collect();
            let w = finish_child(writer);
            assert_eq!(w.number("write_refused"), 1, "{name}: {w:?}");
            check_exact_run(&name, serving, reports, 20);
        }
    }
}

/// vivid's Disconnect button mid-stream: the publisher's source fails, every
/// client gets the typed disconnect, and the publisher's run ends with the
/// source's error.
fn a_vivid_disconnect_reaches_every_client() {
    let serving = Serving::start(
        "disconnect",
        stream("/dev/video0", "NV12", BufferMode::Mmap),
        |_| {},
    );
    let waiting = spawn_waiting(&serving.socket, 3);
    std::thread::sleep(Duration::from_millis(500));
    let d = Device::open("/dev/video0").unwrap();
    let button = d.control("Disconnect").unwrap();
    d.set_control(button.id, 1).unwrap();
    assert_all_disconnected(waiting);
    let (_, ended) = serving.join();
    let e = ended.unwrap_err();
    assert!(e.contains("disconnected"), "{e}");
    drop(d);
    reload_vivid();
}

fn main() {
    main_with(&[
        (
            "lab_share_clients_share_vivid_frames_read_only",
            clients_share_vivid_frames_read_only,
        ),
        (
            "lab_share_a_vivid_disconnect_reaches_every_client",
            a_vivid_disconnect_reaches_every_client,
        ),
    ]);
}
