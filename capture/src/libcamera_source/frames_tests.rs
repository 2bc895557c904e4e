//! The source's side of a libcamera stream without libcamera: buffers are
//! shared-memory files, the libcamera thread is a log of re-queue requests
//! and a channel of events.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;
use zerocam_cache::ImportCache;
use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

use super::*;
use crate::frame::slot::SlotState;
use crate::libcamera_source::events::BufferPlanes;
use crate::libcamera_source::layout::{buffer_layout, LcPlane};
use crate::libcamera_source::metadata::RawMetadata;
use crate::{CaptureFormat, PlaneLayout, StreamFormat};

const KEY: CamKey = 7;
const SHORT: Duration = Duration::from_millis(20);

type Log = Arc<Mutex<Vec<(CamKey, usize)>>>;

/// A 4x4 GREY buffer in its own shared-memory file, with its bytes set to `fill`.
fn buffer(fill: u8) -> (BufferPlanes, Tensor<u8>) {
    let t = Tensor::<u8>::new(&[16], Some(TensorMemory::Shm), None).unwrap();
    t.map_write().unwrap().fill(fill);
    let fd = t.fd().unwrap().try_clone_to_owned().unwrap();
    let planes = vec![LcPlane {
        file: t.fd_identity().unwrap(),
        offset: 0,
        length: 16,
    }];
    let layout = buffer_layout(PixelFormat::Grey, &planes).unwrap();
    (
        BufferPlanes {
            fds: vec![fd],
            planes,
            layout,
        },
        t,
    )
}

/// A source of `n` buffers, all queued (as after open), and its re-queue log.
fn source(n: usize) -> (Arc<Shared>, Log, Vec<Tensor<u8>>) {
    let (buffers, keep): (Vec<_>, Vec<_>) = (0..n).map(|i| buffer(i as u8)).unzip();
    let format: CaptureFormat = "GREY".parse().unwrap();
    let format = StreamFormat {
        format,
        width: 4,
        height: 4,
        planes: vec![PlaneLayout {
            bytes_per_line: 4,
            size: 16,
        }],
        color: zerocam_tensor::ColorSpec::BT709_FULL,
    };
    let log: Log = Arc::default();
    let to = log.clone();
    let requeue: Requeuer = Box::new(move |key, index| {
        to.lock().unwrap().push((key, index));
        true
    });
    let state = State::new(KEY, buffers, ImportCache::new(2 * n)).unwrap();
    let shared = Arc::new(Shared::new(
        "libcamera:Fake0".into(),
        format,
        requeue,
        state,
    ));
    (shared, log, keep)
}

fn done(index: usize, outcome: Outcome) -> Event {
    Event::Completion(Completion {
        index,
        outcome,
        completed: Duration::from_millis(index as u64 + 1),
    })
}

fn frame_of(index: usize) -> Event {
    done(index, Outcome::Frame(RawMetadata::default()))
}

/// Whether buffer `$index` of `$sh` is in the [`SlotState`] `$state`.
macro_rules! in_state {
    ($sh:expr, $index:expr, $state:pat) => {
        matches!($sh.lock().slots[$index].core.state(), $state)
    };
}

/// Whether the next frame of `sh` from `rx` times out.
fn times_out(sh: &Arc<Shared>, rx: &Receiver<Event>) -> bool {
    matches!(sh.next_frame(rx, SHORT), Err(CaptureError::Timeout { .. }))
}

fn send(tx: &Sender<Event>, e: Event) {
    tx.send(e).unwrap();
}

