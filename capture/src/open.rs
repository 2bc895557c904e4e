//! Opening a source by its spec, as the CLI, the examples and the C API do:
//! a V4L2 device, `libcamera:<id>`, `unix:<socket>`, `gst:<pipeline>`, or the
//! built-in pattern source when no camera is given or present.

use std::path::PathBuf;

use crate::{
    BufferMode, CaptureError, CaptureFormat, Device, FrameSource, NewStreamError, PatternConfig,
    PatternSource, Stream, StreamConfig,
};

/// What to open.
#[derive(Debug, Clone)]
pub struct SourceSpec {
    /// A device path, `libcamera:<id>` (or `libcamera`: the first libcamera
    /// camera), `unix:<socket>` (a publisher's frames: `zerocam serve`),
    /// `gst:<pipeline>` (a GStreamer pipeline, feature `gstreamer`),
    /// `pattern`, or `None` to pick the first libcamera camera
    /// (feature `libcamera`), else the first V4L2 camera, else the pattern.
    pub device: Option<String>,
    /// The format (default: NV12, or the device's current format).
    pub format: Option<CaptureFormat>,
    /// The size (default: 1280x720 for the pattern, else the device's current).
    pub size: Option<(u32, u32)>,
    /// Frame rate to ask for.
    pub fps: Option<f64>,
    /// Buffers.
    pub buffers: u32,
    /// V4L2 buffer mode.
    pub mode: BufferMode,
    /// Open V4L2 buffers read-only ([`StreamConfig::read_only`]), as
    /// `zerocam serve` does to lend them to other processes.
    pub read_only: bool,
}

impl SourceSpec {
    /// `device` with every default: NV12 or the device's current format and
    /// size, the device's rate, 4 MMAP buffers, read-write.
    pub fn new(device: Option<String>) -> SourceSpec {
        SourceSpec {
            device,
            format: None,
            size: None,
            fps: None,
            buffers: 4,
            mode: BufferMode::Mmap,
            read_only: false,
        }
    }
}

/// The opened source and a line saying what it is.
pub struct Opened {
    /// The source.
    pub source: Box<dyn FrameSource>,
    /// E.g. `/dev/video0 (vivid): NV12 1280x720, mmap` or the pattern notice.
    pub description: String,
    /// Whether it is the built-in pattern.
    pub is_pattern: bool,
}

use crate::capture_devices;

/// Opens `spec`.
///
/// # Errors
/// The device's errors (missing, not a camera, unsupported format or size).
pub fn open(spec: &SourceSpec) -> Result<Opened, CaptureError> {
    open_or_fall_back(spec, None)
}

/// Opens `spec`; when a V4L2 device cannot do `spec.mode`
/// (`UnsupportedMode`: no DMA heap, a driver without DMABUF), streams in
/// `fallback` on the same open device (the device comes back with the error)
/// and says so in the description.
///
/// # Errors
/// As [`open`].
pub fn open_or_fall_back(
    spec: &SourceSpec,
    fallback: Option<BufferMode>,
) -> Result<Opened, CaptureError> {
    if let Some(socket) = spec.device.as_deref().and_then(|d| d.strip_prefix("unix:")) {
        return open_subscriber(socket, spec);
    }
    if let Some(pipeline) = spec.device.as_deref().and_then(|d| d.strip_prefix("gst:")) {
        return open_gst(pipeline);
    }
    if let Some(id) = spec
        .device
        .as_deref()
        .and_then(|d| d.strip_prefix("libcamera:"))
    {
        return open_libcamera(Some(id), spec);
    }
    // With the libcamera feature, a libcamera camera comes first: on a
    // Raspberry Pi the first V4L2 node is the CSI receiver's raw Bayer.
    #[cfg(feature = "libcamera")]
    if spec.device.is_none() && crate::libcamera_cameras().is_ok_and(|c| !c.is_empty()) {
        return open_libcamera(None, spec);
    }
    let device = match spec.device.as_deref() {
        Some("pattern") => None,
        Some("libcamera") => return open_libcamera(None, spec),
        Some(d) => Some(PathBuf::from(d)),
        None => capture_devices().into_iter().next(),
    };
    let Some(path) = device else {
        let format = spec.format.unwrap_or(crate::CAPTURE_FORMATS[0]);
        let (w, h) = spec.size.unwrap_or((1280, 720));
        let source = PatternSource::new(PatternConfig {
            fps: spec.fps,
            buffers: spec.buffers,
            ..PatternConfig::new(format, w, h)
        })?;
        let why = if spec.device.is_some() {
            "pattern asked for"
        } else {
            "no camera given and none found"
        };
        return Ok(Opened {
            source: Box::new(source),
            description: format!(
                "{why}: using the built-in pattern source ({} {w}x{h})",
                format.name
            ),
            is_pattern: true,
        });
    };
    let mut d = Device::open(&path)?;
    let current = d.format().ok();
    let format = spec
        .format
        .or(current.as_ref().map(|c| c.format))
        .unwrap_or(crate::CAPTURE_FORMATS[0]);
    let (w, h) = spec
        .size
        .or(current.as_ref().map(|c| (c.width, c.height)))
        .unwrap_or((1280, 720));
    d.set_format(format, w, h)?;
    if let Some(fps) = spec.fps {
        d.set_frame_rate(fps)?;
    }
    let mut description = format!(
        "{} ({}, {} API): {} {w}x{h}, ",
        path.display(),
        d.info().driver,
        d.info().api,
        format.name,
    );
    let config = |mode| StreamConfig {
        buffers: spec.buffers,
        mode,
        read_only: spec.read_only,
        ..Default::default()
    };
    let stream = match (Stream::new(d, config(spec.mode)), fallback) {
        (Ok(stream), _) => {
            description += &format!("{} buffers", spec.mode.name());
            stream
        }
        (
            Err(NewStreamError {
                device,
                error: error @ CaptureError::UnsupportedMode { .. },
            }),
            Some(mode),
        ) => {
            let stream = Stream::new(*device, config(mode))?;
            description += &format!("{} buffers ({error}; falling back)", mode.name());
            stream
        }
        (Err(e), _) => return Err(e.error),
    };
    Ok(Opened {
        source: Box::new(stream),
        description,
        is_pattern: false,
    })
}

