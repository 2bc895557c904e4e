//! `zerocam.ModelInput`: a model's input tensor as the Rust
//! [`ModelInput`] describes it (size, layout, element type, normalization or
//! quantization, fit, channel order, batch), checked once; and
//! `zerocam.Placement`: where a frame landed in it, with the way back.
//!
//! Every refusal is `InvalidArgument` (a `ValueError`) naming the value; the
//! Rust checks ([`ModelInputError`](zerocam_preprocess::ModelInputError)) speak for
//! themselves.

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use zerocam_preprocess::{
    ChannelOrder, Fit, FitPlacement, ModelInput, ModelInputError, ModelLayout, Resample,
};
use zerocam_tensor::DType;

use crate::convert;
use crate::errors::{invalid, model_err};

/// A model's input tensor: `width`x`height`, `batch` images, NCHW or NHWC,
/// `float32`, `float16`, `int8` or `uint8`, RGB or BGR; values
/// `(p / 255 - mean) / std` (or `p / 255`), quantized as
/// `round(x / scale) + zero_point` for integer types (without a scale,
/// `p` for uint8 and `p - 128` for int8); fitted by stretching, a centre
/// crop or a letterbox with bars of `pad`.
#[pyclass(module = "zerocam._zerocam", name = "ModelInput", frozen)]
pub struct PyModelInput {
    pub(crate) inner: ModelInput,
    /// As given (for the properties and `repr`; the Rust input holds f32).
    mean: Option<[f64; 3]>,
    std: Option<[f64; 3]>,
    scale: Option<f64>,
    pad: [u8; 3],
}

/// A size argument: a non-negative int (0 is the Rust side's `ZeroSize`).
fn size(what: &str, v: i64) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| invalid(format!("{what} {v} is negative")))
}

/// `mean` / `std`: a number (every channel) or 3 numbers.
fn per_channel(what: &'static str, obj: &Bound<'_, PyAny>) -> PyResult<[f64; 3]> {
    if let Ok(v) = obj.extract::<f64>() {
        return Ok([v; 3]);
    }
    let values: Vec<f64> = obj.extract().map_err(|_| {
        invalid(format!(
            "{what} {obj} is not a number or a sequence of 3 numbers"
        ))
    })?;
    <[f64; 3]>::try_from(values.as_slice()).map_err(|_| {
        model_err(ModelInputError::WrongChannelCount {
            what,
            len: values.len(),
        })
    })
}

fn pad_arg(obj: &Bound<'_, PyAny>) -> PyResult<[u8; 3]> {
    let values: Vec<i64> = obj.extract().map_err(|_| {
        invalid(format!(
            "pad {obj} is not a sequence of 3 ints (an RGB colour)"
        ))
    })?;
    let rgb = <[i64; 3]>::try_from(values.as_slice()).map_err(|_| {
        model_err(ModelInputError::WrongChannelCount {
            what: "pad",
            len: values.len(),
        })
    })?;
    let mut out = [0u8; 3];
    for (o, v) in out.iter_mut().zip(rgb) {
        *o = u8::try_from(v)
            .map_err(|_| invalid(format!("pad {rgb:?} has {v}: colours are 0..=255")))?;
    }
    Ok(out)
}

fn layout_arg(s: &str) -> PyResult<ModelLayout> {
    match s.to_ascii_lowercase().as_str() {
        "nchw" => Ok(ModelLayout::Nchw),
        "nhwc" => Ok(ModelLayout::Nhwc),
        _ => Err(invalid(format!(
            "layout {s:?} is not one of \"nchw\", \"nhwc\""
        ))),
    }
}

fn channels_arg(s: &str) -> PyResult<ChannelOrder> {
    match s.to_ascii_lowercase().as_str() {
        "rgb" => Ok(ChannelOrder::Rgb),
        "bgr" => Ok(ChannelOrder::Bgr),
        _ => Err(invalid(format!(
            "channels {s:?} is not one of \"rgb\", \"bgr\""
        ))),
    }
}

