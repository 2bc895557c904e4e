//! `zerocam serve`: one camera lent to many processes over a Unix socket
//! (docs/sharing.md). Prints a line a second: clients connected, frames
//! served, leases, skips and the publisher's CPU time per frame.
//!
//! A daemon's life: it binds (or takes the socket systemd passed as fd 3)
//! before it announces itself; SIGTERM, SIGINT and SIGHUP stop it gracefully
//! (every client told `Goodbye(Stopping)`, their leases given a moment to
//! end, every buffer back, the socket file removed, exit 0), and a second
//! signal ends it at once (exit 128 + the signal). The signals are blocked
//! and read from a `signalfd` between frames: no handler, no `unsafe`.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use zerocam_capture::share::{take_systemd_socket, Publisher, PublisherConfig, PublisherStats};

use crate::bench::cpu_time;
use crate::outputs::{lock, SharedOutputs, Tapped};
use crate::rtsp::RtspServe;
use crate::view::ViewServe;
use crate::zenoh::ZenohServe;
use crate::CliError;
use zerocam_capture::open::{open, SourceSpec};
use zerocam_capture::FrameSource;

/// `serve --zenoh`/`--http`/`--rtsp` (or `zerocam view`) without a socket: each
/// frame shown to the outputs and dropped; a status line a second; a stop
/// signal ends it (exit 0).
fn serve_outputs_only(
    mut source: Box<dyn FrameSource>,
    outputs: &SharedOutputs,
    description: &str,
    signals: &SignalFd,
    options: &ServeOptions,
    print: &mut impl FnMut(&str),
) -> Result<String, CliError> {
    print(
        &[vec![description.to_owned()], lock(outputs).describe()]
            .concat()
            .join("\n"),
    );
    // The whole process's CPU (capture, encoding, Zenoh's threads) per frame.
    let (cpu0, mut frames) = (cpu_time(), 0u64);
    let status = |frames: u64| {
        let cpu = cpu_time().saturating_sub(cpu0).as_secs_f64() * 1e6;
        format!(
            "{}, process CPU per frame {:.0} µs",
            lock(outputs).status().join("; "),
            cpu / frames.max(1) as f64
        )
    };
    let mut last = Instant::now();
    loop {
        if let Some(signo) = pending_signal(signals) {
            print(&format!("stopping on {}", signal_name(signo)));
            return Ok(status(frames));
        }
        match source.next_frame(Duration::from_millis(100)) {
            Ok(frame) => {
                lock(outputs).frame_owned(frame, source.as_ref());
                frames += 1;
            }
            // What the socket's publisher also rides out: no frame in time,
            // a buffer the driver flagged, every buffer held for a moment
            // (a hardware encoder still reading).
            Err(
                zerocam_capture::CaptureError::Timeout { .. }
                | zerocam_capture::CaptureError::BufferError { .. }
                | zerocam_capture::CaptureError::NoFreeBuffer { .. },
            ) => {}
            Err(e) => return Err(e.into()),
        }
        if options.frames.is_some_and(|n| frames >= n) {
            return Ok(status(frames));
        }
        if last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            print(&status(frames));
        }
    }
}

/// How `serve` listens and when it stops.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The socket path (`None`: the socket systemd passes must be there).
    pub socket: Option<PathBuf>,
    /// The socket file's mode when `serve` binds it.
    pub mode: u32,
    /// User ids allowed besides the publisher's own.
    pub allow_uids: Vec<u32>,
    /// Group ids allowed.
    pub allow_gids: Vec<u32>,
    /// A lease's deadline.
    pub lease: Duration,
    /// The most frames one client holds.
    pub max_leases: u16,
    /// The most clients at once.
    pub max_clients: usize,
    /// The most clients of one uid (`None`: half of `max_clients`).
    pub max_clients_per_uid: Option<usize>,
    /// The most connections waiting for their `Hello`.
    pub max_pending: usize,
    /// How long a connection has to say `Hello` (and a message to arrive whole).
    pub hello_timeout: Duration,
    /// On a stop signal, how long clients have to release their frames.
    pub drain: Duration,
    /// Lend read-write fds where the source cannot give read-only ones
    /// (libcamera's buffers): clients could write into frames others read.
    pub writable_fds: bool,
    /// Stop after this many frames (`None`: never, or as `once` says).
    pub frames: Option<u64>,
    /// Stop when the last client leaves (after at least one came).
    pub once: bool,
    /// Publish on Zenoh too (or only, without a socket).
    pub zenoh: Option<ZenohServe>,
    /// Serve the live view too (or only, without a socket).
    pub http: Option<ViewServe>,
    /// Serve H.264 over RTSP too (or only, without a socket).
    pub rtsp: Option<RtspServe>,
    /// Record the stream's H.264 too (or only, without a socket).
    pub record: Option<crate::outputs::RecordServe>,
}