#[test]
fn a_queued_buffers_tensor_cannot_be_mapped() {
    let (sh, log, files) = source(2);
    assert!(sh.lock().slots.iter().all(|s| s.core.is_queued()));
    assert!(matches!(
        files[0].map_read(),
        Err(zerocam_tensor::Error::MapConflict { .. })
    ));
    let frame = sh.event(frame_of(0), std::time::Instant::now()).unwrap();
    assert!(in_state!(sh, 0, SlotState::Held));
    assert_eq!(
        frame.color_spec(),
        zerocam_tensor::ColorSpec::BT709_FULL,
        "the stream's colour"
    );
    assert_eq!(
        frame.tensor().map_read().unwrap()[0],
        0,
        "completed: readable"
    );
    let t = frame.tensor().clone();
    drop(frame);
    assert_eq!(*log.lock().unwrap(), [(KEY, 0)]);
    assert!(in_state!(sh, 0, SlotState::Queued(_)));
    assert!(
        matches!(t.map_read(), Err(zerocam_tensor::Error::MapConflict { .. })),
        "queued again: the camera borrows it"
    );
}

#[test]
fn a_buffer_whose_tensor_is_mapped_is_not_queued_until_the_map_drops() {
    let (sh, log, _files) = source(2);
    let (tx, rx) = channel();
    send(&tx, frame_of(0));
    let frame = sh.next_frame(&rx, SHORT).unwrap();
    let t = frame.tensor().clone();
    let map = t.map_read().unwrap();
    drop(frame);
    assert!(in_state!(sh, 0, SlotState::Pending), "mapped: not queued");
    assert!(log.lock().unwrap().is_empty());
    // Still mapped: next_frame does not queue it either.
    assert!(times_out(&sh, &rx));
    assert!(log.lock().unwrap().is_empty());
    drop(map);
    assert!(times_out(&sh, &rx));
    assert_eq!(
        *log.lock().unwrap(),
        [(KEY, 0)],
        "queued once the map dropped"
    );
    assert!(in_state!(sh, 0, SlotState::Queued(_)));
    assert!(t.map_read().is_err());
}

#[test]
fn a_failed_request_is_counted_given_back_and_capture_goes_on() {
    let (sh, log, _files) = source(3);
    let (tx, rx) = channel();
    send(&tx, done(0, Outcome::Failed("cancelled")));
    send(&tx, frame_of(1));
    let e = sh.next_frame(&rx, SHORT).unwrap_err();
    assert!(
        matches!(&e, CaptureError::RequestFailed { index: 0, status, .. } if status == "cancelled"),
        "{e}"
    );
    assert_eq!(sh.lock().counters.errors, 1);
    assert_eq!(*log.lock().unwrap(), [(KEY, 0)], "its request queued again");
    assert!(in_state!(sh, 0, SlotState::Queued(_)));
    let f = sh.next_frame(&rx, SHORT).unwrap();
    assert_eq!((f.buffer_index(), f.sequence()), (1, 0));
    assert_eq!(sh.lock().counters.frames, 1);
}

#[test]
fn a_failed_requeue_is_retried_by_the_next_frame() {
    let (sh, log, _files) = source(2);
    let (tx, rx) = channel();
    send(&tx, done(1, Outcome::QueueFailed(Errno::EIO)));
    let e = sh.next_frame(&rx, SHORT).unwrap_err();
    assert!(
        matches!(&e, CaptureError::RequestFailed { index: 1, status, .. } if status.contains("EIO")),
        "{e}"
    );
    assert_eq!(sh.lock().counters.errors, 1);
    assert!(
        in_state!(sh, 1, SlotState::Pending),
        "not queued: not borrowed"
    );
    send(&tx, frame_of(0));
    let f = sh.next_frame(&rx, SHORT).unwrap();
    assert_eq!(f.buffer_index(), 0);
    assert_eq!(*log.lock().unwrap(), [(KEY, 1)], "buffer 1 queued again");
    assert!(in_state!(sh, 1, SlotState::Queued(_)));
    // Every buffer failing to queue is an error each time, never a silent timeout.
    drop(f);
    send(&tx, done(0, Outcome::QueueFailed(Errno::EIO)));
    send(&tx, done(1, Outcome::QueueFailed(Errno::EIO)));
    assert!(sh.next_frame(&rx, SHORT).is_err());
    assert!(matches!(
        sh.next_frame(&rx, SHORT),
        Err(CaptureError::RequestFailed { .. })
    ));
    assert_eq!(sh.lock().counters.errors, 3);
}

