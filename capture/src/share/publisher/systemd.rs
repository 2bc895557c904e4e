//! systemd's socket activation: the listening socket a `.socket` unit bound
//! and passed to this process as fd 3, announced by `LISTEN_PID` (this
//! process's id) and `LISTEN_FDS` (how many fds, here exactly one). The only
//! `unsafe` is owning fd 3, once.

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use super::PublishError;

/// The first fd systemd passes (`SD_LISTEN_FDS_START`).
const FIRST_FD: i32 = 3;

/// Whether fd 3 was taken already (it is owned once).
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Takes the listening socket systemd passed this process, if any:
/// `Ok(None)` when `LISTEN_PID`/`LISTEN_FDS` are not set or name another
/// process. The variables (and `LISTEN_FDNAMES`) are unset whatever comes of
/// it, so no child inherits them. Check the fd with
/// [`Publisher::from_listener`](super::Publisher::from_listener).
///
/// Call it early, while the process has one thread: it changes the
/// environment.
///
/// # Errors
/// [`PublishError::Activation`] when the variables are set for this process
/// but are not numbers, `LISTEN_FDS` is not 1, fd 3 is not an open socket, or
/// it was taken already.
pub fn take_systemd_socket() -> Result<Option<OwnedFd>, PublishError> {
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    if pid.is_none() && fds.is_none() {
        return Ok(None);
    }
    for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(name);
    }
    let error = |why| PublishError::Activation {
        pid: pid.clone(),
        fds: fds.clone(),
        why,
    };
    let for_pid: u32 = pid
        .as_deref()
        .ok_or_else(|| error("LISTEN_FDS without LISTEN_PID"))?
        .trim()
        .parse()
        .map_err(|_| error("LISTEN_PID is not a process id"))?;
    if for_pid != std::process::id() {
        return Ok(None); // meant for another process (the one that exec'd us)
    }
    let count: u32 = fds
        .as_deref()
        .ok_or_else(|| error("LISTEN_PID without LISTEN_FDS"))?
        .trim()
        .parse()
        .map_err(|_| error("LISTEN_FDS is not a number"))?;
    if count != 1 {
        return Err(error("exactly one socket is taken (fd 3)"));
    }
    let link = std::fs::read_link(format!("/proc/self/fd/{FIRST_FD}"))
        .map_err(|_| error("fd 3 is not open"))?;
    if !link.to_string_lossy().starts_with("socket:") {
        return Err(error("fd 3 is not a socket"));
    }
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Err(error("fd 3 was taken already"));
    }
    // SAFETY: fd 3 is open and a socket (checked just above through
    // /proc/self/fd), systemd's protocol hands it to this process
    // (LISTEN_PID is our pid), and TAKEN makes this the only OwnedFd ever
    // made of it, so it is owned once and closed once.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(FIRST_FD) }))
}
