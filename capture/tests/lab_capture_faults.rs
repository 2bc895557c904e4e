//! Fault injection through vivid's own controls, in the kernel lab. One test
//! in its own binary: the faults are sequential, and the last one (disconnect)
//! unregisters the device, so the test reloads vivid as the lab loaded it.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod vivid_common;
use vivid_common::{config, frames, open_fds, press, reload_vivid, AFTER_MMAP, WAIT};

use nix::errno::Errno;
use zerocam_capture::{CaptureError, Device, FrameSource, Stream, StreamConfig};

fn device(path: &str) -> Device {
    let mut d = Device::open(path).unwrap();
    d.set_format("NV12".parse().unwrap(), 320, 180).unwrap();
    d.set_frame_rate(60.0).unwrap();
    d
}

fn dropped_buffers_are_counted() {
    let d = device("/dev/video0");
    let pct = d.control("Percentage of Dropped Buffers").unwrap();
    d.set_control(pct.id, 50).unwrap();
    let mut s = Stream::new(d, StreamConfig::default()).unwrap();
    frames(&mut s, 40);
    let st = s.stats();
    println!("50% dropped buffers: {st:?}");
    assert!(st.dropped >= 10, "half the buffers dropped: {st:?}");
    s.device().set_control(pct.id, 0).unwrap();
}

