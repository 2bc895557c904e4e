//! Zenoh when things go wrong: a publisher killed and restarted under a
//! subscriber, samples that are not what the topic carries, and a
//! subscriber that stops reading while the publisher goes on. Loopback only,
//! as the loopback tests: zerocam's default session (multicast scouting and
//! gossip off) and every endpoint `tcp/127.0.0.1:PORT` on a port the test
//! picked.
#![allow(clippy::unwrap_used)]

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zerocam_capture::ros::{CdrError, CompressedImage, Header, Message, Time};
use zerocam_capture::zenoh_source::zenoh::qos::CongestionControl;
use zerocam_capture::zenoh_source::zenoh::Wait;
use zerocam_capture::zenoh_source::{open_session, Role, ZenohError, ZenohOptions};
use zerocam_capture::{
    CaptureError, FrameSource, PatternConfig, PatternSource, StreamFormat, StreamStats,
    ZenohSource, ZenohSourceConfig,
};
use zerocam_net::zenoh::{ZenohPublisher, ZenohPublisherConfig};

mod common;

use common::free_port;

const BIN: &str = env!("CARGO_BIN_EXE_zerocam");

fn endpoint(port: u16) -> String {
    format!("tcp/127.0.0.1:{port}")
}

/// zerocam's default session, connecting to `port` only.
fn connect(port: u16) -> ZenohOptions {
    ZenohOptions {
        connect: vec![endpoint(port)],
        ..ZenohOptions::default()
    }
}

/// zerocam's default session, listening on `port` only.
fn listen(port: u16) -> ZenohOptions {
    ZenohOptions {
        listen: vec![endpoint(port)],
        ..ZenohOptions::default()
    }
}

/// `zerocam serve pattern --zenoh` at 30 fps under `rt/PREFIX`, until
/// killed.
struct Server(Child);

