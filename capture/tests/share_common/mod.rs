//! What the frame-sharing process tests share (host on the pattern source,
//! lab on vivid): a checksum of a frame's pixels, a source wrapper that
//! records the publisher's checksum of every frame it serves, a publisher on
//! a thread, and subscriber child processes — this same test binary run with
//! `--child`, printing one line per frame.
//!
//! The binaries have `harness = false`: `main` runs the scenarios (or the
//! child) and prints libtest's summary line, which the lab's runner checks.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zerocam_capture::share::{
    Disconnect, Publisher, PublisherConfig, PublisherStats, SubscribeError, Subscriber,
};
use zerocam_capture::{CaptureError, Frame, FrameSource, SharedPlane, StreamFormat, StreamStats};

/// How long a child waits for a frame.
pub const WAIT: Duration = Duration::from_secs(10);

/// FNV-1a over every plane's pixel rows (padding skipped).
pub fn checksum(frame: &Frame) -> u64 {
    let t = frame.tensor();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in 0..t.plane_count().max(1) {
        let plane = t.plane(p).expect("a plane");
        let (rows, cols) = (plane.shape()[0], plane.shape()[1]);
        let stride = plane.row_stride().unwrap_or(cols);
        let map = plane.map_read().expect("a read map");
        for r in 0..rows {
            for &b in &map[r * stride..r * stride + cols] {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    h
}

/// The publisher's checksum of each sequence it took from its source.
pub type Sums = Arc<Mutex<HashMap<u32, u64>>>;

/// A source that records the checksum of each frame before the publisher
/// lends it.
pub struct Checksummed<S> {
    pub inner: S,
    pub sums: Sums,
}

impl<S: FrameSource> FrameSource for Checksummed<S> {
    fn next_frame(&mut self, timeout: Duration) -> zerocam_capture::Result<Frame> {
        let f = self.inner.next_frame(timeout)?;
        let sum = checksum(&f);
        self.sums.lock().unwrap().insert(f.sequence(), sum);
        Ok(f)
    }
    fn stream_format(&self) -> &StreamFormat {
        self.inner.stream_format()
    }
    fn stats(&self) -> StreamStats {
        self.inner.stats()
    }
    fn name(&self) -> &Path {
        self.inner.name()
    }
    fn read_only_planes(&self, index: usize) -> zerocam_capture::Result<Vec<SharedPlane>> {
        self.inner.read_only_planes(index)
    }
}

/// A publisher serving on a thread until stopped.
pub struct Serving {
    pub socket: PathBuf,
    pub sums: Sums,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<(PublisherStats, Result<(), String>)>>,
}

impl Serving {
    /// Serves `source` on a fresh socket path named `name`, with `edit`
    /// applied to the default configuration.
    pub fn start<S: FrameSource + 'static>(
        name: &str,
        source: S,
        edit: impl FnOnce(&mut PublisherConfig),
    ) -> Serving {
        let socket = socket_path(name);
        let sums = Sums::default();
        let mut config = PublisherConfig::new(&socket);
        edit(&mut config);
        let source = Checksummed {
            inner: source,
            sums: sums.clone(),
        };
        let mut publisher = Publisher::new(source, config).expect("a publisher");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let r = publisher.run(&flag).map_err(|e| e.to_string());
            (publisher.stats(), r)
        });
        Serving {
            socket,
            sums,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the publisher (its clients get `Goodbye`) and gives its last
    /// stats and how `run` ended.
    pub fn stop(mut self) -> (PublisherStats, Result<(), String>) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .expect("running")
            .join()
            .expect("the publisher thread")
    }

    /// Waits until the publisher thread ends by itself (its source failed).
    pub fn join(mut self) -> (PublisherStats, Result<(), String>) {
        self.thread
            .take()
            .expect("running")
            .join()
            .expect("the publisher thread")
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A socket path in the temporary folder, unique to this process.
pub fn socket_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zerocam-{}-{name}.sock", std::process::id()))
}

/// The process's open file descriptors.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// A subscriber child: this binary with `--child MODE SOCKET FRAMES`.
pub fn spawn_child(mode: &str, socket: &Path, frames: usize) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--child", mode])
        .arg(socket)
        .arg(frames.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("a child process")
}

/// What a child printed: `frame SEQ SUM` lines, and `key value` lines.
#[derive(Debug, Default)]
pub struct ChildReport {
    pub frames: Vec<(u32, u64)>,
    pub values: HashMap<String, String>,
}

impl ChildReport {
    /// The value printed for `key`, as a number.
    pub fn number(&self, key: &str) -> u64 {
        self.values
            .get(key)
            .unwrap_or_else(|| panic!("the child printed no {key}: {self:?}"))
            .parse()
            .expect("a number")
    }
}

/// Reads a child's report to its end and checks that it exited 0.
pub fn finish_child(child: Child) -> ChildReport {
    finish_child_with(child, |_| {})
}

/// [`finish_child`], calling `on_line` with each line as it comes.
pub fn finish_child_with(mut child: Child, on_line: impl FnMut(&str)) -> ChildReport {
    let out = BufReader::new(child.stdout.take().expect("piped"));
    finish_reading(child, out, on_line)
}

/// [`finish_child`] of a child whose output was read up to `out` already
/// ([`wait_for_line`]).
pub fn finish_rest(child: Child, out: BufReader<ChildStdout>) -> ChildReport {
    finish_reading(child, out, |_| {})
}

fn finish_reading(
    mut child: Child,
    out: BufReader<ChildStdout>,
    mut on_line: impl FnMut(&str),
) -> ChildReport {
    let mut report = ChildReport::default();
    for line in out.lines() {
        let line = line.expect("a line");
        on_line(&line);
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("frame"), Some(seq), Some(sum)) => report
                .frames
                .push((seq.parse().expect("seq"), sum.parse().expect("sum"))),
            (Some(key), Some(value), None) => {
                report.values.insert(key.to_owned(), value.to_owned());
            }
            _ => {}
        }
    }
    let status = child.wait().expect("the child's status");
    assert!(status.success(), "child failed: {status}, {report:?}");
    report
}

