//! Opening a source by its spec, as the CLI, the examples, the C API and
//! Python do: a V4L2 device, `libcamera:<id>`, `unix:<socket>`,
//! `gst:<pipeline>`, or the built-in pattern source when no camera is given
//! or present.
//!
//! [`open`] gives a boxed [`FrameSource`]; [`open_source`] gives the same
//! source as an [`AnySource`] (its kind kept, for a caller that reconnects a
//! subscriber or sets a V4L2 device's controls later) and takes
//! [`OpenOptions`] (controls set at open, a buffer-mode fallback).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::share::Subscriber;
use crate::v4l2::NewStreamError;
use crate::{
    BufferMode, CaptureError, CaptureFormat, Device, Frame, FrameSource, PatternConfig,
    PatternSource, SharedPlane, Stream, StreamConfig, StreamFormat, StreamStats,
};

/// The spec of the pattern source whose frames carry their stamp.
pub const PATTERN_STAMP: &str = "pattern:stamp";

/// Whether `device` names the built-in pattern source (`pattern`,
/// [`PATTERN_STAMP`]).
pub fn is_pattern(device: &str) -> bool {
    device == "pattern" || device == PATTERN_STAMP
}

/// What to open.
#[derive(Debug, Clone)]
pub struct SourceSpec {
    /// A device path, `libcamera:<id>` (or `libcamera`: the first libcamera
    /// camera), `unix:<socket>` (a publisher's frames: `zerocam serve`),
    /// `gst:<pipeline>` (a GStreamer pipeline, feature `gstreamer`),
    /// `zenoh:<key>` (JPEG frames from a Zenoh topic, feature `zenoh`),
    /// `pattern` (`pattern:stamp`: each frame's sequence number and capture
    /// time drawn into it, see [`stamp`](crate::pattern::stamp)), or `None`
    /// to pick the first libcamera camera
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
    /// The Zenoh session of a `zenoh:<key>` source (endpoints, config file).
    pub zenoh: crate::zenoh_source::ZenohOptions,
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
            zenoh: crate::zenoh_source::ZenohOptions::default(),
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

/// An opened source is a source: `open(...)?.next_frame(...)` reads it, and
/// its description stays at hand.
impl FrameSource for Opened {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame, CaptureError> {
        self.source.next_frame(timeout)
    }

    fn stream_format(&self) -> &StreamFormat {
        self.source.stream_format()
    }

    fn stats(&self) -> StreamStats {
        self.source.stats()
    }

    fn name(&self) -> &Path {
        self.source.name()
    }

    fn read_only_planes(&self, index: usize) -> Result<Vec<SharedPlane>, CaptureError> {
        self.source.read_only_planes(index)
    }

    fn clock(&self) -> crate::frame::Clock {
        self.source.clock()
    }
}

use crate::capture_devices;

/// The value of a V4L2 control set by name ([`OpenOptions::controls`],
/// [`ControlValue::set`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlValue {
    /// An integer, boolean or button control's value.
    Int(i32),
    /// A menu control's item, by its name (e.g. vivid's `"100% Red"`).
    Menu(String),
}

impl ControlValue {
    /// Sets control `name` (matched without regard to case) of `device` to
    /// this value.
    ///
    /// # Errors
    /// [`CaptureError::NoSuchControl`] for a name the device does not have
    /// (or a menu item its menu does not list), and the `VIDIOC_S_CTRL`
    /// ioctl's errors.
    pub fn set(&self, device: &Device, name: &str) -> Result<(), CaptureError> {
        match self {
            ControlValue::Menu(item) => device.set_menu(name, item),
            ControlValue::Int(v) => {
                let info = device.control(name)?;
                device.set_control(info.id, *v)
            }
        }
    }
}

/// What [`open_source`] takes besides the [`SourceSpec`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenOptions {
    /// V4L2 controls set by name, in this order, right after the device
    /// opens (before its format is set). Only a V4L2 device has them: with
    /// any other source they are refused before it opens
    /// ([`CaptureError::NoSuchControl`] naming the source, or
    /// [`CaptureError::LibcameraUnsupported`]).
    pub controls: Vec<(String, ControlValue)>,
    /// The buffer mode a V4L2 device streams in when it cannot do
    /// [`SourceSpec::mode`] (see [`open_or_fall_back`]); `None`: fail.
    pub fallback: Option<BufferMode>,
}