#[test]
fn holding_every_buffer_is_no_free_buffer() {
    let (sh, _log, _files) = source(2);
    let (tx, rx) = channel();
    send(&tx, frame_of(0));
    send(&tx, frame_of(1));
    let a = sh.next_frame(&rx, SHORT).unwrap();
    let _b = sh.next_frame(&rx, SHORT).unwrap();
    assert!(matches!(
        sh.next_frame(&rx, SHORT),
        Err(CaptureError::NoFreeBuffer { buffers: 2, .. })
    ));
    drop(a);
    assert!(times_out(&sh, &rx));
}

#[test]
fn a_disconnect_is_an_error_and_ends_the_cameras_borrows() {
    let (sh, log, files) = source(2);
    let (tx, rx) = channel();
    send(&tx, frame_of(0));
    let held = sh.next_frame(&rx, SHORT).unwrap();
    send(&tx, Event::Disconnected);
    let e = sh.next_frame(&rx, SHORT).unwrap_err();
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
    assert!(files[1].map_read().is_ok(), "no longer borrowed");
    assert!(matches!(
        sh.next_frame(&rx, SHORT),
        Err(CaptureError::Disconnected { .. })
    ));
    drop(held);
    assert!(
        log.lock().unwrap().is_empty(),
        "nothing queued after a disconnect"
    );
}

#[test]
fn stopped_buffers_are_idle_and_start_queues_the_unmapped_ones() {
    let (sh, log, files) = source(3);
    let (tx, rx) = channel();
    send(&tx, frame_of(0));
    let held = sh.next_frame(&rx, SHORT).unwrap();
    {
        let mut st = sh.lock();
        sh.stopped(&mut st);
        assert!(st.slots.iter().all(|s| !s.core.is_queued()));
    }
    assert!(in_state!(sh, 0, SlotState::Held));
    let map = files[2].map_read().unwrap();
    let queue = {
        let mut st = sh.lock();
        sh.prepare_start(&mut st)
    };
    assert_eq!(queue, [1], "held and mapped buffers are not queued");
    assert!(in_state!(sh, 2, SlotState::Pending));
    drop(map);
    drop(held);
    assert!(in_state!(sh, 0, SlotState::Idle), "stopped: kept idle");
    assert_eq!(*log.lock().unwrap(), [(KEY, 0)]);
}

#[test]
fn a_reconfigured_state_goes_on_counting_from_the_old_one() {
    let (old, _log, _files) = source(2);
    let (tx, rx) = channel();
    for i in [0, 1, 0] {
        send(&tx, frame_of(i));
        drop(old.next_frame(&rx, SHORT).unwrap());
    }
    send(&tx, done(1, Outcome::Failed("cancelled")));
    assert!(old.next_frame(&rx, SHORT).is_err());
    let before = old.lock().cache_stats();
    assert_eq!((before.misses, before.hits, before.live), (2, 1, 2));

    // What reconfigure does: a new state for the new buffers goes on from the old.
    let (new, _log, _files) = source(2);
    new.lock().go_on_from(&old.lock());
    {
        let st = new.lock();
        let s = st.cache_stats();
        assert_eq!((s.misses, s.hits, s.live), (2, 1, 0), "a new cache");
        assert_eq!((st.counters.frames, st.counters.errors), (3, 1));
    }
    let (tx, rx) = channel();
    send(&tx, frame_of(0));
    drop(new.next_frame(&rx, SHORT).unwrap());
    let st = new.lock();
    let s = st.cache_stats();
    assert_eq!((s.misses, s.hits, s.live, st.counters.frames), (3, 1, 1, 4));
}
