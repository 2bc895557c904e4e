//! `zerocam.Camera`: every source `zerocam_capture::open` opens — V4L2
//! devices, `libcamera:ID` (feature `libcamera`), the pattern source, a
//! publisher's frames (`unix:PATH`) and GStreamer pipelines (`gst:`, feature
//! `gstreamer`) — as an iterator of [`Frame`]s (`frame.rs`); `list_devices()`.
//!
//! The opening is the capture crate's ([`open_source`]), the one the CLI and
//! the C API use, so whatever `zerocam bench DEVICE` opens, `Camera(DEVICE)`
//! opens; this module adds Python's argument checks and messages.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use zerocam_capture::open::{
    open_source, AnySource, ControlValue, OpenOptions, SourceKind, SourceSpec,
};
use zerocam_capture::zenoh_source::ZenohOptions;
use zerocam_capture::{BufferMode, CaptureFormat, Device, FrameSource};

use crate::errors::{capture_err, invalid, released};
use crate::frame::Frame;

/// A camera (a V4L2 device, a libcamera camera, the built-in pattern source,
/// a publisher's frames over a Unix socket, a GStreamer pipeline): a context
/// manager and an iterator of frames.
#[pyclass(module = "zerocam._zerocam", frozen)]
pub struct Camera {
    source: Mutex<Option<AnySource>>,
    timeout: Duration,
}

fn parse_format(format: &str) -> PyResult<CaptureFormat> {
    format
        .parse::<CaptureFormat>()
        .map_err(|e| invalid(e.to_string()))
}

fn parse_size(size: (i64, i64)) -> PyResult<(u32, u32)> {
    let ok = |v: i64| u32::try_from(v).ok().filter(|&v| v > 0);
    match (ok(size.0), ok(size.1)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(invalid(format!(
            "size ({}, {}) is not a (width, height) of positive ints",
            size.0, size.1
        ))),
    }
}

fn parse_timeout(t: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(t)
        .map_err(|_| invalid(format!("timeout {t} is not a positive number of seconds")))
}

fn parse_buffers(buffers: i64) -> PyResult<u32> {
    u32::try_from(buffers)
        .ok()
        .filter(|&b| b >= 2)
        .ok_or_else(|| invalid(format!("buffers {buffers} is not an int >= 2")))
}

fn parse_memory(memory: &str) -> PyResult<BufferMode> {
    match memory {
        "mmap" => Ok(BufferMode::Mmap),
        "dmabuf" => Ok(BufferMode::DmaBuf),
        other => Err(invalid(format!(
            "memory {other:?} is not one of \"mmap\", \"dmabuf\""
        ))),
    }
}

/// A control's value from Python: a menu item name (`str`) or an `int`.
fn control_value(name: &str, value: &Bound<'_, PyAny>) -> PyResult<ControlValue> {
    if let Ok(item) = value.extract::<String>() {
        return Ok(ControlValue::Menu(item));
    }
    value.extract().map(ControlValue::Int).map_err(|_| {
        invalid(format!(
            "control {name:?}: value {value} is not a str or an int"
        ))
    })
}

/// `controls` (name → menu item name or int), in the dict's order.
fn parse_controls(controls: &Bound<'_, PyDict>) -> PyResult<Vec<(String, ControlValue)>> {
    controls
        .iter()
        .map(|(k, v)| {
            let name: String = k
                .extract()
                .map_err(|_| invalid(format!("control name {k} is not a string")))?;
            let value = control_value(&name, &v)?;
            Ok((name, value))
        })
        .collect()
}

/// The kinds of source, as far as Python's checks tell them apart.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    V4l2,
    Pattern,
    Subscriber,
    Libcamera,
    Gst,
    Zenoh,
}

impl Kind {
    /// The kind `device` names; `None` when the opener picks
    /// (`device=None`: the first camera, else the pattern).
    fn of_device(device: Option<&str>) -> Option<Kind> {
        let d = device?;
        Some(if d.starts_with("unix:") {
            Kind::Subscriber
        } else if d.starts_with("gst:") {
            Kind::Gst
        } else if d.starts_with("zenoh:") {
            Kind::Zenoh
        } else if zerocam_capture::open::is_pattern(d) {
            Kind::Pattern
        } else if d == "libcamera" || d.starts_with("libcamera:") {
            Kind::Libcamera
        } else {
            Kind::V4l2
        })
    }