/// What kind of source an [`AnySource`] is. Every kind exists whatever
/// features this crate was built with, so another crate can match on it
/// exhaustively (a variant of `AnySource` exists only with its feature,
/// which a crate using this one cannot test with `cfg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKind {
    /// A V4L2 device.
    V4l2,
    /// The built-in pattern source.
    Pattern,
    /// A publisher's frames (`unix:<socket>`).
    Subscriber,
    /// A libcamera camera.
    Libcamera,
    /// A GStreamer pipeline.
    Gst,
    /// A Zenoh topic.
    Zenoh,
}

/// A source [`open_source`] opened, of the kind the spec named.
pub enum AnySource {
    /// A V4L2 device's stream.
    V4l2(Box<Stream>),
    /// The built-in pattern source.
    Pattern(Box<PatternSource>),
    /// A publisher's frames (`unix:<socket>`).
    Subscriber(Box<Subscriber>),
    /// A libcamera camera (`libcamera:<id>`, `libcamera`; feature `libcamera`).
    #[cfg(feature = "libcamera")]
    Libcamera(Box<crate::LibcameraSource>),
    /// A GStreamer pipeline (`gst:<pipeline>`; feature `gstreamer`).
    #[cfg(feature = "gstreamer")]
    Gst(Box<crate::GstSource>),
    /// A Zenoh topic (`zenoh:<key>`; feature `zenoh`).
    #[cfg(feature = "zenoh")]
    Zenoh(Box<crate::ZenohSource>),
}

impl AnySource {
    /// Its kind.
    pub fn kind(&self) -> SourceKind {
        match self {
            AnySource::V4l2(_) => SourceKind::V4l2,
            AnySource::Pattern(_) => SourceKind::Pattern,
            AnySource::Subscriber(_) => SourceKind::Subscriber,
            #[cfg(feature = "libcamera")]
            AnySource::Libcamera(_) => SourceKind::Libcamera,
            #[cfg(feature = "gstreamer")]
            AnySource::Gst(_) => SourceKind::Gst,
            #[cfg(feature = "zenoh")]
            AnySource::Zenoh(_) => SourceKind::Zenoh,
        }
    }

    /// The source as a frame source.
    pub fn as_frame_source(&self) -> &dyn FrameSource {
        match self {
            AnySource::V4l2(s) => s.as_ref(),
            AnySource::Pattern(p) => p.as_ref(),
            AnySource::Subscriber(s) => s.as_ref(),
            #[cfg(feature = "libcamera")]
            AnySource::Libcamera(l) => l.as_ref(),
            #[cfg(feature = "gstreamer")]
            AnySource::Gst(g) => g.as_ref(),
            #[cfg(feature = "zenoh")]
            AnySource::Zenoh(z) => z.as_ref(),
        }
    }

    /// The source as a mutable frame source.
    pub fn as_frame_source_mut(&mut self) -> &mut dyn FrameSource {
        match self {
            AnySource::V4l2(s) => s.as_mut(),
            AnySource::Pattern(p) => p.as_mut(),
            AnySource::Subscriber(s) => s.as_mut(),
            #[cfg(feature = "libcamera")]
            AnySource::Libcamera(l) => l.as_mut(),
            #[cfg(feature = "gstreamer")]
            AnySource::Gst(g) => g.as_mut(),
            #[cfg(feature = "zenoh")]
            AnySource::Zenoh(z) => z.as_mut(),
        }
    }

    /// The source boxed, its kind forgotten (what [`open`] gives).
    pub fn into_boxed(self) -> Box<dyn FrameSource> {
        match self {
            AnySource::V4l2(s) => s,
            AnySource::Pattern(p) => p,
            AnySource::Subscriber(s) => s,
            #[cfg(feature = "libcamera")]
            AnySource::Libcamera(l) => l,
            #[cfg(feature = "gstreamer")]
            AnySource::Gst(g) => g,
            #[cfg(feature = "zenoh")]
            AnySource::Zenoh(z) => z,
        }
    }
}

