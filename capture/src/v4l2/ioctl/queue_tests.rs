//! Host tests of the V4L2 queue logic (`queue.rs`'s `Queue`) on a
//! [`FakeDevice`]: the same behaviour `tests/lab_capture*.rs` asserts on
//! vivid, where the lab keeps testing the real driver. The buffers are
//! memfds, so device borrows and CPU maps are the real ones.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use std::sync::Arc;
use std::time::Instant;

use nix::errno::Errno;
use zerocam_tensor::{Tensor, TensorMemory};

use super::fake::{Dq, FakeDevice, Queued};
use super::{DqbufError, IoctlError, QbufError};
use crate::frame::plane_memory::PlaneMemory;
use crate::frame::slot::{Slot, SlotState};
use crate::v4l2::plan::DriverMinimum;
use crate::v4l2::queue::Queue;
use crate::v4l2::BufferPlan;
use crate::{BufferMode, CaptureError, Frame, PlaneLayout, StreamFormat};

const BUFFERS: u32 = 4;
const SIZE: u32 = 64 * 4;

/// A started stream of 4 GREY 64x4 memfd buffers on a fake device.
fn stream(mode: BufferMode) -> Arc<Queue<FakeDevice>> {
    let sh = unstarted(mode);
    sh.start(&mut sh.lock()).unwrap();
    sh
}

fn unstarted(mode: BufferMode) -> Arc<Queue<FakeDevice>> {
    let format = StreamFormat {
        format: "GREY".parse().unwrap(),
        width: 64,
        height: 4,
        planes: vec![PlaneLayout {
            bytes_per_line: 64,
            size: SIZE,
        }],
        color: Default::default(),
    };
    let slots = (0..BUFFERS)
        .map(|i| {
            let t = Tensor::<u8>::new(
                &[SIZE as usize],
                Some(TensorMemory::Shm),
                Some(&format!("fake:{i}")),
            )
            .unwrap();
            Slot::new(vec![PlaneMemory::owned(t).unwrap()])
        })
        .collect();
    let plan = BufferPlan::new(BUFFERS, 1, DriverMinimum::Absent)
        .unwrap()
        .granted(BUFFERS)
        .unwrap();
    let device = FakeDevice::new(&[SIZE]);
    Arc::new(Queue::new(device, format, plan, mode, slots, 16))
}

/// What `Stream::next_frame` does, without the poll: the fake has a frame
/// whenever a buffer is queued.
fn next(sh: &Arc<Queue<FakeDevice>>) -> crate::Result<Frame> {
    sh.ready_to_dequeue()?;
    Ok(sh
        .dequeue(Instant::now())?
        .expect("a queued buffer comes back"))
}

/// The variant name, ioctl and errno of an `Ioctl` or `StreamFailed` error.
fn failed_ioctl(e: &CaptureError) -> Option<(&str, &str, Errno)> {
    match *e {
        CaptureError::Ioctl { ioctl, errno, .. } => Some(("Ioctl", ioctl, errno)),
        CaptureError::StreamFailed { ioctl, errno, .. } => Some(("StreamFailed", ioctl, errno)),
        _ => None,
    }
}

fn queued(sh: &Queue<FakeDevice>) -> Vec<u32> {
    sh.device.state().queued.iter().copied().collect()
}

fn none_borrowed(sh: &Queue<FakeDevice>) -> bool {
    sh.lock().slots.iter().all(|s| !s.is_queued())
}

#[test]
fn start_queues_every_buffer_and_dequeues_in_order() {
    let sh = stream(BufferMode::Mmap);
    assert_eq!(queued(&sh), [0, 1, 2, 3]);
    let f = next(&sh).unwrap();
    assert_eq!(
        (f.buffer_index(), f.sequence(), f.bytes_used()),
        (0, 0, SIZE as usize)
    );
    drop(f);
    assert_eq!(queued(&sh), [1, 2, 3, 0], "dropped frame queued again");
    let st = sh.device.state();
    assert!(
        st.qbufs.iter().all(|q| q.dmabuf.is_none()),
        "MMAP passes no fds"
    );
    assert_eq!((st.streamons, st.streamoffs), (1, 0));
}

#[test]
fn nothing_done_yet_is_not_an_error() {
    let sh = stream(BufferMode::Mmap);
    sh.device.state().queued.clear(); // the driver has nothing done
    assert!(sh.dequeue(Instant::now()).unwrap().is_none());
}

#[test]
fn dmabuf_mode_queues_each_plane_fd_and_length() {
    let sh = stream(BufferMode::DmaBuf);
    let fds: Vec<i32> = {
        use std::os::fd::AsRawFd;
        let st = sh.lock();
        st.slots
            .iter()
            .map(|s| s.planes[0].fd().unwrap().as_raw_fd())
            .collect()
    };
    let st = sh.device.state();
    let got: Vec<Queued> = st.qbufs.clone();
    let want: Vec<Queued> = (0..BUFFERS)
        .map(|i| Queued {
            index: i,
            dmabuf: Some(vec![(fds[i as usize], SIZE)]),
        })
        .collect();
    assert_eq!(got, want);
}