fn resample_arg(s: &str) -> PyResult<Resample> {
    match s.to_ascii_lowercase().as_str() {
        "bilinear" => Ok(Resample::Bilinear),
        "area" => Ok(Resample::Area),
        _ => Err(invalid(format!(
            "resample {s:?} is not one of \"bilinear\", \"area\""
        ))),
    }
}

fn fit_arg(s: &str, pad: [u8; 3]) -> PyResult<Fit> {
    match s.to_ascii_lowercase().as_str() {
        "stretch" => Ok(Fit::Stretch),
        "crop" => Ok(Fit::Crop),
        "letterbox" => Ok(Fit::Letterbox { pad }),
        _ => Err(invalid(format!(
            "fit {s:?} is not one of \"stretch\", \"crop\", \"letterbox\""
        ))),
    }
}

/// `v` as the `f32` the model input holds, refused where that would change
/// what the caller gave: past `f32`'s range, or a non-zero value that would
/// become 0 (the Rust checks would then name a value the caller never gave).
fn to_f32(name: &str, v: f64) -> PyResult<f32> {
    let f = v as f32;
    if v.is_finite() && f.is_infinite() {
        return Err(invalid(format!("{name} {v:e} is outside float32's range")));
    }
    if v != 0.0 && f == 0.0 {
        return Err(invalid(format!(
            "{name} {v:e} is below float32's smallest value"
        )));
    }
    Ok(f)
}

/// The integers a zero point of `dtype` can be.
fn zero_point_range(dtype: DType) -> (i64, i64) {
    match dtype {
        DType::I8 => (-128, 127),
        _ => (0, 255),
    }
}

fn layout_name(l: ModelLayout) -> &'static str {
    match l {
        ModelLayout::Nchw => "nchw",
        ModelLayout::Nhwc => "nhwc",
    }
}

fn fit_name(f: Fit) -> &'static str {
    match f {
        Fit::Stretch => "stretch",
        Fit::Crop => "crop",
        Fit::Letterbox { .. } => "letterbox",
    }
}