impl FrameSource for AnySource {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame, CaptureError> {
        self.as_frame_source_mut().next_frame(timeout)
    }

    fn stream_format(&self) -> &StreamFormat {
        self.as_frame_source().stream_format()
    }

    fn stats(&self) -> StreamStats {
        self.as_frame_source().stats()
    }

    fn name(&self) -> &Path {
        self.as_frame_source().name()
    }

    fn read_only_planes(&self, index: usize) -> Result<Vec<SharedPlane>, CaptureError> {
        self.as_frame_source().read_only_planes(index)
    }

    fn clock(&self) -> crate::frame::Clock {
        self.as_frame_source().clock()
    }
}

/// What [`open_source`] opened: [`Opened`] with the source's kind kept.
pub struct OpenedSource {
    /// The source.
    pub source: AnySource,
    /// As [`Opened::description`].
    pub description: String,
    /// Whether it is the built-in pattern.
    pub is_pattern: bool,
}

impl From<OpenedSource> for Opened {
    fn from(o: OpenedSource) -> Opened {
        Opened {
            source: o.source.into_boxed(),
            description: o.description,
            is_pattern: o.is_pattern,
        }
    }
}

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
    let options = OpenOptions {
        fallback,
        ..OpenOptions::default()
    };
    open_source(spec, &options).map(Opened::from)
}