/// Subscribes to the publisher at `socket`: its format, size, rate and
/// buffers are the publisher's, so `spec`'s are ignored (the description
/// says so when any was given).
fn open_subscriber(socket: &str, spec: &SourceSpec) -> Result<Opened, CaptureError> {
    let source = crate::share::Subscriber::connect(socket)?;
    let f = source.stream_format();
    let mut description = format!(
        "unix:{socket} (a publisher's frames): {} {}x{}, {} buffers",
        f.format.name,
        f.width,
        f.height,
        source.stats().buffers
    );
    if spec.format.is_some() || spec.size.is_some() || spec.fps.is_some() {
        description += " (format, size and rate are the publisher's: the options are ignored)";
    }
    Ok(Opened {
        source: Box::new(source),
        description,
        is_pattern: false,
    })
}

/// Opens libcamera camera `id` (or the first) as `spec` asks (default NV12
/// 640x480); the V4L2 buffer mode does not apply, and a frame rate is
/// refused (`LibcameraUnsupported`) rather than ignored.
#[cfg(feature = "libcamera")]
fn open_libcamera(id: Option<&str>, spec: &SourceSpec) -> Result<Opened, CaptureError> {
    use crate::{LibcameraConfig, LibcameraSource};
    if spec.fps.is_some() {
        return Err(CaptureError::LibcameraUnsupported {
            camera: id.map_or("libcamera".into(), |id| format!("libcamera:{id}")),
            what: "a frame rate (--fps)",
        });
    }
    let format = spec.format.unwrap_or(crate::CAPTURE_FORMATS[0]);
    let (w, h) = spec.size.unwrap_or((640, 480));
    let source = LibcameraSource::open(LibcameraConfig {
        camera: id.map(str::to_owned),
        buffers: spec.buffers,
        ..LibcameraConfig::new(format, w, h)
    })?;
    let f = source.stream_format();
    let mut description = format!(
        "{} (libcamera): {} {}x{}, {} buffers",
        source.name().display(),
        f.format.name,
        f.width,
        f.height,
        source.stats().buffers
    );
    if !source.adjustments().is_empty() {
        description += &format!(" (libcamera adjusted: {})", source.adjustments().join(", "));
    }
    Ok(Opened {
        source: Box::new(source),
        description,
        is_pattern: false,
    })
}

/// Without the `libcamera` feature: says which feature is missing.
#[cfg(not(feature = "libcamera"))]
fn open_libcamera(id: Option<&str>, _spec: &SourceSpec) -> Result<Opened, CaptureError> {
    Err(crate::ArgumentError::FeatureMissing {
        what: format!("libcamera:{}", id.unwrap_or_default()),
        feature: "libcamera",
    }
    .into())
}

/// `gst:PIPELINE`: a GStreamer pipeline (feature `gstreamer`); its caps
/// decide the format and size.
#[cfg(feature = "gstreamer")]
fn open_gst(pipeline: &str) -> Result<Opened, CaptureError> {
    let source = crate::GstSource::new(pipeline)?;
    let f = source.stream_format();
    let description = format!(
        "gst:{pipeline} (GStreamer): {} {}x{}",
        f.format.name, f.width, f.height
    );
    Ok(Opened {
        source: Box::new(source),
        description,
        is_pattern: false,
    })
}

#[cfg(not(feature = "gstreamer"))]
fn open_gst(pipeline: &str) -> Result<Opened, CaptureError> {
    Err(crate::ArgumentError::FeatureMissing {
        what: format!("gst:{pipeline}"),
        feature: "gstreamer",
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unix_spec_subscribes_and_names_the_socket_when_nobody_listens() {
        let socket =
            std::env::temp_dir().join(format!("zerocam-nobody-{}.sock", std::process::id()));
        let spec = SourceSpec::new(Some(format!("unix:{}", socket.display())));
        let Err(e) = open(&spec) else {
            panic!("nothing listens at {}", socket.display());
        };
        assert!(
            matches!(
                &e,
                CaptureError::Share(crate::share::SubscribeError::Connect { socket: s, .. })
                    if *s == socket
            ),
            "{e}"
        );
    }
}
