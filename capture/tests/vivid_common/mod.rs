//! What the vivid lab tests share: the two device nodes, the frame timeout,
//! a lock per node (tests that change a node's format or controls run one at
//! a time on it), a red device, stream configurations, taking frames,
//! pressing a vivid button and counting open fds.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use zerocam_capture::{BufferMode, Device, FrameSource, StreamConfig};

/// vivid's single-planar capture node.
pub const SINGLE: &str = "/dev/video0";
/// vivid's multi-planar capture node.
pub const MULTI: &str = "/dev/video1";
/// How long a test waits for a frame.
pub const WAIT: Duration = Duration::from_secs(10);

/// The buffer modes that stream in this lab. The arm64 lab's kernel
/// (Debian's arm64 config) has no DMA heaps, which `dmabuf` mode allocates
/// from: there only `mmap` streams, and
/// `lab_capture_dmabuf_mode_without_a_heap_is_a_typed_error` checks what
/// `dmabuf` says instead.
pub const MODES: &[BufferMode] = if cfg!(target_arch = "aarch64") {
    &[BufferMode::Mmap]
} else {
    &[BufferMode::Mmap, BufferMode::DmaBuf]
};

/// The mode a test streams in after an `mmap` stream: `dmabuf` where the lab
/// has a DMA heap, `mmap` again where it has none.
pub const AFTER_MMAP: BufferMode = MODES[MODES.len() - 1];

/// One test at a time per device node.
pub fn lock(path: &str) -> MutexGuard<'static, ()> {
    static SINGLE_LOCK: Mutex<()> = Mutex::new(());
    static MULTI_LOCK: Mutex<()> = Mutex::new(());
    let m = if path == SINGLE {
        &SINGLE_LOCK
    } else {
        &MULTI_LOCK
    };
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// vivid's node `path` drawing "100% Red" with no OSD text.
pub fn red_device(path: &str) -> Device {
    let d = Device::open(path).unwrap();
    d.set_menu("Test Pattern", "100% Red").unwrap();
    d.set_menu("OSD Text Mode", "None").unwrap();
    d
}

/// Presses vivid's button control `button` (a fault injection).
pub fn press(d: &Device, button: &str) {
    let c = d.control(button).unwrap();
    d.set_control(c.id, 1).unwrap();
}

/// Reloads vivid as the lab loads it (after a Disconnect unregistered it)
/// and waits for both nodes.
pub fn reload_vivid() {
    let ok = std::process::Command::new("sh")
        .arg("-c")
        .arg("modprobe -r vivid && modprobe vivid n_devs=2 multiplanar=1,2 node_types=0x1,0x1")
        .status()
        .unwrap()
        .success();
    assert!(ok, "vivid reloaded");
    for _ in 0..100 {
        if Device::open(SINGLE).is_ok() && Device::open(MULTI).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("vivid's nodes did not come back");
}

/// The process's open file descriptors.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// The default stream configuration with `edit` applied.
pub fn config(edit: impl FnOnce(&mut StreamConfig)) -> StreamConfig {
    let mut c = StreamConfig::default();
    edit(&mut c);
    c
}

/// Takes `n` frames from `s`, dropping each (capture goes on).
pub fn frames(s: &mut impl FrameSource, n: usize) {
    for _ in 0..n {
        s.next_frame(WAIT).unwrap();
    }
}