/// Opens `spec` as [`open_or_fall_back`] does (with `options.fallback`),
/// setting `options.controls` on a V4L2 device, and gives the source with
/// its kind.
///
/// # Errors
/// As [`open`]; a control the device does not have
/// ([`CaptureError::NoSuchControl`]) or cannot take; controls asked of a
/// source that is not a V4L2 device.
pub fn open_source(spec: &SourceSpec, options: &OpenOptions) -> Result<OpenedSource, CaptureError> {
    if let Some(socket) = spec.device.as_deref().and_then(|d| d.strip_prefix("unix:")) {
        refuse_controls(options, &format!("unix:{socket}"))?;
        return open_subscriber(socket, spec);
    }
    if let Some(key) = spec
        .device
        .as_deref()
        .and_then(|d| d.strip_prefix("zenoh:"))
    {
        refuse_controls(options, &format!("zenoh:{key}"))?;
        return open_zenoh(key, spec);
    }
    if let Some(pipeline) = spec.device.as_deref().and_then(|d| d.strip_prefix("gst:")) {
        refuse_controls(options, &format!("gst:{pipeline}"))?;
        return open_gst(pipeline);
    }
    if let Some(id) = spec
        .device
        .as_deref()
        .and_then(|d| d.strip_prefix("libcamera:"))
    {
        return open_libcamera(Some(id), spec, options);
    }
    // With the libcamera feature, a libcamera camera comes first: on a
    // Raspberry Pi the first V4L2 node is the CSI receiver's raw Bayer.
    #[cfg(feature = "libcamera")]
    if spec.device.is_none() && crate::libcamera_cameras().is_ok_and(|c| !c.is_empty()) {
        return open_libcamera(None, spec, options);
    }
    let device = match spec.device.as_deref() {
        Some(d) if is_pattern(d) => None,
        Some("libcamera") => return open_libcamera(None, spec, options),
        Some(d) => Some(PathBuf::from(d)),
        None => capture_devices().into_iter().next(),
    };
    let Some(path) = device else {
        refuse_controls(options, "pattern")?;
        let format = spec.format.unwrap_or(crate::CAPTURE_FORMATS[0]);
        let (w, h) = spec.size.unwrap_or((1280, 720));
        let stamp = spec.device.as_deref() == Some(PATTERN_STAMP);
        let source = PatternSource::new(PatternConfig {
            fps: spec.fps,
            buffers: spec.buffers,
            stamp,
            ..PatternConfig::new(format, w, h)
        })?;
        let why = if spec.device.is_some() {
            "pattern asked for"
        } else {
            "no camera given and none found"
        };
        return Ok(OpenedSource {
            source: AnySource::Pattern(Box::new(source)),
            description: format!(
                "{why}: using the built-in pattern source ({} {w}x{h}{})",
                format.name,
                if stamp { ", each frame stamped" } else { "" }
            ),
            is_pattern: true,
        });
    };
    let mut d = Device::open(&path)?;
    for (name, value) in &options.controls {
        value.set(&d, name)?;
    }
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
    let stream = match (Stream::new(d, config(spec.mode)), options.fallback) {
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
    Ok(OpenedSource {
        source: AnySource::V4l2(Box::new(stream)),
        description,
        is_pattern: false,
    })
}

/// Refuses `options.controls`, if any, for `source` (not a V4L2 device):
/// [`CaptureError::NoSuchControl`] naming the first.
fn refuse_controls(options: &OpenOptions, source: &str) -> Result<(), CaptureError> {
    match options.controls.first() {
        Some((name, _)) => Err(CaptureError::NoSuchControl {
            path: PathBuf::from(source),
            name: name.clone(),
        }),
        None => Ok(()),
    }
}

/// Subscribes to the publisher at `socket`: its format, size, rate and
/// buffers are the publisher's, so `spec`'s are ignored (the description
/// says so when any was given).
fn open_subscriber(socket: &str, spec: &SourceSpec) -> Result<OpenedSource, CaptureError> {
    let source = Subscriber::connect(socket)?;
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
    Ok(OpenedSource {
        source: AnySource::Subscriber(Box::new(source)),
        description,
        is_pattern: false,
    })
}

/// Opens libcamera camera `id` (or the first) as `spec` asks (default NV12
/// 640x480); the V4L2 buffer mode does not apply, and a frame rate or V4L2
/// controls are refused (`LibcameraUnsupported`) rather than ignored.
#[cfg(feature = "libcamera")]
fn open_libcamera(
    id: Option<&str>,
    spec: &SourceSpec,
    options: &OpenOptions,
) -> Result<OpenedSource, CaptureError> {
    use crate::{LibcameraConfig, LibcameraSource};
    let camera = || id.map_or("libcamera".into(), |id| format!("libcamera:{id}"));
    if spec.fps.is_some() {
        return Err(CaptureError::LibcameraUnsupported {
            camera: camera(),
            what: "a frame rate (--fps)",
        });
    }
    if !options.controls.is_empty() {
        return Err(CaptureError::LibcameraUnsupported {
            camera: camera(),
            what: "setting V4L2 controls",
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
    Ok(OpenedSource {
        source: AnySource::Libcamera(Box::new(source)),
        description,
        is_pattern: false,
    })
}

/// Without the `libcamera` feature: says which feature is missing.
#[cfg(not(feature = "libcamera"))]
fn open_libcamera(
    id: Option<&str>,
    _spec: &SourceSpec,
    _options: &OpenOptions,
) -> Result<OpenedSource, CaptureError> {
    Err(crate::ArgumentError::FeatureMissing {
        what: format!("libcamera:{}", id.unwrap_or_default()),
        feature: "libcamera",
    }
    .into())
}

/// `gst:PIPELINE`: a GStreamer pipeline (feature `gstreamer`); its caps
/// decide the format and size.
#[cfg(feature = "gstreamer")]
fn open_gst(pipeline: &str) -> Result<OpenedSource, CaptureError> {
    let source = crate::GstSource::new(pipeline)?;
    let f = source.stream_format();
    let description = format!(
        "gst:{pipeline} (GStreamer): {} {}x{}",
        f.format.name, f.width, f.height
    );
    Ok(OpenedSource {
        source: AnySource::Gst(Box::new(source)),
        description,
        is_pattern: false,
    })
}

#[cfg(not(feature = "gstreamer"))]
fn open_gst(pipeline: &str) -> Result<OpenedSource, CaptureError> {
    Err(crate::ArgumentError::FeatureMissing {
        what: format!("gst:{pipeline}"),
        feature: "gstreamer",
    }
    .into())
}

#[cfg(feature = "zenoh")]
fn open_zenoh(key: &str, spec: &SourceSpec) -> Result<OpenedSource, CaptureError> {
    if let Some(f) = spec
        .format
        .filter(|f| f.pixel != zerocam_tensor::PixelFormat::Rgb)
    {
        return Err(CaptureError::UnsupportedFormat {
            path: PathBuf::from(format!("zenoh:{key}")),
            fourcc: f.fourcc,
            offered: "RGB24 (JPEG topics decode to RGB)".into(),
        });
    }
    let parsed = crate::zenoh_source::ZenohSpec::parse(key).map_err(crate::ArgumentError::from)?;
    let source = crate::ZenohSource::new(crate::ZenohSourceConfig {
        options: parsed.options_over(&spec.zenoh),
        buffers: spec.buffers,
        ..crate::ZenohSourceConfig::new(parsed.key.clone())
    })?;
    let key = parsed.key;
    let f = source.stream_format();
    let description = format!(
        "zenoh:{key} (over Zenoh, decoded): {} {}x{}",
        f.format.name, f.width, f.height
    );
    Ok(OpenedSource {
        source: AnySource::Zenoh(Box::new(source)),
        description,
        is_pattern: false,
    })
}

#[cfg(not(feature = "zenoh"))]
fn open_zenoh(key: &str, _spec: &SourceSpec) -> Result<OpenedSource, CaptureError> {
    Err(crate::ArgumentError::FeatureMissing {
        what: format!("zenoh:{key}"),
        feature: "zenoh",
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

    fn controls() -> OpenOptions {
        OpenOptions {
            controls: vec![("Test Pattern".into(), ControlValue::Menu("100% Red".into()))],
            ..OpenOptions::default()
        }
    }

    #[test]
    fn open_source_keeps_the_kind_and_open_boxes_the_same_source() {
        let spec = SourceSpec {
            format: Some("GREY".parse().unwrap()),
            size: Some((64, 32)),
            buffers: 3,
            ..SourceSpec::new(Some("pattern".into()))
        };
        let mut opened = open_source(&spec, &OpenOptions::default()).unwrap();
        assert!(matches!(opened.source, AnySource::Pattern(_)) && opened.is_pattern);
        assert_eq!(opened.source.name(), Path::new("pattern"));
        let f = opened.source.stream_format();
        assert_eq!((f.format.name, f.width, f.height), ("GREY", 64, 32));
        drop(opened.source.next_frame(Duration::from_secs(2)).unwrap());
        assert_eq!(opened.source.stats().buffers, 3);
        let boxed = Opened::from(opened);
        assert_eq!(boxed.source.name(), Path::new("pattern"));
        assert!(
            boxed.description.contains("pattern asked for"),
            "{}",
            boxed.description
        );
    }

    #[test]
    fn controls_are_refused_for_sources_without_them_before_anything_opens() {
        for (device, path) in [
            ("pattern", "pattern"),
            (
                "unix:/nonexistent/zerocam.sock",
                "unix:/nonexistent/zerocam.sock",
            ),
            ("gst:fakesrc", "gst:fakesrc"),
        ] {
            let spec = SourceSpec::new(Some(device.into()));
            let Err(e) = open_source(&spec, &controls()) else {
                panic!("{device} took controls");
            };
            assert!(
                matches!(&e, CaptureError::NoSuchControl { path: p, name }
                    if p == Path::new(path) && name == "Test Pattern"),
                "{device}: {e}"
            );
        }
    }

    #[test]
    fn controls_of_a_missing_device_report_the_device() {
        let spec = SourceSpec::new(Some("/dev/video-none".into()));
        let Err(e) = open_source(&spec, &controls()) else {
            panic!("/dev/video-none opened");
        };
        assert!(matches!(e, CaptureError::NoDevice { .. }), "{e}");
    }

    #[cfg(not(feature = "libcamera"))]
    #[test]
    fn libcamera_without_the_feature_names_the_feature() {
        for device in ["libcamera:Virtual0", "libcamera"] {
            let Err(e) = open_source(&SourceSpec::new(Some(device.into())), &controls()) else {
                panic!("{device} opened without the feature");
            };
            assert!(
                matches!(&e, CaptureError::InvalidArgument(crate::ArgumentError::FeatureMissing { feature, .. })
                    if *feature == "libcamera"),
                "{device}: {e}"
            );
        }
    }
}
