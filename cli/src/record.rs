//! `zerocam record`: frames to a video file (`.mp4`, `.h264`) through
//! zerocam-encode's [`Recorder`]: a hardware encoder when one is present,
//! else OpenH264 in software. Prints a line a second (frames, fps, bytes,
//! the encoder); SIGINT (Ctrl-C), SIGTERM and SIGHUP stop it cleanly: the
//! encoder is drained and the file finished, so it plays to the last frame.
//! The signals are blocked and read from a `signalfd` between frames, as
//! `zerocam serve` does: no handler, no `unsafe`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use zerocam_capture::open::{open, SourceSpec};
use zerocam_encode::recorder::{Recorder, RecorderConfig, RecorderStats};
use zerocam_encode::{Codec, EncoderChoice};

use crate::CliError;

/// What `record` writes and when it stops.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The file; its extension picks the container.
    pub output: PathBuf,
    /// The codec (`None`: the one the output's container holds).
    pub codec: Option<Codec>,
    /// Which encoder.
    pub encoder: EncoderChoice,
    /// Target bit rate, bits per second (`None`: the encoder's default).
    pub bitrate: Option<u32>,
    /// Frames between keyframes (`None`: the encoder's default).
    pub gop: Option<u32>,
    /// Stop after this many frames.
    pub frames: Option<u64>,
    /// Stop after this long (from the first frame).
    pub seconds: Option<f64>,
}

/// One progress line: frames, their rate, the file's bytes, the encoder.
pub fn status_line(stats: &RecorderStats, elapsed: Duration, encoder: &str) -> String {
    let fps = stats.frames as f64 / elapsed.as_secs_f64().max(1e-9);
    format!(
        "frames {}, {fps:.1} fps, {} bytes, encoder {encoder}",
        stats.frames, stats.bytes
    )
}

/// SIGINT, SIGTERM and SIGHUP, blocked in this thread and readable,
/// without waiting, from the returned fd.
fn stop_signals() -> Result<SignalFd, CliError> {
    let mut set = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(s);
    }
    set.thread_block().map_err(std::io::Error::from)?;
    Ok(
        SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(std::io::Error::from)?,
    )
}

/// The name of the stop signal waiting on `signals`, if any.
fn pending_signal(signals: &SignalFd) -> Option<String> {
    let info = signals.read_signal().ok().flatten()?;
    let signo = i32::try_from(info.ssi_signo).unwrap_or(i32::MAX);
    Some(Signal::try_from(signo).map_or_else(|_| format!("signal {signo}"), |s| s.as_str().into()))
}

/// Records `spec`'s frames into `options.output` until `options.frames`,
/// `options.seconds` or a stop signal, calling `print` with the source's
/// description and a status line each second; returns the summary.
///
/// The output's extension (and the codec) is checked and the file created
/// before the source is opened: a name it does not write is refused with
/// nothing created. A source that fails mid-recording still leaves the
/// file finished up to the last frame.
///
/// # Errors
/// [`CliError::Encode`] (a refused extension, an unwritable file, the
/// encoder's and the file's failures), [`CliError::Usage`] for a bad
/// `--seconds`, the source's errors.
pub fn record(
    spec: &SourceSpec,
    options: &RecordOptions,
    mut print: impl FnMut(&str),
) -> Result<String, CliError> {
    let limit = match options.seconds {
        Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => {
            return Err(CliError::Usage(format!(
                "--seconds {s}: expected a positive number"
            )))
        }
        None => None,
    };
    let signals = stop_signals()?;
    let fps = spec
        .fps
        .filter(|f| f.is_finite() && *f >= 1.0)
        .unwrap_or(30.0);
    let config = RecorderConfig {
        codec: options.codec,
        encoder: options.encoder.clone(),
        bitrate: options.bitrate,
        gop: options.gop,
        fps: fps.round().min(f64::from(u32::MAX)) as u32,
    };
    let mut rec = Recorder::create(&options.output, config)?;
    let mut opened = open(spec)?;
    print(&opened.description);
    let start = Instant::now();
    let mut last = start;
    let mut stopped = None;
    let mut source_error = None;
    loop {
        if let Some(name) = pending_signal(&signals) {
            stopped = Some(name);
            break;
        }
        if options.frames.is_some_and(|n| rec.stats().frames >= n)
            || limit.is_some_and(|l| start.elapsed() >= l)
        {
            break;
        }
        let frame = match opened.source.next_frame(Duration::from_secs(5)) {
            Ok(f) => f,
            Err(e) => {
                source_error = Some(e);
                break;
            }
        };
        let first = rec.stats().frames == 0;
        rec.write(frame)?;
        if first {
            print(&format!(
                "recording to {}: {}",
                options.output.display(),
                rec.describe()
            ));
        }
        if last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            print(&status_line(
                &rec.stats(),
                start.elapsed(),
                &encoder_name(&rec),
            ));
        }
    }
    let elapsed = start.elapsed();
    let stats = rec.finish()?;
    if let Some(e) = source_error {
        log::error!(
            "the source failed after {} frames; {} is finished up to them",
            stats.frames,
            options.output.display()
        );
        return Err(e.into());
    }
    let why = stopped.map_or_else(String::new, |s| format!(" (stopped on {s})"));
    Ok(format!(
        "{}\nwrote {}: {} frames, {} bytes, {:.2} s{why}; encoder {}; planes imported {}, frames copied {}",
        status_line(&stats, elapsed, &encoder_name(&rec)),
        options.output.display(),
        stats.samples,
        stats.bytes,
        elapsed.as_secs_f64(),
        rec.describe(),
        stats.encoder.imports,
        stats.encoder.copied_frames,
    ))
}

/// The encoder's description up to its reason (the part before `: `).
fn encoder_name(rec: &Recorder) -> String {
    let d = rec.describe();
    d.split(": ").next().unwrap_or(&d).to_string()
}
