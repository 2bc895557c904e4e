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

const ALL: [(PixelFormat, Fmt, &str); 10] = [
    (PixelFormat::Rgb, Fmt::Rgb, "RGB"),
    (PixelFormat::Bgr, Fmt::Bgr, "BGR"),
    (PixelFormat::Rgba, Fmt::Rgba, "RGBA"),
    (PixelFormat::Bgra, Fmt::Bgra, "BGRA"),
    (PixelFormat::Grey, Fmt::Grey, "GREY"),
    (PixelFormat::Yuyv, Fmt::Yuyv, "YUYV"),
    (PixelFormat::Uyvy, Fmt::Uyvy, "UYVY"),
    (PixelFormat::Nv12, Fmt::Nv12, "NV12"),
    (PixelFormat::Nv16, Fmt::Nv16, "NV16"),
    (PixelFormat::PlanarRgb, Fmt::PlanarRgb, "PLANAR_RGB"),
];

impl PixelFormat {
    /// The Rust format.
    pub fn rust(self) -> Fmt {
        ALL.iter().find(|e| e.0 == self).map_or(Fmt::Rgb, |e| e.1)
    }

    /// From the Rust format.
    pub fn from_rust(f: Fmt) -> Option<PixelFormat> {
        ALL.iter().find(|e| e.1 == f).map(|e| e.0)
    }

    /// The upper-case name (`"NV12"`).
    pub fn label(self) -> &'static str {
        ALL.iter().find(|e| e.0 == self).map_or("?", |e| e.2)
    }

    /// A `PixelFormat` or a name (`"NV12"`, `"rgb"`, case-insensitive).
    pub fn parse(obj: &Bound<'_, PyAny>) -> PyResult<PixelFormat> {
        if let Ok(f) = obj.extract::<PixelFormat>() {
            return Ok(f);
        }
        let s: String = obj
            .extract()
            .map_err(|_| invalid(format!("format {obj} is not a PixelFormat or a name")))?;
        ALL.iter()
            .find(|e| e.2.eq_ignore_ascii_case(&s))
            .map(|e| e.0)
            .ok_or_else(|| {
                let names: Vec<&str> = ALL.iter().map(|e| e.2).collect();
                invalid(format!("format {s:?} is not one of {}", names.join(", ")))
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