/// As `lab_capture_a_mapped_buffer_is_not_queued_and_a_queued_one_not_mapped`.
#[test]
fn a_mapped_buffer_waits_and_is_queued_once_the_map_drops() {
    let sh = stream(BufferMode::Mmap);
    let first = next(&sh).unwrap();
    let (kept, index) = (first.tensor().clone(), first.buffer_index() as u32);
    let map = kept.map_read().unwrap();
    drop(first); // its buffer waits: the map is alive
    assert!(!queued(&sh).contains(&index));
    for _ in 0..12 {
        assert_ne!(next(&sh).unwrap().buffer_index() as u32, index);
    }
    assert!(!queued(&sh).contains(&index), "not queued under a live map");
    drop(map);
    sh.ready_to_dequeue().unwrap(); // queues what waited
    assert!(queued(&sh).contains(&index), "queued once unmapped");
    let e = kept.map_read().unwrap_err(); // queued: the driver owns it
    assert!(
        matches!(e, zerocam_tensor::Error::MapConflict { .. }),
        "{e}"
    );
}

/// As `a_streamon_error_gives_the_device_back_and_start_can_be_retried`.
#[test]
fn a_streamon_error_leaves_nothing_queued_and_start_can_be_retried() {
    let sh = unstarted(BufferMode::DmaBuf);
    sh.device.state().streamon_error = Some(IoctlError::Other(Errno::EINVAL));
    let e = sh.start(&mut sh.lock()).unwrap_err();
    let want = ("Ioctl", "VIDIOC_STREAMON", Errno::EINVAL);
    assert_eq!(failed_ioctl(&e), Some(want), "{e}");
    assert_eq!(
        sh.device.state().streamoffs,
        1,
        "STREAMOFF cancelled the queue"
    );
    assert!(queued(&sh).is_empty());
    assert!(none_borrowed(&sh), "no device borrow left behind");
    assert!(!sh.lock().streaming);
    sh.start(&mut sh.lock()).unwrap();
    assert_eq!(queued(&sh), [0, 1, 2, 3]);
    next(&sh).unwrap();
}

#[test]
fn a_qbuf_error_during_start_leaves_nothing_queued() {
    let sh = unstarted(BufferMode::Mmap);
    sh.device.state().qbuf_script = [Ok(()), Ok(()), Err(QbufError::Other(Errno::ENOMEM))].into();
    let e = sh.start(&mut sh.lock()).unwrap_err();
    let want = ("Ioctl", "VIDIOC_QBUF", Errno::ENOMEM);
    assert_eq!(failed_ioctl(&e), Some(want), "{e}");
    let st = sh.device.state();
    assert_eq!((st.streamons, st.streamoffs), (0, 1));
    assert!(st.queued.is_empty(), "the two queued were given back");
    drop(st);
    assert!(none_borrowed(&sh));
    sh.start(&mut sh.lock()).unwrap();
    assert_eq!(queued(&sh), [0, 1, 2, 3]);
}

#[test]
fn a_failed_requeue_is_reported_by_the_next_dequeue_and_capture_goes_on() {
    let sh = stream(BufferMode::Mmap);
    let f = next(&sh).unwrap();
    let index = f.buffer_index() as u32;
    sh.device.state().qbuf_script = [Err(QbufError::Other(Errno::ENOMEM))].into();
    drop(f);
    let e = next(&sh).unwrap_err();
    let want = ("Ioctl", "VIDIOC_QBUF", Errno::ENOMEM);
    assert_eq!(failed_ioctl(&e), Some(want), "{e}");
    assert!(!queued(&sh).contains(&index));
    for _ in 0..6 {
        next(&sh).unwrap(); // the other three go round
    }
}

/// As `a_fatal_error_met_by_a_requeue_stops_the_stream_too`.
#[test]
fn a_fatal_error_met_by_a_requeue_stops_the_stream_and_start_recovers() {
    let sh = stream(BufferMode::Mmap);
    let held = next(&sh).unwrap();
    sh.device.state().fatal = true;
    drop(held); // VIDIOC_QBUF: EIO, reported by the next call
    let e = next(&sh).unwrap_err();
    let want = ("StreamFailed", "VIDIOC_QBUF", Errno::EIO);
    assert_eq!(failed_ioctl(&e), Some(want), "{e}");
    assert!(matches!(next(&sh), Err(CaptureError::NotStreaming { .. })));
    sh.start(&mut sh.lock()).unwrap();
    for _ in 0..5 {
        next(&sh).unwrap();
    }
    assert_eq!(sh.lock().cache.stats().misses, u64::from(BUFFERS));
}