impl Server {
    fn start(port: u16, prefix: &str) -> Server {
        let child = Command::new(BIN)
            .args([
                "serve", "pattern", "--zenoh", "--fps", "30", "--topic", prefix,
            ])
            .args(["--listen", &endpoint(port)])
            .args(["--frames", "1000000"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Server(child)
    }

    /// SIGKILL: no clean close of the session, the peer only sees its TCP
    /// connection go.
    fn kill(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `next_frame` with a bound on how long it may take: a source that does not
/// honour its timeout fails here instead of hanging the test.
fn next_frame(source: &mut ZenohSource, timeout: Duration) -> zerocam_capture::Result<()> {
    let started = Instant::now();
    let result = source.next_frame(timeout).map(drop);
    let took = started.elapsed();
    assert!(
        took < timeout + Duration::from_secs(5),
        "next_frame({timeout:?}) took {took:?}"
    );
    result
}

#[test]
fn a_killed_publisher_is_a_timeout_and_its_restart_is_picked_up() {
    let port = free_port();
    let server = Server::start(port, "rt/restart");
    let mut source = ZenohSource::new(ZenohSourceConfig {
        options: connect(port),
        first_sample: Duration::from_secs(20),
        ..ZenohSourceConfig::new("rt/restart/jpeg")
    })
    .unwrap();
    for _ in 0..30 {
        next_frame(&mut source, Duration::from_secs(5)).unwrap();
    }
    let before = source.stats();
    server.kill();

    // What was queued or in flight when the server died may still come
    // (the subscriber queues 2 samples); after that, nothing.
    let mut leftovers = 0;
    while next_frame(&mut source, Duration::from_secs(1)).is_ok() {
        leftovers += 1;
        assert!(leftovers <= 4, "frames keep coming from a killed server");
    }
    for _ in 0..3 {
        let e = next_frame(&mut source, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, CaptureError::Timeout { .. }), "{e}");
    }

    // The source's session retries its connect endpoint when the link goes
    // (Zenoh peers do with no config: at once, after 1 s, 2 s, then every
    // 4 s, `connect/retry`'s defaults), so a new server on the same port is
    // found without reopening the source.
    let _server = Server::start(port, "rt/restart");
    let restarted = Instant::now();
    let deadline = restarted + Duration::from_secs(30);
    loop {
        match next_frame(&mut source, Duration::from_secs(1)) {
            Ok(()) => break,
            Err(CaptureError::Timeout { .. }) if Instant::now() < deadline => {}
            Err(e) => panic!("no frame within 30 s of the restart: {e}"),
        }
    }
    eprintln!("a frame {:?} after the restart", restarted.elapsed());
    for _ in 0..30 {
        next_frame(&mut source, Duration::from_secs(5)).unwrap();
    }
    let after = source.stats();
    // The new server numbers its samples from 0 again under a new
    // instance: that is neither a loss of millions nor late samples. The
    // bound leaves room for samples a slow reader lets go.
    assert_eq!(after.frames, before.frames + leftovers + 31, "{after:?}");
    assert!(
        after.dropped - before.dropped < 30,
        "the restart counted as losses: {before:?} then {after:?}"
    );
    assert_eq!((after.late, after.rejected), (0, 0), "{after:?}");
}

/// A JPEG of the pattern source's first NV12 frame at `width`x`height`.
fn pattern_jpeg(width: u32, height: u32) -> Vec<u8> {
    let mut source =
        PatternSource::new(PatternConfig::new("NV12".parse().unwrap(), width, height)).unwrap();
    let frame = source.next_frame(Duration::from_secs(1)).unwrap();
    zerocam_encode::jpeg::encode_frame(&frame, 85).unwrap()
}

/// A `CompressedImage` stamped `sec` s after the epoch.
fn image(sec: i32, format: &str, data: &[u8]) -> Vec<u8> {
    CompressedImage {
        header: Header {
            stamp: Time { sec, nanosec: 0 },
            frame_id: "test",
        },
        format,
        data,
    }
    .encode()
}

/// Bytes that are no CDR at all (a fixed xorshift sequence, so a failure
/// is the same on every run).
fn noise(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

/// Whether an error is the one a bad sample should give.
type Expected = fn(&ZenohError) -> bool;

#[test]
fn malformed_samples_are_rejected_one_by_one_and_good_ones_still_decode() {
    const MAX_PAYLOAD: usize = 1 << 20;
    let port = free_port();
    let session = open_session(&listen(port), Role::Publisher).unwrap();
    // Block, not Drop: every sample the test puts must reach the
    // subscriber, or a count below would be off for the wrong reason.
    let publisher = session
        .declare_publisher("rt/bad/jpeg")
        .congestion_control(CongestionControl::Block)
        .wait()
        .unwrap();
    let jpeg = pattern_jpeg(64, 48);

    // The source waits for its first sample, which gives it its size: good
    // samples are put until it has one (the first may go before its
    // subscription is known here).
    let opening = thread::spawn(move || {
        ZenohSource::new(ZenohSourceConfig {
            options: connect(port),
            first_sample: Duration::from_secs(20),
            max_payload: MAX_PAYLOAD,
            ..ZenohSourceConfig::new("rt/bad/jpeg")
        })
    });
    while !opening.is_finished() {
        publisher.put(image(1, "jpeg", &jpeg)).wait().unwrap();
        thread::sleep(Duration::from_millis(50));
    }
    let mut source = opening.join().unwrap().unwrap();
    let f = source.stream_format();
    assert_eq!((f.width, f.height), (64, 48));
    while next_frame(&mut source, Duration::from_millis(500)).is_ok() {}
    let start = source.stats();
    assert_eq!(start.rejected, 0, "{start:?}");

    let good = image(0, "jpeg", &jpeg);
    let mut overlong = image(0, "jpeg", &[]);
    let at = overlong.len() - 4;
    overlong[at..].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad: [(&str, Vec<u8>, Expected); 7] = [
        ("random bytes", noise(300), |e| {
            matches!(
                e,
                ZenohError::Malformed {
                    source: CdrError::Header { .. },
                    ..
                }
            )
        }),
        ("a truncated CDR", good[..good.len() / 2].to_vec(), |e| {
            matches!(
                e,
                ZenohError::Malformed {
                    source: CdrError::Truncated { field: "data", .. },
                    ..
                }
            )
        }),
        ("a data length of u32::MAX", overlong, |e| {
            matches!(
                e,
                ZenohError::Malformed {
                    source: CdrError::Truncated { field: "data", need, .. },
                    ..
                } if *need == u32::MAX as usize
            )
        }),
        (
            "a PNG",
            image(0, "png", &jpeg),
            |e| matches!(e, ZenohError::Format { format, .. } if format == "png"),
        ),
        (
            "a JPEG of another size",
            image(0, "jpeg", &pattern_jpeg(32, 32)),
            |e| {
                matches!(
                    e,
                    ZenohError::SizeChanged {
                        width: 32,
                        height: 32,
                        stream_width: 64,
                        stream_height: 48,
                        ..
                    }
                )
            },
        ),
        (
            "too large a payload",
            vec![0; MAX_PAYLOAD + 1],
            |e| matches!(e, ZenohError::TooLarge { len, .. } if *len == MAX_PAYLOAD + 1),
        ),
        (
            "no JPEG in a `jpeg` message",
            image(0, "jpeg", &noise(2000)),
            |e| matches!(e, ZenohError::Decode { .. }),
        ),
    ];
    // In step: a bad sample, then a good one stamped with its turn, then
    // read. The subscriber queues 2, so both are there to read, in order,
    // and the frame that comes must be the good one just put.
    for (turn, (what, payload, expected)) in (1_i32..).zip(bad) {
        publisher.put(payload).wait().unwrap();
        publisher.put(image(turn, "jpeg", &jpeg)).wait().unwrap();
        let frame = source.next_frame(Duration::from_secs(5)).unwrap();
        assert_eq!(
            frame.timestamp(),
            Duration::from_secs(turn as u64),
            "{what}"
        );
        drop(frame);
        let stats = source.stats();
        assert_eq!(stats.rejected, turn as u64, "{what}: {stats:?}");
        let e = source.last_error().unwrap();
        assert!(expected(e), "{what}: {e:?}");
    }
    for turn in 100..103 {
        publisher.put(image(turn, "jpeg", &jpeg)).wait().unwrap();
        let frame = source.next_frame(Duration::from_secs(5)).unwrap();
        assert_eq!(frame.timestamp(), Duration::from_secs(turn as u64));
    }
    let end = source.stats();
    assert_eq!(end.rejected, 7, "{end:?}");
    assert_eq!(end.frames, start.frames + 10, "{end:?}");
    assert_eq!(end.late, 0, "{end:?}");
    assert!(
        matches!(source.last_error(), Some(ZenohError::Decode { .. })),
        "the last bad sample's error is kept: {:?}",
        source.last_error()
    );
}

/// What the non-stalled subscriber saw.
struct Seen {
    frames: u64,
    first: u32,
    last: u32,
    /// Frames with a sequence of at least the burst's first.
    in_burst: u64,
    stats: StreamStats,
}

/// Publishes the pattern's next frame; its sequence.
fn publish_one(pattern: &mut PatternSource, publisher: &mut ZenohPublisher) -> u32 {
    let format: StreamFormat = pattern.stream_format().clone();
    let frame = pattern.next_frame(Duration::from_secs(1)).unwrap();
    publisher.publish(&frame, &format).unwrap();
    frame.sequence()
}

/// Releases a blocked subscriber callback when dropped (also when the test
/// fails), so the stalled session can close.
struct Release(Option<mpsc::Sender<()>>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.take();
    }
}

#[test]
fn a_stalled_subscriber_does_not_block_the_publisher() {
    const BURST: u64 = 300;
    let port = free_port();
    let mut publisher = ZenohPublisher::new(&ZenohPublisherConfig {
        options: listen(port),
        prefix: "rt/stall".into(),
        h264: None,
        ..ZenohPublisherConfig::new()
    })
    .unwrap();
    let mut pattern =
        PatternSource::new(PatternConfig::new("NV12".parse().unwrap(), 1280, 720)).unwrap();

    // The subscriber that keeps reading, on its own thread from the start;
    // `burst_from` is the first sequence of the burst, known once it starts.
    let (ready_tx, ready_rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let burst_from = Arc::new(AtomicU64::new(u64::MAX));
    let reader = {
        let (stop, burst_from) = (stop.clone(), burst_from.clone());
        thread::spawn(move || {
            let mut source = ZenohSource::new(ZenohSourceConfig {
                options: connect(port),
                first_sample: Duration::from_secs(30),
                ..ZenohSourceConfig::new("rt/stall/jpeg")
            })
            .unwrap();
            ready_tx.send(()).unwrap();
            let (mut frames, mut first, mut last, mut in_burst) = (0, None, 0, 0);
            loop {
                match source.next_frame(Duration::from_millis(500)) {
                    Ok(frame) => {
                        frames += 1;
                        first.get_or_insert(frame.sequence());
                        last = frame.sequence();
                        in_burst += u64::from(
                            u64::from(frame.sequence()) >= burst_from.load(Ordering::SeqCst),
                        );
                    }
                    Err(CaptureError::Timeout { .. }) if stop.load(Ordering::SeqCst) => break,
                    Err(CaptureError::Timeout { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            Seen {
                frames,
                first: first.unwrap(),
                last,
                in_burst,
                stats: source.stats(),
            }
        })
    };
    // Frames at about 30 fps until it has its first (the publisher encodes
    // none before a subscriber matches).
    let deadline = Instant::now() + Duration::from_secs(30);
    while ready_rx.try_recv().is_err() {
        assert!(Instant::now() < deadline, "the reader never got a frame");
        publish_one(&mut pattern, &mut publisher);
        thread::sleep(Duration::from_millis(30));
    }

    // The stalled subscriber: its callback blocks on the first sample until
    // released. Zenoh calls it from the session's receive task, so nothing
    // more is read from its TCP connection: the socket buffers fill, then
    // the publisher's queue for that peer.
    let stalled = open_session(&connect(port), Role::Subscriber).unwrap();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let (blocked_tx, blocked_rx) = mpsc::sync_channel(1);
    let stalled_samples = Arc::new(AtomicU64::new(0));
    let _subscriber = {
        let stalled_samples = stalled_samples.clone();
        stalled
            .declare_subscriber("rt/stall/jpeg")
            .callback(move |_| {
                if stalled_samples.fetch_add(1, Ordering::SeqCst) == 0 {
                    let _ = blocked_tx.try_send(());
                }
                // Blocks until the sender is dropped, then returns at once.
                let _ = release_rx.lock().unwrap().recv();
            })
            .wait()
            .unwrap()
    };
    // Dropped before the session: a failing test still lets it close.
    let release = Release(Some(release_tx));
    let mut last_warm_up = 0;
    while blocked_rx.try_recv().is_err() {
        assert!(
            Instant::now() < deadline,
            "the stalled subscriber got nothing"
        );
        last_warm_up = publish_one(&mut pattern, &mut publisher);
        thread::sleep(Duration::from_millis(30));
    }
    burst_from.store(u64::from(last_warm_up) + 1, Ordering::SeqCst);

    // The burst, as fast as frames come, on a thread: a publisher blocked by
    // the stalled peer fails the test at the deadline instead of hanging it.
    let before = publisher.stats();
    let (done_tx, done_rx) = mpsc::channel();
    let burst = thread::spawn(move || {
        let started = Instant::now();
        for _ in 0..BURST {
            publish_one(&mut pattern, &mut publisher);
        }
        done_tx.send(started.elapsed()).unwrap();
        publisher
    });
    let took = done_rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the publisher blocked on the stalled subscriber");
    let publisher = burst.join().unwrap();
    let after = publisher.stats();
    assert_eq!(after.frames - before.frames, BURST, "{after:?}");
    assert_eq!(after.jpeg - before.jpeg, BURST, "{after:?}");
    assert_eq!(after.idle, before.idle, "{after:?}");
    let during_stall = stalled_samples.load(Ordering::SeqCst);
    assert_eq!(during_stall, 1, "the callback was stalled");

    drop(release);
    stop.store(true, Ordering::SeqCst);
    let seen = reader.join().unwrap();
    eprintln!(
        "burst of {BURST} in {took:?}; the stalled subscriber then got {} samples; \
         the reader {} frames ({} of the burst), {:?}",
        stalled_samples.load(Ordering::SeqCst),
        seen.frames,
        seen.in_burst,
        seen.stats
    );
    assert!(seen.in_burst > 0, "the reader got nothing during the stall");
    assert_eq!(seen.stats.frames, seen.frames, "{:?}", seen.stats);
    // Every sample from its first to its last was published (the
    // publisher was matched throughout), so each was either shown or
    // counted lost.
    assert_eq!(
        seen.stats.frames + seen.stats.dropped,
        u64::from(seen.last - seen.first) + 1,
        "{:?}",
        seen.stats
    );
    assert_eq!(
        (seen.stats.late, seen.stats.rejected),
        (0, 0),
        "{:?}",
        seen.stats
    );
    drop(publisher);
}

#[test]
fn samples_lost_just_before_a_rejected_one_are_still_counted() {
    use zerocam_capture::zenoh_source::Attachment;
    let port = free_port();
    let session = open_session(&listen(port), Role::Publisher).unwrap();
    let publisher = session
        .declare_publisher("rt/gap/jpeg")
        .congestion_control(CongestionControl::Block)
        .wait()
        .unwrap();
    let jpeg = pattern_jpeg(64, 48);
    let put = |number: u64, payload: Vec<u8>| {
        let a = Attachment {
            instance: 9,
            sequence: number as u32,
            number,
        };
        publisher
            .put(payload)
            .attachment(a.to_bytes().to_vec())
            .wait()
            .unwrap();
    };
    let opening = thread::spawn(move || {
        ZenohSource::new(ZenohSourceConfig {
            options: connect(port),
            first_sample: Duration::from_secs(20),
            ..ZenohSourceConfig::new("rt/gap/jpeg")
        })
    });
    // Sample 0 until the source has its size (numbered 0 each time: the
    // repeats are late, never lost).
    while !opening.is_finished() {
        put(0, image(1, "jpeg", &jpeg));
        thread::sleep(Duration::from_millis(50));
    }
    let mut source = opening.join().unwrap().unwrap();
    while next_frame(&mut source, Duration::from_millis(500)).is_ok() {}
    // 1 good, 2–4 never sent, 5 malformed, 6 good: three lost, one refused.
    put(1, image(2, "jpeg", &jpeg));
    next_frame(&mut source, Duration::from_secs(5)).unwrap();
    put(5, noise(64));
    put(6, image(3, "jpeg", &jpeg));
    next_frame(&mut source, Duration::from_secs(5)).unwrap();
    let st = source.stats();
    assert_eq!((st.dropped, st.rejected), (3, 1), "{st:?}");
}

/// A publisher on `key` (listening on `port`, congestion control Block: every
/// sample reaches the test's subscriber), and a source on it opened once a
/// first good sample numbered 0 came.
fn numbered_topic(
    port: u16,
    key: &'static str,
) -> (
    zerocam_capture::zenoh_source::zenoh::Session,
    ZenohSource,
    Vec<u8>,
) {
    let session = open_session(&listen(port), Role::Publisher).unwrap();
    let jpeg = pattern_jpeg(64, 48);
    let first = image(1, "jpeg", &jpeg);
    let s2 = session.clone();
    let opening = thread::spawn(move || {
        ZenohSource::new(ZenohSourceConfig {
            options: connect(port),
            first_sample: Duration::from_secs(20),
            ..ZenohSourceConfig::new(key)
        })
    });
    while !opening.is_finished() {
        put_numbered(&s2, key, 0, first.clone());
        thread::sleep(Duration::from_millis(50));
    }
    let mut source = opening.join().unwrap().unwrap();
    while next_frame(&mut source, Duration::from_millis(500)).is_ok() {}
    (session, source, jpeg)
}

/// Puts `payload` on `key` with zerocam's attachment, sample `number`.
fn put_numbered(
    session: &zerocam_capture::zenoh_source::zenoh::Session,
    key: &str,
    number: u64,
    payload: Vec<u8>,
) {
    use zerocam_capture::zenoh_source::Attachment;
    let a = Attachment {
        instance: 7,
        sequence: 0,
        number,
    };
    session
        .put(key.to_owned(), payload)
        .congestion_control(CongestionControl::Block)
        .attachment(a.to_bytes().to_vec())
        .wait()
        .unwrap();
}

#[test]
fn a_forged_sample_number_is_a_new_count_not_a_huge_loss_nor_a_stall() {
    let port = free_port();
    let key = "rt/forged/jpeg";
    let (session, mut source, jpeg) = numbered_topic(port, key);
    let before = source.stats();
    // 2^40 ahead: a loss of a trillion samples if taken at face value,
    // and every honest sample after it "late".
    put_numbered(&session, key, 1 << 40, image(2, "jpeg", &jpeg));
    next_frame(&mut source, Duration::from_secs(5)).unwrap();
    for n in 1..=3 {
        put_numbered(&session, key, n, image(3, "jpeg", &jpeg));
        next_frame(&mut source, Duration::from_secs(5)).unwrap();
    }
    let st = source.stats();
    assert_eq!(st.dropped, before.dropped, "{st:?}");
    assert_eq!(st.late, before.late, "{st:?}");
    assert_eq!(st.frames, before.frames + 4, "{st:?}");
}

#[test]
fn a_flood_of_refused_samples_does_not_hold_next_frame_past_its_timeout() {
    let port = free_port();
    let key = "rt/flood/jpeg";
    let (session, mut source, _) = numbered_topic(port, key);
    let stop = Arc::new(AtomicBool::new(false));
    let flooding = {
        let stop = stop.clone();
        thread::spawn(move || {
            for n in 1.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                put_numbered(&session, key, n, noise(256));
            }
        })
    };
    thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let e = next_frame(&mut source, Duration::from_millis(500)).unwrap_err();
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    flooding.join().unwrap();
    assert!(matches!(e, CaptureError::Timeout { .. }), "{e}");
    // A bound for the test (a debug build on a loaded runner), far below
    // "never": the sample being decoded when the time ran out finishes.
    assert!(took < Duration::from_secs(5), "next_frame took {took:?}");
    assert!(source.stats().rejected > 0);
}

#[test]
fn a_first_picture_larger_than_max_pixels_does_not_size_the_buffers() {
    let port = free_port();
    let session = open_session(&listen(port), Role::Publisher).unwrap();
    let jpeg = pattern_jpeg(64, 48);
    let opening = thread::spawn(move || {
        ZenohSource::new(ZenohSourceConfig {
            options: connect(port),
            first_sample: Duration::from_secs(3),
            max_pixels: 64 * 48 - 1,
            ..ZenohSourceConfig::new("rt/big/jpeg")
        })
    });
    while !opening.is_finished() {
        put_numbered(&session, "rt/big/jpeg", 0, image(1, "jpeg", &jpeg));
        thread::sleep(Duration::from_millis(50));
    }
    let Err(e) = opening.join().unwrap() else {
        panic!("a 64x48 picture over a 3071-pixel bound was taken");
    };
    assert!(e.to_string().contains("64x48"), "{e}");
    assert!(e.to_string().contains("3071"), "{e}");
}