fn a_buffer_error_flag_is_typed_and_capture_goes_on() {
    let mut s = Stream::new(device("/dev/video0"), StreamConfig::default()).unwrap();
    s.next_frame(WAIT).unwrap();
    press(s.device(), "Inject V4L2_BUF_FLAG_ERROR");
    let mut seen = None;
    for _ in 0..10 {
        match s.next_frame(WAIT) {
            Ok(_) => {}
            Err(e @ CaptureError::BufferError { .. }) => {
                seen = Some(e.to_string());
                break;
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    let msg = seen.expect("a flagged buffer");
    assert!(msg.starts_with("/dev/video0: buffer "), "{msg}");
    frames(&mut s, 5);
    assert_eq!(s.stats().buffer_errors, 1);
}

/// vivid's fatal error is vb2's `vb2_queue_error`: every `DQBUF` answers
/// `EIO` until `STREAMOFF`. The stream reports `StreamFailed`, stops itself
/// (the driver gives every buffer back), and a `start` recovers with the same
/// imports.
fn a_fatal_streaming_error_stops_the_stream_and_a_restart_recovers() {
    let mut s = Stream::new(device("/dev/video1"), StreamConfig::default()).unwrap();
    let f = s.next_frame(WAIT).unwrap();
    let queued = f.tensor().clone();
    drop(f); // queued again: the driver owns it
    assert!(queued.map_read().is_err(), "a queued buffer is not mapped");
    let imports = s.stats().cache.misses;
    press(s.device(), "Inject Fatal Streaming Error");
    let e = (0..10)
        .find_map(|_| s.next_frame(WAIT).err())
        .expect("an error after the injection");
    assert!(
        matches!(
            e,
            CaptureError::StreamFailed {
                ioctl: "VIDIOC_DQBUF",
                errno: Errno::EIO,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.errno(), Some(Errno::EIO));
    assert!(
        e.to_string()
            .starts_with("/dev/video1: the driver reported a fatal streaming error"),
        "{e}"
    );
    assert!(
        matches!(s.next_frame(WAIT), Err(CaptureError::NotStreaming { .. })),
        "the stream stopped itself"
    );
    drop(queued.map_read().expect("STREAMOFF gave every buffer back"));
    s.stop().unwrap(); // a no-op now
    s.start().unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..8 {
        seen.insert(s.next_frame(WAIT).unwrap().buffer_index());
    }
    assert_eq!(seen.len(), s.stats().buffers, "every buffer came round");
    let st = s.stats();
    println!("after a fatal error and a restart: {st:?}");
    assert_eq!(
        (imports, st.cache.misses, st.cache.invalidated),
        (1, st.buffers as u64, 0),
        "one import before the error, each buffer imported once, none again by the restart"
    );
}

/// A frame dropped after the fatal error: its `QBUF` meets the error first,
/// and the stream stops just the same.
fn a_fatal_error_met_by_a_requeue_stops_the_stream_too() {
    let mut s = Stream::new(device("/dev/video1"), StreamConfig::default()).unwrap();
    let held = s.next_frame(WAIT).unwrap();
    press(s.device(), "Inject Fatal Streaming Error");
    drop(held); // VIDIOC_QBUF: EIO, reported by the next call
    let e = s.next_frame(WAIT).unwrap_err();
    assert!(
        matches!(
            e,
            CaptureError::StreamFailed {
                ioctl: "VIDIOC_QBUF",
                errno: Errno::EIO,
                ..
            }
        ),
        "{e}"
    );
    assert!(matches!(
        s.next_frame(WAIT),
        Err(CaptureError::NotStreaming { .. })
    ));
    s.start().unwrap();
    frames(&mut s, 5);
    assert_eq!(s.stats().cache.misses, s.stats().buffers as u64);
}

/// A `STREAMON` error fails `Stream::new`, which gives the device back with
/// its buffers freed: a stream in the other buffer mode runs on it (the
/// driver would refuse another memory type while MMAP buffers were exported;
/// on the arm64 lab, which has no DMA heap for `dmabuf` mode, a new `mmap`
/// stream).
fn a_streamon_error_gives_the_device_back_and_start_can_be_retried() {
    let d = device("/dev/video1");
    press(&d, "Inject VIDIOC_STREAMON Error");
    let e = Stream::new(d, StreamConfig::default()).unwrap_err();
    assert!(
        matches!(
            e.error,
            CaptureError::Ioctl {
                ioctl: "VIDIOC_STREAMON",
                ..
            }
        ),
        "{e}"
    );
    let mut s = Stream::new(*e.device, config(|c| c.mode = AFTER_MMAP)).unwrap();
    s.next_frame(WAIT).unwrap();
    // The same stream: a failed start cancels what it queued, so a retry works.
    s.stop().unwrap();
    press(s.device(), "Inject VIDIOC_STREAMON Error");
    let e = s.start().unwrap_err();
    assert!(
        matches!(
            e,
            CaptureError::Ioctl {
                ioctl: "VIDIOC_STREAMON",
                ..
            }
        ),
        "{e}"
    );
    s.start().unwrap();
    frames(&mut s, 5);
}

fn a_disconnect_mid_stream_is_typed_and_releases_every_buffer() {
    let before = open_fds();
    let mut s = Stream::new(device("/dev/video0"), StreamConfig::default()).unwrap();
    let held = s.next_frame(WAIT).unwrap();
    s.next_frame(WAIT).unwrap();
    press(s.device(), "Disconnect");
    let e = (0..10)
        .find_map(|_| s.next_frame(WAIT).err())
        .expect("an error after the disconnect");
    assert!(matches!(e, CaptureError::Disconnected { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("/dev/video0: device disconnected"),
        "{e}"
    );
    assert_eq!(s.stats().cache.live, 0, "the cache let go of every import");
    assert!(matches!(s.start(), Err(CaptureError::Disconnected { .. })));
    // Only the held frame's buffer and the device fd are left, until they drop.
    drop(held);
    drop(s);
    assert_eq!(open_fds(), before, "every buffer fd closed");
}

#[test]
fn lab_capture_faults_injected_by_vivid() {
    dropped_buffers_are_counted();
    a_buffer_error_flag_is_typed_and_capture_goes_on();
    a_fatal_streaming_error_stops_the_stream_and_a_restart_recovers();
    a_fatal_error_met_by_a_requeue_stops_the_stream_too();
    a_streamon_error_gives_the_device_back_and_start_can_be_retried();
    a_disconnect_mid_stream_is_typed_and_releases_every_buffer();
    reload_vivid();
}
