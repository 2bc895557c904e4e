//! vivid streams for lab tests (feature `vivid`): a node set to a solid
//! red pattern without the on-screen text, so every pixel has one known value.

use zerocam_capture::{BufferMode, CaptureFormat, Device, Stream, StreamConfig, CAPTURE_FORMATS};

/// The capture format named `name` (`"NV12"`, `"YUYV"`…).
///
/// # Panics
/// For a name zerocam does not capture.
pub fn format(name: &str) -> CaptureFormat {
    #[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
    CAPTURE_FORMATS
        .into_iter()
        .find(|f| f.name == name)
        .unwrap()
}

/// A 320x180 60 fps stream of solid red (vivid's "100% Red", no OSD text)
/// from the vivid node at `path`, in format `name` and buffer `mode`.
///
/// # Panics
/// Where the node cannot be opened or set up (a lab test has nothing to
/// check then).
#[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
pub fn red_stream(path: &str, name: &str, mode: BufferMode) -> Stream {
    let mut d = Device::open(path).unwrap();
    d.set_menu("Test Pattern", "100% Red").unwrap();
    d.set_menu("OSD Text Mode", "None").unwrap();
    d.set_format(format(name), 320, 180).unwrap();
    d.set_frame_rate(60.0).unwrap();
    let config = StreamConfig {
        mode,
        ..Default::default()
    };
    Stream::new(d, config).unwrap()
}
