//! What the libcamera lab test binaries share: the virtual camera's id, one
//! test at a time, its NV12 configuration, the frame timeout, taking frames,
//! the process's fd count.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use zerocam_capture::{FrameSource, LibcameraConfig};

/// The lab's virtual camera (its config is written by the lab's guest init).
pub const CAMERA: &str = "Virtual0";

/// How long a test waits for a frame.
pub const WAIT: Duration = Duration::from_secs(20);

/// Takes `n` frames from `s`, dropping each (capture goes on).
pub fn frames(s: &mut impl FrameSource, n: usize) {
    for _ in 0..n {
        s.next_frame(WAIT).unwrap();
    }
}

/// One test at a time: a camera can be acquired once, and the manager is per process.
pub fn lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// NV12 at `w`x`h` from the virtual camera.
pub fn nv12(w: u32, h: u32) -> LibcameraConfig {
    LibcameraConfig {
        camera: Some(CAMERA.into()),
        ..LibcameraConfig::new("NV12".parse().unwrap(), w, h)
    }
}

/// Open fds of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}
