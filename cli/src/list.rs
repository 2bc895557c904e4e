//! `zerocam list` and `zerocam info DEVICE`.

use std::fmt::Write;
use std::path::Path;

use zerocam_capture::v4l2::FrameSizes;
use zerocam_capture::{CaptureError, Device};

use zerocam_capture::capture_devices;

/// One device as a tree: driver, card, bus, API, formats → sizes → intervals;
/// with `controls`, its controls too.
pub fn describe(path: &Path, controls: bool) -> Result<String, CaptureError> {
    let d = Device::open(path)?;
    let i = d.info();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {} ({}), bus {}, {} API",
        path.display(),
        i.card,
        i.driver,
        i.bus_info,
        i.api
    );
    for f in d.formats()? {
        let mark = f
            .capture
            .map_or(String::new(), |c| format!(" [zerocam: {}]", c.name));
        let _ = writeln!(s, "  {} {}{mark}", f.fourcc, f.description);
        match d.frame_sizes(f.fourcc)? {
            FrameSizes::Discrete(sizes) => {
                for (w, h) in sizes {
                    let fps: Vec<String> = d
                        .frame_intervals(f.fourcc, w, h)?
                        .iter()
                        .map(|iv| {
                            format!("{:.4}", iv.fps())
                                .trim_end_matches('0')
                                .trim_end_matches('.')
                                .to_owned()
                        })
                        .collect();
                    let _ = writeln!(s, "    {w}x{h}: {} fps", fps.join(", "));
                }
            }
            stepwise => {
                let _ = writeln!(s, "    {stepwise}");
            }
        }
    }
    if controls {
        let _ = writeln!(s, "  controls:");
        for c in d.controls()? {
            let _ = writeln!(
                s,
                "    {} = {} ({}..{}, default {})",
                c.name,
                d.get_control(c.id).map_or("?".into(), |v| v.to_string()),
                c.minimum,
                c.maximum,
                c.default
            );
        }
    }
    Ok(s)
}

/// The memory and GPU facts `zerocam list` ends with. The GPU line comes
/// from starting zerocam's GL thread (surfaceless EGL) and asking it.
pub fn platform() -> String {
    let heaps = zerocam_tensor::dma_heaps();
    let gpu = match zerocam_gpu::Gpu::new() {
        Ok(gpu) => {
            let i = gpu.info();
            format!(
                "EGL: {} ({}, {} platform)\nEGL dma-buf import: {}\n",
                i.renderer,
                i.version,
                i.platform,
                if i.dma_buf_import && i.image_external {
                    "yes"
                } else {
                    "no (frames are uploaded)"
                }
            )
        }
        Err(e) => format!("EGL: unavailable ({e})\nEGL dma-buf import: no\n"),
    };
    #[cfg(feature = "cuda")]
    let cuda = zerocam_cuda::probe(false).summary() + "\n";
    #[cfg(not(feature = "cuda"))]
    let cuda = "CUDA: not built (feature `cuda` of zerocam-examples)\n";
    format!(
        "DMA heaps: {}\nshared memory: {}\n{gpu}{cuda}",
        if heaps.is_empty() {
            "none".into()
        } else {
            heaps.join(", ")
        },
        if zerocam_tensor::is_shm_available() {
            "yes"
        } else {
            "no"
        }
    )
}

/// `zerocam list`.
pub fn list() -> Result<String, CaptureError> {
    let devices = capture_devices();
    let mut s = String::new();
    if devices.is_empty() {
        s.push_str(
            "no V4L2 capture device found: capture and bench use the built-in pattern source\n",
        );
    }
    for p in devices {
        s.push_str(&describe(&p, false)?);
    }
    s.push_str(&super::libcamera::list());
    s.push_str(&platform());
    Ok(s)
}
