//! The Chromium process: a fresh temporary folder (profile and stderr log),
//! the launch, the DevTools port it reports, and the cleanup.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::BrowserError;

/// How long Chromium may take to write `DevToolsActivePort`.
const STARTUP: Duration = Duration::from_secs(20);

/// A running Chromium and its temporary folder; dropping it kills the one
/// and removes the other.
pub(super) struct Process {
    pub(super) child: Child,
    /// The temporary folder: `profile/` (the user data dir) and `stderr.log`.
    dir: PathBuf,
    pub(super) program: String,
}

/// Where the browser-level DevTools endpoint listens.
pub(super) struct Endpoint {
    pub(super) port: u16,
    /// `/devtools/browser/<id>`.
    pub(super) path: String,
}

impl Process {
    /// Starts `program` headless with a fresh profile; returns once it has
    /// written its DevTools port.
    pub(super) fn launch(program: String) -> Result<(Process, Endpoint), BrowserError> {
        let dir = fresh_dir()?;
        let (profile, log) = match prepare(&dir) {
            Ok(prepared) => prepared,
            Err(e) => {
                remove_dir(&dir);
                return Err(e);
            }
        };
        let log_out = log.try_clone();
        // On a core of its own where there are two or more (the last): a
        // browser on the same small machine must not take the CPU the
        // program under test needs (on a board, the browser runs on
        // another machine). Not by `nice`: Chromium sets its processes'
        // priorities itself.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut command = if cpus > 1 {
            let mut c = Command::new("taskset");
            c.args(["-c", &(cpus - 1).to_string()]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        command
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args([
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--disable-extensions",
                "--metrics-recording-only",
                "--no-pings",
                "--disable-dev-shm-usage",
                "--mute-audio",
                "about:blank",
            ])
            .stdin(Stdio::null())
            .stdout(log_out.map(Stdio::from).unwrap_or_else(|_| Stdio::null()))
            .stderr(log);
        let child = match command.spawn() {
            Ok(child) => child,
            Err(source) => {
                remove_dir(&dir);
                return Err(BrowserError::Spawn { program, source });
            }
        };
        let mut process = Process {
            child,
            dir,
            program,
        };
        let endpoint = process.endpoint(&profile.join("DevToolsActivePort"))?;
        Ok((process, endpoint))
    }

    /// Polls `DevToolsActivePort` (line 1 the port, line 2 the browser
    /// target's path) until it is complete, Chromium exits or
    /// [`STARTUP`] passes.
    fn endpoint(&mut self, file: &Path) -> Result<Endpoint, BrowserError> {
        let start = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(file) {
                let mut lines = text.lines();
                let port = lines.next().and_then(|l| l.trim().parse::<u16>().ok());
                let path = lines.next().map(str::trim).unwrap_or("");
                if let Some(port) = port.filter(|&p| p != 0) {
                    if path.starts_with("/devtools/browser/") {
                        let path = path.to_owned();
                        return Ok(Endpoint { port, path });
                    }
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(self.startup_error(format!("it exited ({status})")));
            }
            if start.elapsed() >= STARTUP {
                return Err(self.startup_error(format!(
                    "{} was not written within {STARTUP:?}",
                    file.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn startup_error(&self, reason: String) -> BrowserError {
        BrowserError::Startup {
            program: self.program.clone(),
            reason,
            stderr: self.stderr_tail(),
        }
    }

    /// Whether Chromium has exited, and how.
    pub(super) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last lines (at most 20, from the last 4 KiB) of Chromium's
    /// stderr, for error messages.
    pub(super) fn stderr_tail(&self) -> String {
        let path = self.dir.join("stderr.log");
        let mut bytes = Vec::new();
        let read = File::open(&path).and_then(|mut f| {
            let len = f.metadata()?.len();
            f.seek(SeekFrom::Start(len.saturating_sub(4096)))?;
            f.read_to_end(&mut bytes)
        });
        if let Err(e) = read {
            return format!("(cannot read {}: {e})", path.display());
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        if tail.trim().is_empty() {
            "(nothing)".to_owned()
        } else {
            tail
        }
    }

    /// Waits up to `grace` for Chromium to exit on its own, then kills it.
    pub(super) fn stop(&mut self, grace: Duration) {
        let start = Instant::now();
        while start.elapsed() < grace {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop(Duration::ZERO);
        remove_dir(&self.dir);
    }
}

/// Creates `dir/profile` (the user data dir) and `dir/stderr.log`.
fn prepare(dir: &Path) -> Result<(PathBuf, File), BrowserError> {
    let profile = dir.join("profile");
    std::fs::create_dir(&profile).map_err(|source| BrowserError::Io {
        what: format!("creating {}", profile.display()),
        source,
    })?;
    let log_path = dir.join("stderr.log");
    let log = File::create(&log_path).map_err(|source| BrowserError::Io {
        what: format!("creating {}", log_path.display()),
        source,
    })?;
    Ok((profile, log))
}

/// Removes `dir`, retrying briefly: Chromium's helper processes may still
/// be writing into it just after the browser process is gone.
fn remove_dir(dir: &Path) {
    for _ in 0..10 {
        if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A new, empty folder under the system's temporary folder.
fn fresh_dir() -> Result<PathBuf, BrowserError> {
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    loop {
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "zerocam-chromium-{}-{n}-{nanos:08x}",
            std::process::id()
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => {
                return Err(BrowserError::Io {
                    what: format!("creating {}", dir.display()),
                    source,
                })
            }
        }
    }
}