impl ServeOptions {
    /// The defaults (as `zerocam serve`'s flags), listening at `socket`.
    pub fn new(socket: Option<PathBuf>) -> ServeOptions {
        let config = PublisherConfig::new("");
        ServeOptions {
            socket,
            mode: config.mode,
            allow_uids: Vec::new(),
            allow_gids: Vec::new(),
            lease: config.lease,
            max_leases: config.max_leases,
            max_clients: config.max_clients,
            max_clients_per_uid: None,
            max_pending: config.max_pending,
            hello_timeout: config.hello_timeout,
            drain: Duration::from_millis(500),
            writable_fds: config.writable_fds,
            frames: None,
            once: false,
            zenoh: None,
            http: None,
            rtsp: None,
            record: None,
        }
    }
}

/// One status line of `stats`, `cpu` spent over `frames` frames.
pub fn status_line(stats: &PublisherStats, cpu: Duration) -> String {
    let per_frame = cpu.as_secs_f64() * 1e6 / stats.frames.max(1) as f64;
    format!(
        "clients {} (connections {}, waiting for Hello {}), frames {}, lent {}, skips {}, \
         expired {}, reclaimed {}, late releases {}, refused {}, violations {}, \
         no Hello in time {}, stalled {}, pushed out {}, publisher CPU per frame {per_frame:.1} µs",
        stats.clients,
        stats.connections,
        stats.pending,
        stats.frames,
        stats.lent,
        stats.skips,
        stats.expired,
        stats.reclaimed,
        stats.late_releases,
        stats.rejected,
        stats.violations,
        stats.handshake_timeouts,
        stats.stalled,
        stats.pending_dropped,
    )
}

/// The publisher's log lines on stderr, one each (they are rate-limited by
/// the publisher).
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            eprintln!("zerocam serve: {}", record.args());
        }
    }
    fn flush(&self) {}
}

static STDERR_LOG: StderrLog = StderrLog;

/// SIGTERM, SIGINT and SIGHUP, blocked in this thread (and the threads it
/// starts later) and readable, without waiting, from the returned fd.
fn stop_signals() -> Result<SignalFd, CliError> {
    let mut set = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        set.add(s);
    }
    set.thread_block().map_err(std::io::Error::from)?;
    Ok(
        SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(std::io::Error::from)?,
    )
}

/// The signal waiting on `signals`, if any.
fn pending_signal(signals: &SignalFd) -> Option<i32> {
    match signals.read_signal() {
        Ok(Some(info)) => Some(i32::try_from(info.ssi_signo).unwrap_or(i32::MAX)),
        _ => None,
    }
}

/// A signal's name for the stop line.
fn signal_name(signo: i32) -> String {
    Signal::try_from(signo).map_or_else(|_| format!("signal {signo}"), |s| s.as_str().to_owned())
}

