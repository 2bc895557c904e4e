//! The publisher and a subscriber in one thread: once every buffer went
//! out, lending a frame, receiving it, and releasing it allocate nothing on
//! either side.

use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::share::Subscriber;
use crate::{PatternConfig, PatternSource};

fn socket(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zerocam-unit-{}-{name}.sock", std::process::id()))
}

#[test]
fn a_frame_lent_received_and_released_allocates_nothing() {
    let source = PatternSource::new(PatternConfig::new("NV12M".parse().unwrap(), 64, 48)).unwrap();
    let path = socket("alloc");
    let mut publisher = Publisher::new(source, PublisherConfig::new(&path)).unwrap();
    // connect waits for the Welcome, which the publisher sends when it reads
    // the Hello: connect on another thread.
    let handle = std::thread::spawn(move || Subscriber::connect(&path).unwrap());
    while !handle.is_finished() {
        publisher.serve_frame(Duration::from_millis(5)).unwrap();
    }
    let mut sub = handle.join().unwrap();
    let mut step = |publisher: &mut Publisher<PatternSource>| {
        publisher.serve_frame(Duration::from_millis(100)).unwrap();
        let frame = sub.next_frame(Duration::from_secs(1)).unwrap();
        assert_eq!(frame.tensor().plane_count(), 2);
        drop(frame);
    };
    for _ in 0..12 {
        step(&mut publisher); // every buffer's fds go out and are imported
    }
    let before = crate::test_alloc::this_thread();
    for _ in 0..100 {
        step(&mut publisher);
    }
    let allocations = crate::test_alloc::this_thread() - before;
    assert_eq!(allocations, 0, "allocations for 100 frames, both sides");
    let stats = publisher.stats();
    assert!(stats.lent >= 112, "every frame once connected: {stats:?}");
    assert_eq!(
        stats.violations + stats.expired + stats.reclaimed,
        0,
        "{stats:?}"
    );
}
