//! The soak, in the kernel lab: many frames from vivid in NV12M and NV12, in
//! both buffer modes, with vivid's fault injection switched on and off on a
//! schedule (dropped buffers, a buffer flagged with an error, a fatal
//! streaming error that makes `DQBUF` fail with `EIO` and is followed by a
//! restart, and plain restarts), while frames are held and read.
//!
//! `ZEROCAM_SOAK_FRAMES` frames in all (default 2,000, what CI runs through
//! `tests/lab/test-all`; `tests/lab/soak` runs 20,000), split evenly over the
//! four phases. Each phase asserts:
//! - no fd growth: the process's fd count after the warm-up equals the count
//!   at the end of the phase, and the count before the device opened equals the
//!   count after it closed;
//! - resident memory grows by at most 1 MiB from the end of the warm-up to the
//!   end of the phase;
//! - imports == buffers × planes for the whole stream, restarts included (the
//!   buffers survive a restart, so their tensors and identities do too);
//! - every frame accounted for: in each streaming session (start to stop), the
//!   span of sequence numbers seen equals frames delivered + buffers flagged
//!   with an error + frames the driver dropped;
//! - every checked frame carries vivid's "100% Red" luma (81).
//!
//! A panic anywhere fails the test (the test binary's exit status).
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod vivid_common;
use vivid_common::{open_fds, press, MULTI, SINGLE, WAIT};

use std::collections::VecDeque;
use std::time::Instant;

use nix::errno::Errno;
use zerocam_capture::{
    BufferMode, CaptureError, Device, Frame, FrameSource, Stream, StreamConfig, StreamStats,
};

/// vivid's "100% Red" in BT.601 limited range: Y' = 81.
const RED_LUMA: u8 = 81;
/// Frames the soak holds at once, released oldest first.
const HELD: usize = 2;
/// Resident memory a phase may grow by after its warm-up.
const RSS_SLACK: u64 = 1 << 20;
/// The fault schedule repeats every this many delivered frames.
const PERIOD: u64 = 200;

/// One phase of the soak: a node, a format and a buffer mode.
struct Phase {
    node: &'static str,
    format: &'static str,
    mode: BufferMode,
}

const fn phase(node: &'static str, format: &'static str, mode: BufferMode) -> Phase {
    Phase { node, format, mode }
}

const PHASES: [Phase; 4] = [
    phase(MULTI, "NV12M", BufferMode::Mmap),
    phase(MULTI, "NV12M", BufferMode::DmaBuf),
    phase(SINGLE, "NV12", BufferMode::Mmap),
    phase(SINGLE, "NV12", BufferMode::DmaBuf),
];

/// What the schedule does when the phase has delivered `frames` frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    DropsOn,
    DropsOff,
    BufferErrorFlag,
    FatalStreamingError,
    Restart,
}

fn fault_at(frames: u64) -> Option<Fault> {
    match frames % PERIOD {
        20 => Some(Fault::DropsOn),
        60 => Some(Fault::DropsOff),
        100 => Some(Fault::BufferErrorFlag),
        140 => Some(Fault::FatalStreamingError),
        180 => Some(Fault::Restart),
        _ => None,
    }
}

/// Resident set size in bytes (`/proc/self/statm`'s second field, in pages).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page as u64
}

/// The counters of one streaming session (start to stop).
#[derive(Default)]
struct Session {
    first: Option<u32>,
    last: u32,
    delivered: u64,
    errored: u64,
    /// Buffers numbered like the one before (vivid does this when emulation
    /// starves its thread): one sequence number, two buffers.
    repeats: u64,
    dropped_before: u64,
    /// Every sequence seen, for the failure message.
    seen: Vec<u32>,
}

impl Session {
    fn new(stats: &StreamStats) -> Session {
        Session {
            dropped_before: stats.dropped,
            ..Session::default()
        }
    }

    fn saw(&mut self, sequence: u32) {
        if self.first.is_some() {
            match sequence.wrapping_sub(self.last) {
                0 => self.repeats += 1,
                step => assert!(
                    step < u32::MAX / 2,
                    "sequence {sequence} after {}: the count went back",
                    self.last
                ),
            }
        }
        self.first.get_or_insert(sequence);
        self.last = sequence;
        self.seen.push(sequence);
    }

    /// Every sequence number of the session is a delivered frame, a flagged
    /// buffer or a drop the stream counted (a repeated number is two buffers).
    fn check(&self, stats: &StreamStats, phase: &str) {
        let Some(first) = self.first else { return };
        let span = u64::from(self.last.wrapping_sub(first)) + 1;
        let dropped = stats.dropped - self.dropped_before;
        assert_eq!(
            span + self.repeats,
            self.delivered + self.errored + dropped,
            "{phase}: sequences {first}..={} = {span} (+ {} repeated), but delivered {} + \
             errored {} + dropped {dropped}: {:?}",
            self.last,
            self.repeats,
            self.delivered,
            self.errored,
            self.seen
        );
    }
}

/// The figures of one phase, printed for docs/benchmarks.md.
#[derive(Debug, Default)]
struct Report {
    delivered: u64,
    dropped: u64,
    errored: u64,
    repeats: u64,
    fatal_errors: u64,
    restarts: u64,
    imports: u64,
    buffers: usize,
    planes: usize,
    fds_warm: usize,
    fds_end: usize,
    rss_growth: i64,
    seconds: f64,
}

fn set_drops(d: &Device, percent: i32) {
    let c = d.control("Percentage of Dropped Buffers").unwrap();
    d.set_control(c.id, percent).unwrap();
}

