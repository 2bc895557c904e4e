//! `zerocam serve`: one camera lent to many processes over a Unix socket
//! (docs/sharing.md). Prints a line a second: clients connected, frames
//! served, leases, skips and the publisher's CPU time per frame.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use zerocam_capture::share::{Publisher, PublisherConfig, PublisherStats};

use crate::bench::cpu_time;
use crate::CliError;
use zerocam_capture::open::{open, SourceSpec};

/// How `serve` listens and when it stops.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The socket path.
    pub socket: PathBuf,
    /// User ids allowed besides the publisher's own.
    pub allow_uids: Vec<u32>,
    /// Group ids allowed.
    pub allow_gids: Vec<u32>,
    /// A lease's deadline.
    pub lease: Duration,
    /// The most frames one client holds.
    pub max_leases: u16,
    /// Stop after this many frames (`None`: never, or as `once` says).
    pub frames: Option<u64>,
    /// Stop when the last client leaves (after at least one came).
    pub once: bool,
}

/// One status line of `stats`, `cpu` spent over `frames` frames.
pub fn status_line(stats: &PublisherStats, cpu: Duration) -> String {
    let per_frame = cpu.as_secs_f64() * 1e6 / stats.frames.max(1) as f64;
    format!(
        "clients {} (connections {}), frames {}, lent {}, skips {}, expired {}, reclaimed {}, \
         late releases {}, refused {}, violations {}, publisher CPU per frame {per_frame:.1} µs",
        stats.clients,
        stats.connections,
        stats.frames,
        stats.lent,
        stats.skips,
        stats.expired,
        stats.reclaimed,
        stats.late_releases,
        stats.rejected,
        stats.violations,
    )
}

/// Serves `spec`'s source at `options.socket`, calling `print` with the
/// description and then a status line each second; the last status line is
/// returned.
///
/// # Errors
/// The source's errors, and [`CliError::Share`] when the socket cannot be
/// bound or the source fails while serving.
pub fn serve(
    spec: &SourceSpec,
    options: &ServeOptions,
    mut print: impl FnMut(&str),
) -> Result<String, CliError> {
    // V4L2 buffers exported or allocated read-only: clients cannot write
    // into frames that other clients read.
    let opened = open(&SourceSpec {
        read_only: true,
        ..spec.clone()
    })?;
    let config = PublisherConfig {
        allow_uids: options.allow_uids.clone(),
        allow_gids: options.allow_gids.clone(),
        lease: options.lease,
        max_leases: options.max_leases,
        ..PublisherConfig::new(&options.socket)
    };
    let description = opened.description;
    let mut publisher = Publisher::new(opened.source, config)?;
    // Only once the socket is bound and listening: a client that reads this
    // line and connects at once must find it.
    print(&format!(
        "{description}\nserving at {} (mode 0660)",
        options.socket.display()
    ));
    let cpu0 = cpu_time();
    let mut last = Instant::now();
    loop {
        publisher.serve_frame(Duration::from_millis(100))?;
        let done = options.frames.is_some_and(|n| publisher.frames() >= n)
            || (options.once && publisher.connections() > 0 && publisher.clients() == 0);
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
        }
    }
}