#[pymethods]
impl PyModelInput {
    #[new]
    #[pyo3(
        signature = (width, height, layout="nchw", dtype=None, mean=None, std=None, scale=None, zero_point=None, fit="stretch", pad=None, channels="rgb", batch=1, resample="bilinear"),
        text_signature = "(width, height, layout='nchw', dtype='float32', mean=None, std=None, scale=None, zero_point=None, fit='stretch', pad=(114, 114, 114), channels='rgb', batch=1, resample='bilinear')"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        width: i64,
        height: i64,
        layout: &str,
        dtype: Option<&Bound<'_, PyAny>>,
        mean: Option<&Bound<'_, PyAny>>,
        std: Option<&Bound<'_, PyAny>>,
        scale: Option<f64>,
        zero_point: Option<i64>,
        fit: &str,
        pad: Option<&Bound<'_, PyAny>>,
        channels: &str,
        batch: i64,
        resample: &str,
    ) -> PyResult<PyModelInput> {
        let mut input = ModelInput::new(size("width", width)?, size("height", height)?)
            .map_err(model_err)?
            .batch(size("batch", batch)?)
            .map_err(model_err)?
            .with_layout(layout_arg(layout)?)
            .with_channels(channels_arg(channels)?);
        let dtype = match dtype {
            Some(d) if !d.is_none() => convert::dtype(py, d)?,
            _ => DType::F32,
        };
        input = input.dtype(dtype).map_err(model_err)?;
        let mean = mean.map(|m| per_channel("mean", m)).transpose()?;
        let std = std.map(|s| per_channel("std", s)).transpose()?;
        if mean.is_some() || std.is_some() {
            let (m, s) = (mean.unwrap_or([0.0; 3]), std.unwrap_or([1.0; 3]));
            let f = |name: &str, v: [f64; 3]| -> PyResult<[f32; 3]> {
                Ok([
                    to_f32(name, v[0])?,
                    to_f32(name, v[1])?,
                    to_f32(name, v[2])?,
                ])
            };
            input = input
                .mean_std(f("mean", m)?, f("std", s)?)
                .map_err(model_err)?;
        }
        match (scale, zero_point) {
            (None, None) => {}
            (Some(scale), Some(zp)) => {
                if matches!(dtype, DType::U8 | DType::I8) {
                    let (lo, hi) = zero_point_range(dtype);
                    if !(lo..=hi).contains(&zp) {
                        return Err(invalid(format!(
                            "zero_point {zp} is outside {} ({lo}..={hi})",
                            dtype.name()
                        )));
                    }
                }
                // In range of the type (or refused below for a float type).
                let zp = i32::try_from(zp).unwrap_or(i32::MAX);
                input = input
                    .quantization(to_f32("scale", scale)?, zp)
                    .map_err(model_err)?;
            }
            (Some(s), None) => {
                return Err(invalid(format!(
                    "scale {s} without zero_point: quantization takes both"
                )))
            }
            (None, Some(z)) => {
                return Err(invalid(format!(
                    "zero_point {z} without scale: quantization takes both"
                )))
            }
        }
        let pad = match pad {
            Some(p) if !p.is_none() => pad_arg(p)?,
            _ => [114; 3],
        };
        input = input
            .fit(fit_arg(fit, pad)?)
            .resample(resample_arg(resample)?);
        Ok(PyModelInput {
            inner: input,
            mean: mean.or(std.map(|_| [0.0; 3])),
            std: std.or(mean.map(|_| [1.0; 3])),
            scale,
            pad,
        })
    }

    /// Width in pixels.
    #[getter]
    fn width(&self) -> usize {
        self.inner.width()
    }

    /// Height in pixels.
    #[getter]
    fn height(&self) -> usize {
        self.inner.height()
    }

    /// Images per tensor.
    #[getter]
    fn batch(&self) -> usize {
        self.inner.batch_size()
    }

    /// `"nchw"` or `"nhwc"`.
    #[getter]
    fn layout(&self) -> &'static str {
        layout_name(self.inner.layout())
    }

    /// `"float32"`, `"float16"`, `"int8"` or `"uint8"`.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.inner.element_type().name()
    }

    /// Per-channel mean (RGB order), or `None`.
    #[getter]
    fn mean(&self) -> Option<(f64, f64, f64)> {
        self.mean.map(|[r, g, b]| (r, g, b))
    }

    /// Per-channel standard deviation (RGB order), or `None`.
    #[getter]
    fn std(&self) -> Option<(f64, f64, f64)> {
        self.std.map(|[r, g, b]| (r, g, b))
    }

    /// The quantization scale, or `None`.
    #[getter]
    fn scale(&self) -> Option<f64> {
        self.scale
    }

    /// The quantization zero point, or `None`.
    #[getter]
    fn zero_point(&self) -> Option<i32> {
        self.inner.quantization_params().map(|q| q.zero_point)
    }

    /// `"stretch"`, `"crop"` or `"letterbox"`.
    #[getter]
    fn fit(&self) -> &'static str {
        fit_name(self.inner.fit_mode())
    }

    /// `"bilinear"` or `"area"`: how the source is resampled.
    #[getter]
    fn resample(&self) -> &'static str {
        match self.inner.resample_mode() {
            Resample::Bilinear => "bilinear",
            Resample::Area => "area",
        }
    }

    /// The letterbox bars' RGB colour.
    #[getter]
    fn pad(&self) -> (u8, u8, u8) {
        let [r, g, b] = self.pad;
        (r, g, b)
    }

    /// `"rgb"` or `"bgr"`.
    #[getter]
    fn channels(&self) -> &'static str {
        match self.inner.channels() {
            ChannelOrder::Rgb => "rgb",
            ChannelOrder::Bgr => "bgr",
        }
    }

    /// The tensor's shape: `(batch, 3, height, width)` or `(batch, height, width, 3)`.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    fn __repr__(&self) -> String {
        self.repr()
    }
}

