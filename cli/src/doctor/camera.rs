//! The cameras: each V4L2 capture node (driver, buffer API, what its queue
//! supports, the formats zerocam captures), the media controllers and the
//! nodes under each (an i.MX ISI or ISP pipeline), and a live capture from
//! the first camera with its import counts and frame age.

use std::path::{Path, PathBuf};

use zerocam_capture::open::SourceSpec;
use zerocam_capture::v4l2::BufferApi;
use zerocam_capture::{capture_devices, Device};

use super::system::{entries, node_access};
use super::Check;

const CAMERAS: &str = "cameras";
const CAPTURE: &str = "capture";

/// Every capture node and media controller; the first camera zerocam can
/// capture from, if any.
pub(super) fn check(out: &mut Vec<Check>) -> Option<PathBuf> {
    let devices = capture_devices();
    if devices.is_empty() {
        out.push(Check::fail(
            CAMERAS,
            "V4L2 cameras",
            "no /dev/video* capture node",
            "connect a camera and check `dmesg` for its driver (or `sudo modprobe vivid` for a virtual one)",
        ));
    }
    let mut first = None;
    for path in devices {
        let (check, usable) = camera(&path);
        if usable && first.is_none() {
            first = Some(path);
        }
        out.push(check);
    }
    media(out);
    first
}

/// One capture node; whether zerocam can capture from it. (`Device::open`
/// refuses a node without capture or streaming: its error is the detail.)
fn camera(path: &Path) -> (Check, bool) {
    let label = path.display().to_string();
    let d = match Device::open(path) {
        Ok(d) => d,
        Err(e) => {
            let fix = node_access(path)
                .err()
                .unwrap_or_else(|| "check `dmesg` for the driver's error".into());
            return (Check::fail(CAMERAS, label, e.to_string(), fix), false);
        }
    };
    let i = d.info();
    let api = match i.api {
        BufferApi::MultiPlanar => "MPLANE",
        BufferApi::SinglePlanar => "single-planar",
    };
    let formats: Vec<String> = d
        .formats()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| f.capture.map(|c| c.name.to_string()))
        .collect();
    let support = d.buffer_support();
    let detail = format!(
        "{} ({}), {api}, buffers: {}, zerocam formats: {}",
        i.card,
        i.driver,
        support
            .as_ref()
            .map_or_else(|e| format!("unknown ({e})"), ToString::to_string),
        if formats.is_empty() {
            "none".into()
        } else {
            formats.join(", ")
        }
    );
    if formats.is_empty() {
        let fix = "set a format the driver converts to (NV12, YUYV, RGB) on its media pipeline";
        return (Check::fail(CAMERAS, label, detail, fix), false);
    }
    match support {
        Ok(s) if s.dmabuf => (Check::ok(CAMERAS, label, detail), true),
        Ok(_) => (
            Check::warn(
                CAMERAS,
                label,
                detail,
                "none needed for the default mmap mode (exported dma-bufs); dmabuf mode needs a vb2 driver with V4L2_MEMORY_DMABUF",
            ),
            true,
        ),
        Err(_) => (
            Check::warn(
                CAMERAS,
                label,
                detail,
                "another process may stream from it: stop it, or share it with `zerocam serve`",
            ),
            true,
        ),
    }
}

/// The media controllers in sysfs: each one's model and driver, and the
/// video and sub-device nodes of its device (the pipeline a board's camera
/// is configured through: ISI, ISP, CSI receiver, sensor).
fn media(out: &mut Vec<Check>) {
    let controllers = entries("/sys/bus/media/devices");
    if controllers.is_empty() {
        out.push(Check::ok(
            CAMERAS,
            "media controllers",
            "none (a USB or simple camera needs none)",
        ));
    }
    // The device a node hangs under: /sys/devices/…/DEV/mediaN, and
    // /sys/devices/…/DEV/video4linux/videoN.
    let up = |p: &Path, n: usize| {
        let real = std::fs::canonicalize(p).ok()?;
        real.ancestors().nth(n).map(Path::to_path_buf)
    };
    let v4l = entries("/sys/class/video4linux");
    for mc in controllers {
        let name = mc
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let model = std::fs::read_to_string(mc.join("model"))
            .map(|m| m.trim().to_owned())
            .unwrap_or_else(|_| "unknown model".into());
        let dev = up(&mc, 1);
        let driver = dev
            .as_deref()
            .map(super::system::driver_of)
            .unwrap_or_else(|| "unknown driver".into());
        let nodes: Vec<String> = v4l
            .iter()
            .filter(|n| dev.is_some() && up(n, 2) == dev)
            .filter_map(|n| n.file_name().map(|f| f.to_string_lossy().into_owned()))
            .collect();
        out.push(Check::ok(
            CAMERAS,
            format!("/dev/{name}"),
            format!(
                "{model} ({driver}), nodes on its device: {}",
                if nodes.is_empty() {
                    "none".into()
                } else {
                    nodes.join(", ")
                }
            ),
        ));
    }
}

/// `frames` frames from `first`: frame rate, imports against the buffers'
/// planes (each imported once), cache hits and frame age.
pub(super) fn capture(out: &mut Vec<Check>, first: Option<&Path>, frames: u64) {
    if frames == 0 {
        return;
    }
    let Some(path) = first else {
        out.push(Check::fail(
            CAPTURE,
            "live capture",
            "no camera to capture from",
            "connect a camera (`zerocam bench` runs the pattern source meanwhile)",
        ));
        return;
    };
    let spec = SourceSpec::new(Some(path.display().to_string()));
    let name = format!("{frames} frames from {}", path.display());
    match crate::bench::bench(&spec, frames, false) {
        Ok((what, r)) => {
            let planes = (r.buffers * r.planes) as u64;
            let detail = format!(
                "{what}: {:.1} fps, imports {} (buffers {} x planes {}), cache hits {}, dropped {}, frame age median {:.2} ms, p99 {:.2} ms",
                r.fps,
                r.imports,
                r.buffers,
                r.planes,
                r.cache_hits,
                r.dropped,
                r.latency_us_median / 1000.0,
                r.latency_us_p99 / 1000.0
            );
            if r.frames >= frames && r.imports <= planes {
                out.push(Check::ok(CAPTURE, name, detail));
            } else {
                out.push(Check::warn(
                    CAPTURE,
                    name,
                    detail,
                    "frames missing or buffers re-imported: run `zerocam bench` on it and file its output",
                ));
            }
        }
        Err(e) => out.push(Check::fail(
            CAPTURE,
            name,
            e.to_string(),
            "run `zerocam info` on it; check `dmesg` for the driver's error",
        )),
    }
}