/// Reads a child's lines until one starts with `word` (the child is then at
/// that point), keeping the pipe for later.
pub fn wait_for_line(child: &mut Child, word: &str) -> BufReader<ChildStdout> {
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("a line");
        assert!(n > 0, "the child ended before printing {word}");
        if line.starts_with(word) {
            return out;
        }
    }
}

/// Checks every frame a child saw against the publisher's checksum of it.
pub fn assert_same_pixels(report: &ChildReport, sums: &Sums) -> usize {
    let sums = sums.lock().unwrap();
    for (seq, sum) in &report.frames {
        assert_eq!(
            sums.get(seq),
            Some(sum),
            "frame {seq}: the child saw other pixels"
        );
    }
    report.frames.len()
}

/// `n` `until-gone` children of `socket`, each past its `ready` line.
pub fn spawn_waiting(socket: &Path, n: usize) -> Vec<(Child, BufReader<ChildStdout>)> {
    (0..n)
        .map(|_| {
            let mut child = spawn_child("until-gone", socket, 0);
            let out = wait_for_line(&mut child, "ready");
            (child, out)
        })
        .collect()
}

/// Every waiting child got the typed `Disconnected`, within its timeout.
pub fn assert_all_disconnected(waiting: Vec<(Child, BufReader<ChildStdout>)>) {
    for (child, out) in waiting {
        let r = finish_rest(child, out);
        assert_eq!(r.values["gone"], "Disconnected", "{r:?}");
        assert!(r.number("since_last_ms") < WAIT.as_millis() as u64, "{r:?}");
    }
}

/// Stops `serving` and checks a pixel-exact run: it ended cleanly, no frame
/// was taken back early (a reclaimed buffer is drawn again under a slow
/// reader), and each `count` child saw `frames` frames with the publisher's
/// pixels, imported buffers x planes and kept its fd count.
pub fn check_exact_run(name: &str, serving: Serving, reports: Vec<ChildReport>, frames: usize) {
    let sums = serving.sums.clone();
    let (stats, ended) = serving.stop();
    println!("{name}: {stats:?}");
    assert_eq!(ended, Ok(()), "{name}");
    assert_eq!(stats.violations, 0, "{name}: {stats:?}");
    assert_eq!(stats.reclaimed + stats.expired, 0, "{name}: {stats:?}");
    for r in reports {
        assert_eq!(assert_same_pixels(&r, &sums), frames, "{name}");
        assert_eq!(
            r.number("imports"),
            r.number("buffers") * r.number("planes"),
            "{name}: one import per buffer plane"
        );
        assert_eq!(
            r.number("fds_early"),
            r.number("fds_late"),
            "{name}: client fds"
        );
    }
}

