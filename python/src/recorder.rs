//! `zerocam.Recorder`: frames into a video file (`.mp4`, `.h264`) through
//! zerocam-encode's `Recorder` — a hardware encoder when one is present,
//! else OpenH264 in software.
//!
//! `rec.write(frame)` takes the frame's lease: the encoder holds the Rust
//! frame until it is done reading the buffer, and the Python `Frame` is
//! released by the call (`frame.released` is then `True`; its `planes`
//! arrays made before stay valid). A frame whose `frame.tensor` is mapped
//! is refused with `MapConflict` and left as it was.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use zerocam_encode::recorder::{Recorder as RRecorder, RecorderConfig, RecorderStats};
use zerocam_encode::{Codec, EncoderChoice};

use crate::errors::{encode_err, invalid, released};
use crate::frame::Frame;

/// A video file being written from frames; a context manager (its end
/// closes the file).
#[pyclass(module = "zerocam._zerocam", frozen)]
pub struct Recorder {
    inner: Mutex<Option<RRecorder>>,
    /// The counts and the encoder after `close()`.
    closed: Mutex<Option<(RecorderStats, String)>>,
    path: PathBuf,
}

/// A positive `u32` argument.
fn positive(name: &str, v: Option<i64>) -> PyResult<Option<u32>> {
    v.map(|v| {
        u32::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| invalid(format!("{name}={v} is not a positive int below 2**32")))
    })
    .transpose()
}

impl Recorder {
    /// The stats, from the open recorder or the closed one's record.
    fn current(&self) -> PyResult<(RecorderStats, String)> {
        if let Some(rec) = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            return Ok((rec.stats(), rec.describe()));
        }
        self.closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| released("the recorder"))
    }
}

#[pymethods]
impl Recorder {
    /// Creates `path` (`.mp4`, or a bare stream: `.h264`, `.hevc`,
    /// `.mjpeg`, `.fwht`; another extension is refused and nothing is
    /// created). `codec`: `"h264"`, `"hevc"`, `"mjpeg"` or `"fwht"` (`None`:
    /// the one the file holds);
    /// `encoder`: `"auto"`, `"software"`, `"/dev/videoN"` or
    /// `"gst:ELEMENT"`; `bitrate` in bits per second and `gop` in frames
    /// (`None`: the encoder's defaults); `fps` the rate the stream is timed
    /// at for rate control (the file's times are the frames' timestamps).
    #[new]
    #[pyo3(signature = (path, codec = None, encoder = "auto", bitrate = None, gop = None, fps = 30))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        codec: Option<&str>,
        encoder: &str,
        bitrate: Option<i64>,
        gop: Option<i64>,
        fps: i64,
    ) -> PyResult<Recorder> {
        let codec = codec
            .map(str::parse::<Codec>)
            .transpose()
            .map_err(|e| invalid(format!("{e}")))?;
        let encoder: EncoderChoice = encoder.parse().map_err(|e| invalid(format!("{e}")))?;
        let config = RecorderConfig {
            codec,
            encoder,
            bitrate: positive("bitrate", bitrate)?,
            gop: positive("gop", gop)?,
            fps: positive("fps", Some(fps))?.unwrap_or(30),
        };
        let rec = py
            .detach(|| RRecorder::create(&path, config))
            .map_err(encode_err)?;
        Ok(Recorder {
            inner: Mutex::new(Some(rec)),
            closed: Mutex::new(None),
            path,
        })
    }

    /// Encodes `frame` into the file, taking its lease: `frame` is released
    /// by the call. The first frame opens the encoder (its size is the
    /// file's). On a failure (a full disk, an encoder gone) the file is
    /// closed at once up to the last frame written, and the error raised.
    fn write(&self, py: Python<'_>, frame: &Bound<'_, Frame>) -> PyResult<()> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let rec = inner.as_mut().ok_or_else(|| released("the recorder"))?;
        let f = frame.get().take()?;
        py.detach(|| rec.write(f)).map_err(encode_err)
    }

    /// Drains the encoder and closes the file. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut rec) = taken else {
            return Ok(());
        };
        let result = py.detach(|| rec.finish());
        let record = (rec.stats(), rec.describe());
        *self.closed.lock().unwrap_or_else(PoisonError::into_inner) = Some(record);
        result.map(|_| ()).map_err(encode_err)
    }

    /// The counts: `frames` written, `samples` in the file, `bytes` of the
    /// file, `copied_frames` (frames the encoder copied: OpenH264 splits
    /// NV12's chroma, so every NV12 frame), `imports` (dma-buf imports of a
    /// hardware encoder), `packets`, `finished`.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, _) = self.current()?;
        let d = PyDict::new(py);
        d.set_item("frames", s.frames)?;
        d.set_item("samples", s.samples)?;
        d.set_item("bytes", s.bytes)?;
        d.set_item("copied_frames", s.encoder.copied_frames)?;
        d.set_item("imports", s.encoder.imports)?;
        d.set_item("packets", s.encoder.packets_out)?;
        d.set_item("finished", s.finished)?;
        Ok(d)
    }

    /// Which encoder records and why it was chosen (before the first
    /// frame: what will choose).
    #[getter]
    fn encoder(&self) -> PyResult<String> {
        Ok(self.current()?.1)
    }

    /// The file.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether the file is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the file, also when the block raised (its error goes on).
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "Recorder({:?}{})",
            self.path.display().to_string(),
            if self.closed() { ", closed" } else { "" }
        )
    }
}