    /// The kind of an opened source. Matched on [`SourceKind`], not on
    /// `AnySource`'s variants: those follow zerocam-capture's features,
    /// which another crate of the build may turn on without this one's.
    fn of_source(source: &AnySource) -> Kind {
        match source.kind() {
            SourceKind::V4l2 => Kind::V4l2,
            SourceKind::Pattern => Kind::Pattern,
            SourceKind::Subscriber => Kind::Subscriber,
            SourceKind::Libcamera => Kind::Libcamera,
            SourceKind::Gst => Kind::Gst,
            SourceKind::Zenoh => Kind::Zenoh,
        }
    }

    /// Why a source of this kind (named `name`) has no controls here, or
    /// `None` for a V4L2 device.
    fn no_controls(self, name: &str) -> Option<String> {
        match self {
            Kind::V4l2 => None,
            Kind::Pattern => Some("the pattern source has no controls".into()),
            Kind::Subscriber => Some(format!(
                "a publisher's frames ({name}) have no controls here"
            )),
            Kind::Libcamera => Some(format!(
                "a libcamera camera ({name}) has no V4L2 controls here"
            )),
            Kind::Gst => Some("a GStreamer pipeline (gst:) has no controls here".into()),
            Kind::Zenoh => Some(format!("a Zenoh topic ({name}) has no controls here")),
        }
    }

    /// Refuses what a source of this kind cannot do: `controls`, and a
    /// `memory` other than `"mmap"` where the source has its own buffers.
    fn check(
        self,
        name: &str,
        controls: Option<&Bound<'_, PyDict>>,
        mode: BufferMode,
        memory: &str,
    ) -> PyResult<()> {
        if let (Some(c), Some(why)) = (controls.filter(|c| !c.is_empty()), self.no_controls(name)) {
            return Err(invalid(format!("controls {c}: {why}")));
        }
        let own = match self {
            Kind::Pattern => "the pattern source has its own (memfd) buffers",
            Kind::Subscriber => "a publisher's frames ({name}) come in its buffers",
            Kind::Libcamera => "a libcamera camera ({name}) has its own (dma-buf) buffers",
            Kind::Zenoh => "a Zenoh topic ({name}) is decoded into its own (memfd) buffers",
            Kind::V4l2 | Kind::Gst => return Ok(()),
        };
        if mode != BufferMode::Mmap {
            let own = own.replace("{name}", name);
            return Err(invalid(format!(
                "memory {memory:?}: {own}; give \"mmap\" or leave it out"
            )));
        }
        Ok(())
    }
}

/// Opens `spec` with `options` through the capture crate's opener, without
/// the GIL.
fn open_camera(
    py: Python<'_>,
    spec: &SourceSpec,
    options: &OpenOptions,
    timeout: Duration,
) -> PyResult<Camera> {
    let opened = py
        .detach(|| open_source(spec, options))
        .map_err(capture_err)?;
    Ok(Camera {
        source: Mutex::new(Some(opened.source)),
        timeout,
    })
}

/// Sets control `name` of `device` to a Python value.
fn set_control(device: &Device, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    control_value(name, value)?
        .set(device, name)
        .map_err(capture_err)
}

