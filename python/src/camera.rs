//! `zerocam.Camera`: V4L2 capture, the pattern source, a publisher's frames
//! (`unix:PATH`) and GStreamer pipelines (`gst:`), as an iterator of
//! [`Frame`]s (`frame.rs`); `list_devices()`.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use zerocam_capture::share::Subscriber;
use zerocam_capture::{
    BufferMode, CaptureFormat, Device, FrameSource, PatternConfig, PatternSource, Stream,
    StreamConfig,
};

use crate::errors::{capture_err, invalid, released};
use crate::frame::Frame;

enum Source {
    Stream(Stream),
    Pattern(PatternSource),
    Subscriber(Box<Subscriber>),
    /// `gst:PIPELINE` (feature `gstreamer`).
    #[cfg(feature = "gstreamer")]
    Gst(Box<zerocam_capture::GstSource>),
}

impl Source {
    fn as_source(&mut self) -> &mut dyn FrameSource {
        match self {
            Source::Stream(s) => s,
            Source::Pattern(p) => p,
            Source::Subscriber(s) => s.as_mut(),
            #[cfg(feature = "gstreamer")]
            Source::Gst(g) => g.as_mut(),
        }
    }

    fn as_ref(&self) -> &dyn FrameSource {
        match self {
            Source::Stream(s) => s,
            Source::Pattern(p) => p,
            Source::Subscriber(s) => s.as_ref(),
            #[cfg(feature = "gstreamer")]
            Source::Gst(g) => g.as_ref(),
        }
    }
}

/// A camera (V4L2 device, the built-in pattern source, or a publisher's
/// frames over a Unix socket): a context manager and an iterator of frames.
#[pyclass(module = "zerocam._zerocam", frozen)]
pub struct Camera {
    source: Mutex<Option<Source>>,
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

/// The pattern source, from parsed arguments (`Camera.pattern` and
/// `Camera(device="pattern")`).
fn pattern_camera(
    format: CaptureFormat,
    (width, height): (u32, u32),
    fps: Option<f64>,
    buffers: u32,
    timeout: Duration,
) -> PyResult<Camera> {
    let mut config = PatternConfig::new(format, width, height);
    config.fps = fps;
    config.buffers = buffers;
    let source = PatternSource::new(config).map_err(capture_err)?;
    Ok(Camera {
        source: Mutex::new(Some(Source::Pattern(source))),
        timeout,
    })
}

/// A subscriber to the publisher at `socket` (`Camera(device="unix:PATH")`).
fn subscriber_camera(
    py: Python<'_>,
    socket: &str,
    controls: Option<&Bound<'_, PyDict>>,
    mode: BufferMode,
    memory: &str,
    timeout: Duration,
) -> PyResult<Camera> {
    if let Some(c) = controls.filter(|c| !c.is_empty()) {
        return Err(invalid(format!(
            "controls {c}: a publisher's frames (unix:{socket}) have no controls here"
        )));
    }
    if mode != BufferMode::Mmap {
        return Err(invalid(format!(
            "memory {memory:?}: a publisher's frames (unix:{socket}) come in its buffers; \
             give \"mmap\" or leave it out"
        )));
    }
    let source = py
        .detach(|| Subscriber::connect(socket))
        .map_err(capture_err)?;
    Ok(Camera {
        source: Mutex::new(Some(Source::Subscriber(Box::new(source)))),
        timeout,
    })
}

/// A GStreamer pipeline (`Camera(device="gst:PIPELINE")`), in a build with
/// the cargo feature `gstreamer`.
#[cfg(feature = "gstreamer")]
fn gst_camera(py: Python<'_>, pipeline: &str, timeout: Duration) -> PyResult<Camera> {
    let source = py
        .detach(|| zerocam_capture::GstSource::new(pipeline))
        .map_err(capture_err)?;
    Ok(Camera {
        source: Mutex::new(Some(Source::Gst(Box::new(source)))),
        timeout,
    })
}

#[cfg(not(feature = "gstreamer"))]
fn gst_camera(_py: Python<'_>, pipeline: &str, _timeout: Duration) -> PyResult<Camera> {
    Err(capture_err(
        zerocam_capture::ArgumentError::FeatureMissing {
            what: format!("gst:{pipeline}"),
            feature: "gstreamer",
        }
        .into(),
    ))
}

/// Sets `controls` (name → menu item name or int value) on `device`.
fn set_controls(device: &Device, controls: &Bound<'_, PyDict>) -> PyResult<()> {
    for (k, v) in controls.iter() {
        let name: String = k
            .extract()
            .map_err(|_| invalid(format!("control name {k} is not a string")))?;
        set_control(device, &name, &v)?;
    }
    Ok(())
}

fn set_control(device: &Device, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    if let Ok(item) = value.extract::<String>() {
        return device.set_menu(name, &item).map_err(capture_err);
    }
    let v: i32 = value.extract().map_err(|_| {
        invalid(format!(
            "control {name:?}: value {value} is not a str or an int"
        ))
    })?;
    let info = device.control(name).map_err(capture_err)?;
    device.set_control(info.id, v).map_err(capture_err)
}

#[pymethods]
impl Camera {
    /// Opens `device` and starts capturing `format` at `size`.
    ///
    /// `device="unix:PATH"` subscribes to the publisher (`zerocam serve`)
    /// listening at `PATH` instead: its frames come in the publisher's
    /// format, size, rate and buffers (`format`, `size`, `fps` and `buffers`
    /// are ignored), and a publisher that stops or dies raises
    /// `Disconnected` (`reconnect()` connects again).
    ///
    /// `memory`: `"mmap"` (driver buffers, exported once as dma-bufs) or
    /// `"dmabuf"` (buffers from the DMA heap). `controls`: `{name: value}`
    /// set before streaming (a menu item name or an int). `timeout`: seconds
    /// `next()` waits for a frame.
    #[new]
    #[pyo3(signature = (device="/dev/video0", format="NV12", size=(640, 480), fps=None, buffers=4, memory="mmap", controls=None, timeout=2.0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        device: &str,
        format: &str,
        size: (i64, i64),
        fps: Option<f64>,
        buffers: i64,
        memory: &str,
        controls: Option<&Bound<'_, PyDict>>,
        timeout: f64,
    ) -> PyResult<Camera> {
        let format = parse_format(format)?;
        let (w, h) = parse_size(size)?;
        let buffers = parse_buffers(buffers)?;
        let timeout = parse_timeout(timeout)?;
        let mode = match memory {
            "mmap" => BufferMode::Mmap,
            "dmabuf" => BufferMode::DmaBuf,
            other => {
                return Err(invalid(format!(
                    "memory {other:?} is not one of \"mmap\", \"dmabuf\""
                )))
            }
        };
        if let Some(socket) = device.strip_prefix("unix:") {
            return subscriber_camera(py, socket, controls, mode, memory, timeout);
        }
        if let Some(pipeline) = device.strip_prefix("gst:") {
            if let Some(c) = controls.filter(|c| !c.is_empty()) {
                return Err(invalid(format!(
                    "controls {c}: a GStreamer pipeline (gst:) has no controls here"
                )));
            }
            return gst_camera(py, pipeline, timeout);
        }
        if device == "pattern" {
            if let Some(c) = controls.filter(|c| !c.is_empty()) {
                return Err(invalid(format!(
                    "controls {c}: the pattern source has no controls"
                )));
            }
            if mode != BufferMode::Mmap {
                return Err(invalid(format!(
                    "memory {memory:?}: the pattern source has its own (memfd) buffers; \
                     give \"mmap\" or leave it out"
                )));
            }
            return pattern_camera(format, (w, h), fps, buffers, timeout);
        }
        let path = PathBuf::from(device);
        let mut dev = py.detach(|| Device::open(&path)).map_err(capture_err)?;
        if let Some(c) = controls {
            set_controls(&dev, c)?;
        }
        dev.set_format(format, w, h).map_err(capture_err)?;
        if let Some(fps) = fps {
            dev.set_frame_rate(fps).map_err(capture_err)?;
        }
        let config = StreamConfig {
            buffers,
            mode,
            ..StreamConfig::default()
        };
        let stream = py
            .detach(|| Stream::new(dev, config))
            .map_err(|e| capture_err(e.error))?;
        Ok(Camera {
            source: Mutex::new(Some(Source::Stream(stream))),
            timeout,
        })
    }