/// The child's side: `args` are `MODE SOCKET FRAMES`.
///
/// - `count`: takes FRAMES frames, prints `frame SEQ SUM` for each, then its
///   imports, planes, buffers and open fds once every buffer came and after
///   the last frame.
/// - `reconnect`: FRAMES frames, `reconnect()`, FRAMES more; prints imports.
/// - `hold`: takes 2 frames, prints `holding 2`, keeps them until killed.
/// - `until-gone`: takes frames until an error; prints `gone KIND` and the
///   milliseconds from the error's cause to it.
/// - `refused`: connects expecting a refusal; prints `refused REASON` and
///   `fds_received N`.
/// - `publish`: serves the pattern source (NV12 320x240) on SOCKET until
///   killed; prints `serving 1` once bound.
/// - `write`: takes a frame and tries a writable map of it; prints
///   `write_refused 1` when it fails with `Error::ReadOnly`.
pub fn child_main(args: &[String]) -> i32 {
    let [mode, socket, frames] = args else {
        eprintln!("child: expected MODE SOCKET FRAMES, got {args:?}");
        return 2;
    };
    let frames: usize = frames.parse().expect("FRAMES");
    if mode == "refused" {
        let before = open_fds();
        match Subscriber::connect(socket) {
            Err(CaptureError::Share(SubscribeError::Disconnected {
                reason: Disconnect::Goodbye(reason),
                ..
            })) => println!("refused {reason:?}"),
            Err(e) => println!("refused other:{e}"),
            Ok(_) => println!("refused no"),
        }
        println!("fds_received {}", open_fds().saturating_sub(before));
        return 0;
    }
    if mode == "publish" {
        let source = zerocam_capture::PatternSource::new(zerocam_capture::PatternConfig::new(
            "NV12".parse().expect("NV12"),
            320,
            240,
        ))
        .expect("a pattern source");
        let mut publisher =
            Publisher::new(source, PublisherConfig::new(socket)).expect("a publisher");
        println!("serving 1");
        let never = AtomicBool::new(false);
        let _ = publisher.run(&never);
        return 0;
    }
    let mut sub = Subscriber::connect(socket).expect("connect");
    match mode.as_str() {
        "count" => {
            let mut fds_early = 0;
            for i in 0..frames {
                let f = sub.next_frame(WAIT).expect("a frame");
                println!("frame {} {}", f.sequence(), checksum(&f));
                drop(f);
                let st = sub.stats();
                if fds_early == 0 && st.cache.misses == (st.buffers * st.planes) as u64 {
                    fds_early = open_fds(); // every buffer's fds came
                }
                if i == frames / 10 || i + 1 == frames * 9 / 10 {
                    println!("progress {i}");
                }
            }
            let st = sub.stats();
            println!("imports {}", st.cache.misses);
            println!("buffers {}", st.buffers);
            println!("planes {}", st.planes);
            println!("fds_early {fds_early}");
            println!("fds_late {}", open_fds());
        }
        "reconnect" => {
            for round in 0..2 {
                for _ in 0..frames {
                    let f = sub.next_frame(WAIT).expect("a frame");
                    println!("frame {} {}", f.sequence(), checksum(&f));
                }
                if round == 0 {
                    sub.reconnect().expect("reconnect");
                }
            }
            let st = sub.stats();
            println!("imports {}", st.cache.misses);
            println!("planes {}", st.planes);
        }
        "hold" => {
            let a = sub.next_frame(WAIT).expect("a frame");
            let b = sub.next_frame(WAIT).expect("a frame");
            println!("holding 2");
            std::thread::sleep(Duration::from_secs(600));
            drop((a, b));
        }
        "until-gone" => {
            println!("ready 1");
            let mut last = Instant::now();
            loop {
                match sub.next_frame(WAIT) {
                    Ok(_) => last = Instant::now(),
                    Err(e) => {
                        let kind = match e {
                            CaptureError::Share(ref s) => format!("{s:?}")
                                .split([' ', '{', '('])
                                .next()
                                .unwrap_or_default()
                                .to_owned(),
                            ref other => format!("other:{other}"),
                        };
                        println!("gone {kind}");
                        println!("since_last_ms {}", last.elapsed().as_millis());
                        break;
                    }
                }
            }
        }
        "write" => {
            let f = sub.next_frame(WAIT).expect("a frame");
            // Plane 0: a two-buffer frame (NV12M) is mapped plane by plane.
            let luma = f.tensor().plane(0).expect("plane 0");
            match luma.map_write() {
                Err(zerocam_capture::tensor::Error::ReadOnly { .. }) => println!("write_refused 1"),
                Err(e) => println!("write_error {:?}", e.to_string()),
                Ok(_) => println!("write_refused 0"),
            }
        }
        other => {
            eprintln!("child: unknown mode {other}");
            return 2;
        }
    }
    0
}

/// Runs `scenarios` by name unless this is a child; prints libtest's summary.
pub fn main_with(scenarios: &[(&str, fn())]) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        std::process::exit(child_main(&args[1..]));
    }
    // libtest's `--skip PART` (repeatable; a name containing it is skipped)
    // and one name filter.
    let (mut skips, mut filter) = (Vec::new(), None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--skip" {
            skips.extend(it.next());
        } else if !a.starts_with('-') && filter.is_none() {
            filter = Some(a);
        }
    }
    let mut passed = 0;
    for (name, scenario) in scenarios {
        if filter.is_some_and(|f| !name.contains(f.as_str()))
            || skips.iter().any(|s| name.contains(s.as_str()))
        {
            continue;
        }
        println!("test {name} ...");
        let t = Instant::now();
        scenario();
        println!("test {name} ... ok ({:.1} s)", t.elapsed().as_secs_f64());
        passed += 1;
    }
    println!("\ntest result: ok. {passed} passed; 0 failed; 0 ignored; 0 measured");
}