impl PyModelInput {
    /// `ModelInput(640, 640, layout='nchw', ...)`, as the constructor takes it.
    pub(crate) fn repr(&self) -> String {
        let mut s = format!(
            "ModelInput({}, {}, layout='{}', dtype='{}'",
            self.inner.width(),
            self.inner.height(),
            self.layout(),
            self.dtype()
        );
        if let (Some(m), Some(d)) = (self.mean, self.std) {
            s.push_str(&format!(
                ", mean=({}, {}, {}), std=({}, {}, {})",
                m[0], m[1], m[2], d[0], d[1], d[2]
            ));
        }
        if let (Some(scale), Some(zp)) = (self.scale, self.zero_point()) {
            s.push_str(&format!(", scale={scale}, zero_point={zp}"));
        }
        s.push_str(&format!(", fit='{}'", self.fit()));
        if matches!(self.inner.fit_mode(), Fit::Letterbox { .. }) {
            let [r, g, b] = self.pad;
            s.push_str(&format!(", pad=({r}, {g}, {b})"));
        }
        s.push_str(&format!(
            ", channels='{}', batch={}",
            self.channels(),
            self.inner.batch_size()
        ));
        if self.inner.resample_mode() != Resample::Bilinear {
            s.push_str(&format!(", resample='{}'", self.resample()));
        }
        s.push(')');
        s
    }
}

/// Where a source landed in a model input (the last call of a
/// `Preprocessor`): the scale and offsets, and the way back from model
/// pixels to frame pixels.
#[pyclass(module = "zerocam._zerocam", name = "Placement", frozen)]
pub struct Placement {
    inner: FitPlacement,
}

impl Placement {
    /// Wraps a Rust placement.
    pub fn new(inner: FitPlacement) -> Placement {
        Placement { inner }
    }
}

#[pymethods]
impl Placement {
    /// Model pixels per frame pixel, `(sx, sy)`.
    #[getter]
    fn scale(&self) -> (f64, f64) {
        self.inner.scale()
    }

    /// Where the sampled source's top-left corner lands, in model pixels
    /// `(x, y)`: the letterbox's offsets (0 for the other fits).
    #[getter]
    fn offset(&self) -> (usize, usize) {
        self.inner.offset()
    }

    /// The sampled rectangle of the frame `(x, y, width, height)`, in frame
    /// pixels (fractional for an odd centre crop).
    #[getter]
    fn source(&self) -> (f64, f64, f64, f64) {
        let s = self.inner.source;
        (s.x, s.y, s.width, s.height)
    }

    /// The model pixels it fills, `(x, y, width, height)` (the rest is pad).
    #[getter]
    fn target(&self) -> (usize, usize, usize, usize) {
        let t = self.inner.target;
        (t.x, t.y, t.width, t.height)
    }

    /// A point in model pixels, in frame pixels.
    fn to_frame(&self, x: f64, y: f64) -> (f64, f64) {
        self.inner.to_frame(x, y)
    }

    /// A box `(x0, y0, x1, y1)` in model pixels, in frame pixels, clamped to
    /// the sampled rectangle.
    fn to_frame_box(&self, r#box: &Bound<'_, PyAny>) -> PyResult<(f64, f64, f64, f64)> {
        let v: Vec<f64> = r#box.extract().map_err(|_| {
            invalid(format!(
                "box {} is not a sequence of 4 numbers (x0, y0, x1, y1)",
                r#box
            ))
        })?;
        let b = <[f64; 4]>::try_from(v.as_slice()).map_err(|_| {
            invalid(format!(
                "box {} has {} values: give (x0, y0, x1, y1)",
                r#box,
                v.len()
            ))
        })?;
        let [x0, y0, x1, y1] = self.inner.to_frame_box(b);
        Ok((x0, y0, x1, y1))
    }

    fn __repr__(&self) -> String {
        let (sx, sy) = self.inner.scale();
        let (ox, oy) = self.inner.offset();
        let s = self.inner.source;
        format!(
            "Placement(scale=({sx}, {sy}), offset=({ox}, {oy}), source=({}, {}, {}, {}))",
            s.x, s.y, s.width, s.height
        )
    }
}