    /// The built-in pattern source (colour bars and a moving line; works on
    /// any machine): same API as a camera.
    #[staticmethod]
    #[pyo3(signature = (format="NV12", size=(640, 480), fps=None, buffers=4, timeout=2.0))]
    fn pattern(
        format: &str,
        size: (i64, i64),
        fps: Option<f64>,
        buffers: i64,
        timeout: f64,
    ) -> PyResult<Camera> {
        pattern_camera(
            parse_format(format)?,
            parse_size(size)?,
            fps,
            parse_buffers(buffers)?,
            parse_timeout(timeout)?,
        )
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
                Some(s) => Ok(s.as_source().next_frame(timeout)),
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
                Some(Source::Subscriber(s)) => Ok(s.reconnect()),
                Some(_) => Err(Some(
                    "reconnect: the camera is not a publisher's (unix:PATH)",
                )),
                None => Err(None),
            }
        })
        .map_err(|e| e.map_or_else(|| released("the camera"), invalid))?
        .map_err(capture_err)
    }

    /// Sets a device control by name: a menu item name (`"100% Red"`) or an int.
    fn set_control(&self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let src = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        match src.as_ref() {
            Some(Source::Stream(s)) => set_control(s.device(), name, value),
            Some(Source::Pattern(_)) => Err(invalid(format!(
                "control {name:?}: the pattern source has no controls"
            ))),
            Some(Source::Subscriber(s)) => Err(invalid(format!(
                "control {name:?}: a publisher's frames (unix:{}) have no controls here",
                s.name().display()
            ))),
            #[cfg(feature = "gstreamer")]
            Some(Source::Gst(_)) => Err(invalid(format!(
                "control {name:?}: a GStreamer pipeline's elements have their own properties"
            ))),
            None => Err(released("the camera")),
        }
    }

    /// Counters: `frames`, `dropped`, `buffer_errors`, `buffers`, `planes`,
    /// and `cache` (`hits`, `misses` = imports, `evictions`, `invalidated`, `live`).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let src = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        let s = src
            .as_ref()
            .ok_or_else(|| released("the camera"))?
            .as_ref()
            .stats();
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
            .as_ref()
            .stream_format()
            .clone();
        Ok((f.format.name.to_owned(), f.width, f.height))
    }

    /// The device path, `"pattern"`, or `"unix:PATH"`.
    #[getter]
    fn device(&self) -> PyResult<String> {
        let src = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        let src = src.as_ref().ok_or_else(|| released("the camera"))?;
        let name = src.as_ref().name().display();
        Ok(match src {
            Source::Subscriber(_) => format!("unix:{name}"),
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