#[pymethods]
impl Camera {
    /// Opens `device` and starts capturing `format` at `size`.
    ///
    /// `device`: a V4L2 device path, `"libcamera:ID"` (a libcamera camera;
    /// `"libcamera"`: the first one; needs a build with the cargo feature
    /// `libcamera`), `"pattern"` (the built-in pattern source),
    /// `"unix:PATH"`, `"gst:PIPELINE"` (a build with the feature
    /// `gstreamer`), or `None`: the first libcamera camera (with the
    /// feature), else the first V4L2 camera, else the pattern — what the
    /// `zerocam` command line tool opens for the same name.
    ///
    /// `device="unix:PATH"` subscribes to the publisher (`zerocam serve`)
    /// listening at `PATH` instead: its frames come in the publisher's
    /// format, size, rate and buffers (`format`, `size`, `fps` and `buffers`
    /// are ignored), and a publisher that stops or dies raises
    /// `Disconnected` (`reconnect()` connects again).
    ///
    /// `device="zenoh:KEY"` (a build with the feature `zenoh`) subscribes
    /// to the JPEG `sensor_msgs/msg/CompressedImage`s published on the Zenoh
    /// key `KEY` (`zerocam serve --zenoh`, a ROS 2 camera through
    /// rmw_zenoh) and decodes them: RGB frames of the first sample's size
    /// (`format` and `size` are the topic's: ignored; `fps` too), the
    /// sender's sequence numbers, and `timestamp` the message's stamp (the
    /// sender's `CLOCK_REALTIME`, not this machine's monotonic clock).
    /// `zenoh_connect` and `zenoh_listen` replace the session's endpoints
    /// (default: connect to `tcp/127.0.0.1:7447`, listen nowhere);
    /// `zenoh_config` is a Zenoh configuration file (JSON5) used as it is
    /// (TLS, routers, scouting). Without a file the session stays off the
    /// network: peer mode, no multicast scouting, no gossip.
    ///
    /// `memory`: `"mmap"` (driver buffers, exported once as dma-bufs) or
    /// `"dmabuf"` (buffers from the DMA heap; V4L2 devices only).
    /// `controls`: `{name: value}` set before streaming (a menu item name or
    /// an int; V4L2 devices only). `timeout`: seconds `next()` waits for a
    /// frame.
    #[new]
    #[pyo3(signature = (device="/dev/video0", format="NV12", size=(640, 480), fps=None, buffers=4, memory="mmap", controls=None, timeout=2.0, *, zenoh_connect=None, zenoh_listen=None, zenoh_config=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        device: Option<&str>,
        format: &str,
        size: (i64, i64),
        fps: Option<f64>,
        buffers: i64,
        memory: &str,
        controls: Option<&Bound<'_, PyDict>>,
        timeout: f64,
        zenoh_connect: Option<Vec<String>>,
        zenoh_listen: Option<Vec<String>>,
        zenoh_config: Option<std::path::PathBuf>,
    ) -> PyResult<Camera> {
        let format = parse_format(format)?;
        let size = parse_size(size)?;
        let buffers = parse_buffers(buffers)?;
        let timeout = parse_timeout(timeout)?;
        let mode = parse_memory(memory)?;
        let kind = Kind::of_device(device);
        if let (Some(kind), Some(d)) = (kind, device) {
            kind.check(d, controls, mode, memory)?;
        }
        let options = OpenOptions {
            controls: controls
                .map(parse_controls)
                .transpose()?
                .unwrap_or_default(),
            fallback: None,
        };
        // A Zenoh topic's frames are RGB at the sender's size: `format` and
        // `size` (whose defaults, NV12 at 640x480, are a camera's) are left
        // to the topic, as a `unix:` publisher's are.
        let own_format = kind == Some(Kind::Zenoh);
        let spec = SourceSpec {
            format: (!own_format).then_some(format),
            size: (!own_format).then_some(size),
            fps,
            buffers,
            mode,
            zenoh: ZenohOptions {
                config_file: zenoh_config,
                connect: zenoh_connect.unwrap_or_default(),
                listen: zenoh_listen.unwrap_or_default(),
            },
            ..SourceSpec::new(device.map(str::to_owned))
        };
        let camera = open_camera(py, &spec, &options, timeout)?;
        if kind.is_none() {
            // The opener picked the source: refuse what it cannot do now.
            let picked = camera.source.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(source) = picked.as_ref() {
                let name = source.name().display().to_string();
                let checked = Kind::of_source(source).check(&name, controls, mode, memory);
                drop(picked);
                if let Err(e) = checked {
                    camera.close(py);
                    return Err(e);
                }
            }
        }
        Ok(camera)
    }

    /// The built-in pattern source (colour bars and a moving line; works on
    /// any machine): same API as a camera. `stamp=True`: each frame carries
    /// its sequence number and capture time in its top-left corner, in
    /// blocks that survive lossy encoding (the device `"pattern:stamp"`).
    #[staticmethod]
    #[pyo3(signature = (format="NV12", size=(640, 480), fps=None, buffers=4, timeout=2.0, stamp=false))]
    fn pattern(
        py: Python<'_>,
        format: &str,
        size: (i64, i64),
        fps: Option<f64>,
        buffers: i64,
        timeout: f64,
        stamp: bool,
    ) -> PyResult<Camera> {
        let device = match stamp {
            true => zerocam_capture::open::PATTERN_STAMP,
            false => "pattern",
        };
        let spec = SourceSpec {
            format: Some(parse_format(format)?),
            size: Some(parse_size(size)?),
            fps,
            buffers: parse_buffers(buffers)?,
            ..SourceSpec::new(Some(device.into()))
        };
        let timeout = parse_timeout(timeout)?;
        open_camera(py, &spec, &OpenOptions::default(), timeout)
    }

    /// The next frame, waiting at most `timeout` seconds (default: the
    /// camera's). Raises `Timeout`, `NoFreeBuffer`, `DeviceError`.
    #[pyo3(signature = (timeout=None))]
    fn read(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Frame> {
        let timeout = match timeout {
            Some(t) => parse_timeout(t)?,
            None => self.timeout,
        };
        let frame = py.detach(|| {
            let mut src = self.source.lock().unwrap_or_else(PoisonError::into_inner);
            match src.as_mut() {
                Some(s) => Ok(s.next_frame(timeout)),
                None => Err(()),
            }
        });
        match frame {
            Ok(f) => Ok(Frame::new(f.map_err(capture_err)?)),
            Err(()) => Err(released("the camera")),
        }
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Frame> {
        self.read(py, None)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// Stops capture and closes the device (frames still held keep their
    /// buffers until released). Idempotent.
    fn close(&self, py: Python<'_>) {
        let src = self
            .source
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        py.detach(move || drop(src));
    }

    /// Connects again to the publisher of a `unix:PATH` camera (after
    /// `Disconnected`), keeping its imports: the publisher's buffers are the
    /// same files, so nothing is imported again. Frames of the old
    /// connection stay readable. Raises `InvalidArgument` for other cameras.
    fn reconnect(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let mut src = self.source.lock().unwrap_or_else(PoisonError::into_inner);
            match src.as_mut() {
                Some(AnySource::Subscriber(s)) => Ok(s.reconnect()),
                Some(_) => Err(Some(
                    "reconnect: the camera is not a publisher's (unix:PATH)",
                )),
                None => Err(None),
            }
        })
        .map_err(|e| e.map_or_else(|| released("the camera"), invalid))?
        .map_err(capture_err)
    }

    /// Sets a device control by name: a menu item name (`"100% Red"`) or an
    /// int. Only V4L2 devices have controls (`InvalidArgument` otherwise).
    fn set_control(&self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let src = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        let source = src.as_ref().ok_or_else(|| released("the camera"))?;
        if let AnySource::V4l2(s) = source {
            return set_control(s.device(), name, value);
        }
        let kind = Kind::of_source(source);
        let why = match kind {
            Kind::Subscriber => kind.no_controls(&format!("unix:{}", source.name().display())),
            Kind::Gst => Some("a GStreamer pipeline's elements have their own properties".into()),
            _ => kind.no_controls(&source.name().display().to_string()),
        };
        Err(invalid(format!(
            "control {name:?}: {}",
            why.unwrap_or_default()
        )))
    }

    /// Counters: `frames`, `dropped`, `buffer_errors`, `buffers`, `planes`,
    /// and `cache` (`hits`, `misses` = imports, `evictions`, `invalidated`, `live`).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let src = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        let s = src.as_ref().ok_or_else(|| released("the camera"))?.stats();
        let d = PyDict::new(py);
        d.set_item("frames", s.frames)?;
        d.set_item("dropped", s.dropped)?;
        d.set_item("buffer_errors", s.buffer_errors)?;
        d.set_item("buffers", s.buffers)?;
        d.set_item("planes", s.planes)?;
        let c = PyDict::new(py);
        c.set_item("hits", s.cache.hits)?;
        c.set_item("misses", s.cache.misses)?;
        c.set_item("evictions", s.cache.evictions)?;
        c.set_item("invalidated", s.cache.invalidated)?;
        c.set_item("live", s.cache.live)?;
        d.set_item("cache", c)?;
        Ok(d)
    }

    /// `(format name, width, height)` the frames come in.
    #[getter]
    fn format(&self) -> PyResult<(String, u32, u32)> {
        let src = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        let f = src
            .as_ref()
            .ok_or_else(|| released("the camera"))?
            .stream_format()
            .clone();
        Ok((f.format.name.to_owned(), f.width, f.height))
    }

    /// The device path, `"libcamera:ID"`, `"pattern"`, `"unix:PATH"`, or
    /// the GStreamer source's name.
    #[getter]
    fn device(&self) -> PyResult<String> {
        let src = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        let src = src.as_ref().ok_or_else(|| released("the camera"))?;
        let name = src.name().display();
        Ok(match src {
            AnySource::Subscriber(_) => format!("unix:{name}"),
            _ => name.to_string(),
        })
    }
}

/// The capture devices present: a list of dicts with `path`, `card`,
/// `driver`, `bus`, `api` and `formats` (zerocam format names).
#[pyfunction]
pub fn list_devices<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    let paths = py.detach(zerocam_capture::capture_devices);
    let out = PyList::empty(py);
    for p in paths {
        let Ok(dev) = py.detach(|| Device::open(&p)) else {
            continue;
        };
        let info = dev.info();
        let d = PyDict::new(py);
        d.set_item("path", p.display().to_string())?;
        d.set_item("card", &info.card)?;
        d.set_item("driver", &info.driver)?;
        d.set_item("bus", &info.bus_info)?;
        d.set_item("api", info.api.to_string())?;
        let formats: Vec<String> = dev
            .formats()
            .map(|fs| {
                fs.iter()
                    .filter_map(|f| CaptureFormat::from_fourcc(f.fourcc))
                    .map(|f| f.name.to_owned())
                    .collect()
            })
            .unwrap_or_default();
        d.set_item("formats", formats)?;
        out.append(d)?;
    }
    Ok(out)
}