/// As `a_fatal_streaming_error_stops_the_stream_and_a_restart_recovers`.
#[test]
fn a_fatal_dqbuf_error_stops_the_stream_and_start_recovers_with_the_same_imports() {
    let sh = stream(BufferMode::Mmap);
    let f = next(&sh).unwrap();
    let kept = f.tensor().clone();
    drop(f);
    assert!(kept.map_read().is_err(), "a queued buffer is not mapped");
    sh.device.state().dqbuf_script = [Dq::Fail(DqbufError::Io)].into();
    let e = next(&sh).unwrap_err();
    let want = ("StreamFailed", "VIDIOC_DQBUF", Errno::EIO);
    assert_eq!(failed_ioctl(&e), Some(want), "{e}");
    assert_eq!(e.errno(), Some(Errno::EIO));
    assert!(e
        .to_string()
        .starts_with("/dev/fake: the driver reported a fatal streaming error"));
    assert!(matches!(next(&sh), Err(CaptureError::NotStreaming { .. })));
    assert_eq!(sh.device.state().streamoffs, 1, "the stream stopped itself");
    drop(kept.map_read().expect("STREAMOFF gave every buffer back"));
    sh.stop(&mut sh.lock()).unwrap(); // a no-op now
    assert_eq!(sh.device.state().streamoffs, 1);
    sh.start(&mut sh.lock()).unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..8 {
        seen.insert(next(&sh).unwrap().buffer_index());
    }
    assert_eq!(seen.len(), BUFFERS as usize, "every buffer came round");
    let cache = sh.lock().cache.stats();
    assert_eq!((cache.misses, cache.invalidated), (u64::from(BUFFERS), 0));
}

/// As `a_disconnect_mid_stream_is_typed_and_releases_every_buffer`.
#[test]
fn a_disconnect_releases_every_buffer_and_start_reports_it() {
    let sh = stream(BufferMode::DmaBuf);
    let held = next(&sh).unwrap();
    next(&sh).unwrap();
    sh.device.state().disconnected = true;
    let e = next(&sh).unwrap_err();
    assert!(
        matches!(
            e,
            CaptureError::Disconnected {
                errno: Errno::ENODEV,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("/dev/fake: device disconnected"),
        "{e}"
    );
    {
        let st = sh.lock();
        assert_eq!(st.cache.stats().live, 0, "the cache let go of every import");
        assert!(
            st.slots
                .iter()
                .all(|s| matches!(s.state(), SlotState::Released)),
            "every buffer released"
        );
    }
    assert!(matches!(
        sh.start(&mut sh.lock()),
        Err(CaptureError::Disconnected { .. })
    ));
    drop(
        held.tensor()
            .map_read()
            .expect("a held frame keeps its buffer"),
    );
    drop(held); // nothing to queue it to
    assert!(matches!(next(&sh), Err(CaptureError::NotStreaming { .. })));
}

/// As `lab_capture_hold_n_minus_one_frames_and_all_n`.
#[test]
fn holding_n_minus_one_captures_on_and_holding_n_is_no_free_buffer() {
    let sh = stream(BufferMode::Mmap);
    let held: Vec<_> = (0..BUFFERS - 1).map(|_| next(&sh).unwrap()).collect();
    for _ in 0..20 {
        next(&sh).unwrap(); // capture goes on with one buffer
    }
    let last = next(&sh).unwrap();
    let e = next(&sh).unwrap_err();
    assert!(
        matches!(e, CaptureError::NoFreeBuffer { buffers: 4, .. }),
        "{e}"
    );
    drop(last);
    drop(held);
    for _ in 0..8 {
        next(&sh).unwrap();
    }
}

/// As `dropped_buffers_are_counted` (the soak's accounting).
#[test]
fn sequence_gaps_count_as_dropped() {
    let sh = stream(BufferMode::Mmap);
    sh.device.state().dqbuf_script = [Dq::Drop(0), Dq::Drop(3), Dq::Drop(0), Dq::Drop(2)].into();
    let seqs: Vec<u32> = (0..5).map(|_| next(&sh).unwrap().sequence()).collect();
    assert_eq!(seqs, [0, 4, 5, 8, 9]);
    let st = sh.lock();
    assert_eq!(
        (st.counters.frames, st.counters.dropped),
        (5, 5),
        "gaps of 3 and 2"
    );
}

/// As `a_buffer_error_flag_is_typed_and_capture_goes_on`.
#[test]
fn a_flagged_buffer_is_requeued_and_reported() {
    let sh = stream(BufferMode::Mmap);
    sh.device.state().dqbuf_script = [Dq::Flagged].into();
    let e = next(&sh).unwrap_err();
    assert!(
        matches!(
            e,
            CaptureError::BufferError {
                index: 0,
                sequence: 0,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(queued(&sh), [1, 2, 3, 0], "re-queued at once");
    for _ in 0..5 {
        next(&sh).unwrap();
    }
    assert_eq!(sh.lock().counters.errors, 1);
}

/// A driver's index is not trusted.
#[test]
fn a_dequeued_index_out_of_range_is_a_typed_error() {
    let sh = stream(BufferMode::Mmap);
    sh.device.state().dqbuf_script = [Dq::Index(BUFFERS)].into();
    let e = next(&sh).unwrap_err();
    let want = (
        "Ioctl",
        "VIDIOC_DQBUF (buffer index out of range)",
        Errno::EINVAL,
    );
    assert_eq!(failed_ioctl(&e), Some(want), "{e}");
    next(&sh).unwrap(); // the stream goes on
}
