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

/// A client whose whole `Hello` came before 60 silent connections were
/// accepted in the same step (one step accepts at most `max_pending` +
/// `max_clients`, 64) is welcomed: the connections pushed out past
/// `max_pending` are silent ones, not the one that spoke first (the oldest).
#[test]
fn a_hello_among_a_flood_of_silent_connections_is_welcomed() {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    use crate::share::wire::ClientMessage;

    let source = PatternSource::new(PatternConfig::new("NV12".parse().unwrap(), 64, 48)).unwrap();
    let path = socket("flood");
    let mut publisher = Publisher::new(source, PublisherConfig::new(&path)).unwrap();
    let mut first = UnixStream::connect(&path).unwrap();
    first
        .write_all(ClientMessage::Hello { max_leases: 1 }.encode().as_bytes())
        .unwrap();
    let silent: Vec<UnixStream> = (0..60)
        .map(|_| UnixStream::connect(&path).unwrap())
        .collect();
    publisher.serve_frame(Duration::from_millis(100)).unwrap();
    let stats = publisher.stats();
    assert_eq!(stats.connections, 61, "{stats:?}");
    assert_eq!(stats.clients, 1, "the first client welcomed: {stats:?}");
    assert_eq!(stats.pending_dropped, 61 - 32, "{stats:?}");
    assert_eq!(stats.pending, 31, "{stats:?}");
    // Its first message is the Welcome (kind 0x101), not a Goodbye.
    first
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut header = [0u8; 12];
    first.read_exact(&mut header).unwrap();
    assert_eq!(&header[..4], b"ZCSH");
    assert_eq!(
        u16::from_le_bytes([header[6], header[7]]),
        0x101,
        "{header:02x?}"
    );
    drop(silent);
}
