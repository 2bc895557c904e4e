//! `PixelFormat` and `Region` for Python.

use pyo3::prelude::*;
use zerocam_tensor::{PixelFormat as Fmt, Region as RRegion};

use crate::errors::invalid;

/// How the pixels of an image are laid out (`zerocam.PixelFormat.Rgb`, …).
#[pyclass(module = "zerocam._zerocam", eq, eq_int, frozen, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PixelFormat {
    /// Packed R, G, B.
    Rgb,
    /// Packed B, G, R.
    Bgr,
    /// Packed R, G, B, A.
    Rgba,
    /// Packed B, G, R, A.
    Bgra,
    /// One luma sample per pixel.
    Grey,
    /// Packed 4:2:2 Y, Cb, Y, Cr.
    Yuyv,
    /// Packed 4:2:2 Cb, Y, Cr, Y.
    Uyvy,
    /// 4:2:0 Y plane then interleaved CbCr plane.
    Nv12,
    /// 4:2:2 Y plane then interleaved CbCr plane.
    Nv16,
    /// Three planes R, G, B (CHW).
    PlanarRgb,
}

impl PixelFormat {
    /// The Rust format.
    pub const fn rust(self) -> Fmt {
        match self {
            PixelFormat::Rgb => Fmt::Rgb,
            PixelFormat::Bgr => Fmt::Bgr,
            PixelFormat::Rgba => Fmt::Rgba,
            PixelFormat::Bgra => Fmt::Bgra,
            PixelFormat::Grey => Fmt::Grey,
            PixelFormat::Yuyv => Fmt::Yuyv,
            PixelFormat::Uyvy => Fmt::Uyvy,
            PixelFormat::Nv12 => Fmt::Nv12,
            PixelFormat::Nv16 => Fmt::Nv16,
            PixelFormat::PlanarRgb => Fmt::PlanarRgb,
        }
    }

    /// From the Rust format; `None` for a format this binding does not
    /// expose yet (the Rust enum is `#[non_exhaustive]`).
    pub const fn from_rust(f: Fmt) -> Option<PixelFormat> {
        Some(match f {
            Fmt::Rgb => PixelFormat::Rgb,
            Fmt::Bgr => PixelFormat::Bgr,
            Fmt::Rgba => PixelFormat::Rgba,
            Fmt::Bgra => PixelFormat::Bgra,
            Fmt::Grey => PixelFormat::Grey,
            Fmt::Yuyv => PixelFormat::Yuyv,
            Fmt::Uyvy => PixelFormat::Uyvy,
            Fmt::Nv12 => PixelFormat::Nv12,
            Fmt::Nv16 => PixelFormat::Nv16,
            Fmt::PlanarRgb => PixelFormat::PlanarRgb,
            _ => return None,
        })
    }

    /// The upper-case name (`"NV12"`): [`Fmt::name`].
    pub const fn label(self) -> &'static str {
        self.rust().name()
    }

    /// A `PixelFormat` or a name (`"NV12"`, `"rgb"`, case-insensitive).
    pub fn parse(obj: &Bound<'_, PyAny>) -> PyResult<PixelFormat> {
        if let Ok(f) = obj.extract::<PixelFormat>() {
            return Ok(f);
        }
        let s: String = obj
            .extract()
            .map_err(|_| invalid(format!("format {obj} is not a PixelFormat or a name")))?;
        PixelFormat::from_name(&s)
    }

    /// The format named `name` (case-insensitive), as [`Fmt::from_name`] reads it.
    pub fn from_name(name: &str) -> PyResult<PixelFormat> {
        Fmt::from_name(name)
            .and_then(PixelFormat::from_rust)
            .ok_or_else(|| {
                let names: Vec<&str> = Fmt::ALL
                    .into_iter()
                    .filter(|&f| PixelFormat::from_rust(f).is_some())
                    .map(Fmt::name)
                    .collect();
                invalid(format!(
                    "format {name:?} is not one of {}",
                    names.join(", ")
                ))
            })
    }
}

#[pymethods]
impl PixelFormat {
    /// The upper-case name.
    #[getter]
    fn name(&self) -> &'static str {
        self.label()
    }

    /// Number of planes.
    #[getter]
    fn planes(&self) -> usize {
        self.rust().plane_count()
    }

    fn __str__(&self) -> &'static str {
        self.label()
    }
}

/// A rectangle of pixels (or of dims 0 and 1 of an array): `x`, `y`,
/// `width`, `height`.
#[pyclass(module = "zerocam._zerocam", frozen, get_all, eq, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Left column.
    pub x: usize,
    /// Top row.
    pub y: usize,
    /// Width.
    pub width: usize,
    /// Height.
    pub height: usize,
}

#[pymethods]
impl Region {
    #[new]
    fn new(x: usize, y: usize, width: usize, height: usize) -> Region {
        Region {
            x,
            y,
            width,
            height,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Region(x={}, y={}, width={}, height={})",
            self.x, self.y, self.width, self.height
        )
    }
}

impl Region {
    /// A `Region` or an `(x, y, width, height)` tuple.
    pub fn parse(obj: &Bound<'_, PyAny>) -> PyResult<RRegion> {
        let r = match obj.extract::<Region>() {
            Ok(r) => r,
            Err(_) => {
                let (x, y, width, height): (usize, usize, usize, usize) =
                    obj.extract().map_err(|_| {
                        invalid(format!(
                            "region {obj} is not a Region or an (x, y, width, height) tuple of non-negative ints"
                        ))
                    })?;
                Region {
                    x,
                    y,
                    width,
                    height,
                }
            }
        };
        Ok(RRegion {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        })
    }
}