fn open(phase: &Phase) -> Stream {
    let mut d = Device::open(phase.node).unwrap();
    d.set_format(phase.format.parse().unwrap(), 320, 180)
        .unwrap();
    d.set_frame_rate(120.0).unwrap();
    d.set_menu("Test Pattern", "100% Red").unwrap();
    d.set_menu("OSD Text Mode", "None").unwrap();
    set_drops(&d, 0);
    let config = StreamConfig {
        mode: phase.mode,
        // The frames held, and the one being looked at.
        hold: HELD as u32 + 1,
        ..StreamConfig::default()
    };
    Stream::new(d, config).unwrap()
}

fn check_pixels(frame: &Frame, name: &str) {
    let luma = frame.tensor().plane(0).unwrap();
    let map = luma.map_read().unwrap();
    let first_row = &map[..320];
    assert!(
        first_row.iter().all(|&y| y == RED_LUMA),
        "{name}: frame {} luma row 0 is not vivid's red: {:?}",
        frame.sequence(),
        &first_row[..8]
    );
}

fn run_phase(phase: &Phase, frames: u64) -> Report {
    let name = format!("{} {} {}", phase.node, phase.format, phase.mode.name());
    let warm_up = (frames / 5).clamp(1, 100);
    let fds_before = open_fds();
    let start = Instant::now();
    let mut stream = open(phase);
    let mut held: VecDeque<Frame> = VecDeque::new();
    let mut report = Report::default();
    let mut session = Session::new(&stream.stats());
    let mut rss_warm = 0;
    let mut delivered = 0u64;
    let mut fatal_pending = false;
    while delivered < frames {
        match stream.next_frame(WAIT) {
            Ok(frame) => {
                session.saw(frame.sequence());
                session.delivered += 1;
                delivered += 1;
                if delivered % 50 == 1 {
                    check_pixels(&frame, &name);
                }
                held.push_back(frame);
                if held.len() > HELD {
                    held.pop_front();
                }
            }
            Err(CaptureError::BufferError { sequence, .. }) => {
                session.saw(sequence);
                session.errored += 1;
                report.errored += 1;
                continue;
            }
            Err(CaptureError::StreamFailed {
                errno: Errno::EIO, ..
            }) if fatal_pending => {
                // The injected fatal error: the stream stopped itself; a start
                // recovers with the same buffers.
                fatal_pending = false;
                report.fatal_errors += 1;
                session.check(&stream.stats(), &name);
                stream.start().unwrap();
                report.restarts += 1;
                report.repeats += session.repeats;
                session = Session::new(&stream.stats());
                continue;
            }
            Err(e) => panic!("{name}: frame {delivered}: unexpected {e}"),
        }
        if delivered == warm_up {
            report.fds_warm = open_fds();
            rss_warm = rss();
        }
        match fault_at(delivered) {
            Some(Fault::DropsOn) => set_drops(stream.device(), 25),
            Some(Fault::DropsOff) => set_drops(stream.device(), 0),
            Some(Fault::BufferErrorFlag) => press(stream.device(), "Inject V4L2_BUF_FLAG_ERROR"),
            Some(Fault::FatalStreamingError) => {
                press(stream.device(), "Inject Fatal Streaming Error");
                fatal_pending = true;
            }
            Some(Fault::Restart) if !fatal_pending => {
                session.check(&stream.stats(), &name);
                stream.stop().unwrap();
                stream.start().unwrap();
                report.restarts += 1;
                report.repeats += session.repeats;
                session = Session::new(&stream.stats());
            }
            Some(Fault::Restart) | None => {}
        }
    }
    let stats = stream.stats();
    session.check(&stats, &name);
    report.repeats += session.repeats;
    report.fds_end = open_fds();
    report.rss_growth = rss() as i64 - rss_warm as i64;
    report.delivered = stats.frames;
    report.dropped = stats.dropped;
    report.imports = stats.cache.misses;
    report.buffers = stats.buffers;
    report.planes = stats.planes;
    set_drops(stream.device(), 0);
    drop(held);
    drop(stream);
    report.seconds = start.elapsed().as_secs_f64();
    println!("soak {name}: {report:?}");

    assert_eq!(report.delivered, frames, "{name}: frames delivered");
    assert_eq!(
        stats.buffer_errors, report.errored,
        "{name}: flagged buffers"
    );
    assert_eq!(
        report.imports,
        (report.buffers * report.planes) as u64,
        "{name}: imports == buffers x planes over {} restarts",
        report.restarts
    );
    assert_eq!(report.fds_end, report.fds_warm, "{name}: fds after warm-up");
    assert_eq!(open_fds(), fds_before, "{name}: fds after close");
    assert!(
        report.rss_growth <= RSS_SLACK as i64,
        "{name}: resident memory grew {} bytes after the warm-up",
        report.rss_growth
    );
    report
}

#[test]
fn lab_soak_vivid_with_faults() {
    let total: u64 = std::env::var("ZEROCAM_SOAK_FRAMES")
        .ok()
        .map(|v| v.parse().expect("ZEROCAM_SOAK_FRAMES is a number"))
        .unwrap_or(2_000);
    let per_phase = (total / PHASES.len() as u64).max(PERIOD);
    // zerocam-tensor opens a DMA heap once per process and keeps it: open it
    // before the first phase counts fds, so the count measures the streams.
    zerocam_tensor::Tensor::<u8>::new(&[4096], Some(zerocam_tensor::TensorMemory::Dma), None)
        .unwrap();
    let mut faults = 0;
    for phase in &PHASES {
        let r = run_phase(phase, per_phase);
        faults += r.errored + r.fatal_errors;
        if per_phase >= PERIOD {
            assert!(
                r.fatal_errors >= 1 && r.errored >= 1,
                "faults injected: {r:?}"
            );
        }
    }
    println!(
        "soak: {} frames over {} phases, {faults} injected errors survived",
        per_phase * PHASES.len() as u64,
        PHASES.len()
    );
}