/// Serves `spec`'s source at `options.socket` (or on the socket systemd
/// passed), calling `print` with the description and then a status line
/// each second; the last status line is returned, also after a stop signal.
///
/// # Errors
/// The source's errors, [`CliError::Share`] when the socket cannot be bound
/// (or systemd's is not a listening Unix stream socket) or the source fails
/// while serving, [`CliError::Usage`] when there is no socket at all.
pub fn serve(
    spec: &SourceSpec,
    options: &ServeOptions,
    mut print: impl FnMut(&str),
) -> Result<String, CliError> {
    // While this process has one thread: the signals, the environment.
    let signals = stop_signals()?;
    let passed = take_systemd_socket()?;
    if log::set_logger(&STDERR_LOG).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
    let socketless = passed.is_none() && options.socket.is_none();
    // A `zenoh:` source's frames are stamped on the sender's system clock,
    // which the publisher would shift again, and its session would meet
    // the publisher's own on the same endpoints.
    if options.zenoh.is_some()
        && spec
            .device
            .as_deref()
            .is_some_and(|d| d.starts_with("zenoh:"))
    {
        return Err(CliError::Usage(
            "serve --zenoh cannot re-publish a zenoh: source yet (a Zenoh router or \
             zenoh-bridge forwards topics between networks)"
                .into(),
        ));
    }
    if socketless
        && options.zenoh.is_none()
        && options.http.is_none()
        && options.rtsp.is_none()
        && options.record.is_none()
    {
        return Err(CliError::Usage(
            "serve needs --socket PATH, a socket passed by systemd (LISTEN_FDS), --zenoh, \
             --http, --rtsp or --record"
                .into(),
        ));
    }
    let outputs: SharedOutputs = Arc::new(Mutex::new(crate::outputs::build(options)?));
    // V4L2 buffers exported or allocated read-only: clients cannot write
    // into frames that other clients read.
    let opened = open(&SourceSpec {
        read_only: true,
        ..spec.clone()
    })?;
    let config = PublisherConfig {
        mode: options.mode,
        allow_uids: options.allow_uids.clone(),
        allow_gids: options.allow_gids.clone(),
        lease: options.lease,
        max_leases: options.max_leases,
        max_clients: options.max_clients,
        max_clients_per_uid: options.max_clients_per_uid,
        max_pending: options.max_pending,
        hello_timeout: options.hello_timeout,
        writable_fds: options.writable_fds,
        ..PublisherConfig::new(options.socket.clone().unwrap_or_default())
    };
    let description = opened.description;
    let source = opened.source;
    if socketless {
        return serve_outputs_only(
            source,
            &outputs,
            &description,
            &signals,
            options,
            &mut print,
        );
    }
    let source: Box<dyn FrameSource> = if lock(&outputs).is_empty() {
        source
    } else {
        Box::new(Tapped::new(source, outputs.clone()))
    };
    let (mut publisher, how) = match passed {
        Some(fd) => (
            Publisher::from_listener(source, config, fd)?,
            "socket passed by systemd".to_owned(),
        ),
        None => {
            let p = Publisher::new(source, config)?;
            let mode =
                std::fs::metadata(p.socket()).map_or(options.mode, |m| m.permissions().mode());
            (p, format!("mode {:04o}", mode & 0o7777))
        }
    };
    // Only once the socket is bound and listening: a client that reads this
    // line and connects at once must find it.
    print(&format!(
        "{description}\nserving at {} ({how})",
        publisher.socket().display()
    ));
    for line in lock(&outputs).describe() {
        print(&line);
    }
    let cpu0 = cpu_time();
    let mut last = Instant::now();
    loop {
        if let Some(signo) = pending_signal(&signals) {
            return stop(publisher, &signals, signo, options.drain, &mut print, cpu0);
        }
        publisher.serve_frame(Duration::from_millis(100))?;
        let done = options.frames.is_some_and(|n| publisher.frames() >= n)
            || (options.once
                && publisher.connections() > 0
                && publisher.clients() == 0
                && publisher.pending() == 0);
        if done {
            return Ok(status_line(
                &publisher.stats(),
                cpu_time().saturating_sub(cpu0),
            ));
        }
        if last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            print(&status_line(
                &publisher.stats(),
                cpu_time().saturating_sub(cpu0),
            ));
            for line in lock(&outputs).status() {
                print(&line);
            }
        }
    }
}

/// The graceful stop after signal `signo`: every client told
/// `Goodbye(Stopping)`, at most `drain` for their leases to end, then the
/// publisher dropped (every buffer back, the socket file removed). A second
/// signal meanwhile ends the process at once: exit 128 + that signal, the
/// socket file removed when `serve` bound it.
fn stop<S: zerocam_capture::FrameSource>(
    mut publisher: Publisher<S>,
    signals: &SignalFd,
    signo: i32,
    drain: Duration,
    print: &mut impl FnMut(&str),
    cpu0: Duration,
) -> Result<String, CliError> {
    publisher.begin_stop();
    print(&format!(
        "stopping on {}: {} clients told, {} frames lent, waiting up to {} ms for them \
         (a second signal ends it now)",
        signal_name(signo),
        publisher.clients(),
        publisher.lent(),
        drain.as_millis()
    ));
    let deadline = Instant::now() + drain;
    while publisher.lent() > 0 && Instant::now() < deadline {
        if let Some(again) = pending_signal(signals) {
            print(&format!("{}: stopped at once", signal_name(again)));
            if publisher.owns_socket_file() {
                let _ = std::fs::remove_file(publisher.socket());
            }
            // No destructor runs: nothing more is done for the clients or
            // the source (the kernel closes every fd).
            std::process::exit(128 + again);
        }
        publisher.drain(Duration::from_millis(20).min(deadline - Instant::now()));
    }
    let line = status_line(&publisher.stats(), cpu_time().saturating_sub(cpu0));
    drop(publisher); // every buffer back, the socket file removed
    Ok(line)
}
