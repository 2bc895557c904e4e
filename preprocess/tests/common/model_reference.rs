//! A plain f64 per-pixel reference of a model input, written apart from the
//! library: the fit's source rectangle, bilinear sampling with half-pixel
//! centres and clamped edges over each plane, the BT.601/709 equations, then
//! the documented normalization (mean/std on p/255, quantization) and the
//! NCHW/NHWC index. Only the test's description (`ModelInput`'s getters) and
//! the tensor's bytes come from the crates.
#![allow(dead_code, clippy::unwrap_used)]

use zerocam_preprocess::{ChannelOrder, Fit, ModelInput, ModelLayout};
use zerocam_tensor::{DType, PixelFormat, Region, Tensor, TensorDyn, TensorMapTrait};
use zerocam_tensor::{Matrix, Range};

/// One plane: `channels` interleaved samples a texel, rows packed.
struct Plane {
    data: Vec<f64>,
    width: usize,
    height: usize,
    channels: usize,
}

impl Plane {
    fn texel(&self, x: i64, y: i64, c: usize) -> f64 {
        let x = x.clamp(0, self.width as i64 - 1) as usize;
        let y = y.clamp(0, self.height as i64 - 1) as usize;
        self.data[(y * self.width + x) * self.channels + c]
    }

    /// Bilinear at `(x, y)` in this plane's pixels (pixel centres at +0.5).
    fn bilinear(&self, x: f64, y: f64, c: usize) -> f64 {
        let (x0, y0) = (x.floor(), y.floor());
        let (fx, fy) = (x - x0, y - y0);
        let (x0, y0) = (x0 as i64, y0 as i64);
        let top = self.texel(x0, y0, c) * (1.0 - fx) + self.texel(x0 + 1, y0, c) * fx;
        let bot = self.texel(x0, y0 + 1, c) * (1.0 - fx) + self.texel(x0 + 1, y0 + 1, c) * fx;
        top * (1.0 - fy) + bot * fy
    }

    /// Bilinear at a point given in luma pixels of a `w`-wide image (planes
    /// of another size are sampled at the same relative position).
    fn at(&self, x: f64, y: f64, (w, h): (usize, usize), c: usize) -> f64 {
        let sx = (x + 0.5) * self.width as f64 / w as f64 - 0.5;
        let sy = (y + 0.5) * self.height as f64 / h as f64 - 0.5;
        self.bilinear(sx, sy, c)
    }
}

fn plane_bytes(t: &Tensor<u8>, i: usize) -> (Vec<f64>, usize, usize) {
    let p = t.plane(i).unwrap();
    let (rows, cols) = (p.shape()[0], p.shape()[1]);
    let map = p.map_read().unwrap();
    let v = map.view().unwrap();
    let mut out = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        for c in 0..cols {
            out.push(f64::from(v[[r, c]]) / 255.0);
        }
    }
    (out, rows, cols)
}

/// A source frame's RGB (0..1) at any point, in f64.
pub struct Source {
    format: PixelFormat,
    size: (usize, usize),
    planes: Vec<Plane>,
    matrix: Matrix,
    range: Range,
}

impl Source {
    pub fn new(t: &Tensor<u8>, matrix: Matrix, range: Range) -> Source {
        let format = t.format().unwrap();
        let (w, h) = (t.width().unwrap(), t.height().unwrap());
        let plane = |i: usize, channels: usize| {
            let (data, rows, cols) = plane_bytes(t, i);
            Plane {
                data,
                width: cols / channels,
                height: rows,
                channels,
            }
        };
        let planes = match format {
            PixelFormat::Rgb | PixelFormat::Bgr => vec![plane(0, 3)],
            PixelFormat::Rgba | PixelFormat::Bgra => vec![plane(0, 4)],
            PixelFormat::Grey => vec![plane(0, 1)],
            PixelFormat::Nv12 | PixelFormat::Nv16 => vec![plane(0, 1), plane(1, 2)],
            PixelFormat::Yuyv | PixelFormat::Uyvy => vec![plane(0, 2), plane(0, 4)],
            f => panic!("no reference for {f:?}"),
        };
        Source {
            format,
            size: (w, h),
            planes,
            matrix,
            range,
        }
    }

    fn yuv_to_rgb(&self, y: f64, cb: f64, cr: f64) -> [f64; 3] {
        let (kr, kb) = match self.matrix {
            Matrix::Bt601 => (0.299, 0.114),
            Matrix::Bt709 => (0.2126, 0.0722),
        };
        let kg = 1.0 - kr - kb;
        let (y, cb, cr) = match self.range {
            Range::Limited => (
                (y - 16.0 / 255.0) * 255.0 / 219.0,
                (cb - 128.0 / 255.0) * 255.0 / 224.0,
                (cr - 128.0 / 255.0) * 255.0 / 224.0,
            ),
            Range::Full => (y, cb - 128.0 / 255.0, cr - 128.0 / 255.0),
        };
        [
            y + 2.0 * (1.0 - kr) * cr,
            y - 2.0 * kb * (1.0 - kb) / kg * cb - 2.0 * kr * (1.0 - kr) / kg * cr,
            y + 2.0 * (1.0 - kb) * cb,
        ]
        .map(|v| v.clamp(0.0, 1.0))
    }

    /// RGB in 0..1 at `(x, y)` in source pixels (pixel centres at +0.5).
    pub fn rgb(&self, x: f64, y: f64) -> [f64; 3] {
        let p = &self.planes;
        let s = self.size;
        let at = |i: usize, c: usize| p[i].at(x, y, s, c);
        match self.format {
            PixelFormat::Rgb | PixelFormat::Rgba => [at(0, 0), at(0, 1), at(0, 2)],
            PixelFormat::Bgr | PixelFormat::Bgra => [at(0, 2), at(0, 1), at(0, 0)],
            PixelFormat::Grey => [at(0, 0); 3],
            PixelFormat::Nv12 | PixelFormat::Nv16 => self.yuv_to_rgb(at(0, 0), at(1, 0), at(1, 1)),
            PixelFormat::Yuyv => self.yuv_to_rgb(at(0, 0), at(1, 1), at(1, 3)),
            _ => self.yuv_to_rgb(at(0, 1), at(1, 0), at(1, 2)),
        }
    }
}

/// The source rectangle `(x, y, w, h)` and the model rectangle it fills, by
/// the fit's written rule.
pub fn fit(input: &ModelInput, crop: Region) -> ([f64; 4], [f64; 4]) {
    let (sw, sh) = (crop.width as f64, crop.height as f64);
    let (mw, mh) = (input.width() as f64, input.height() as f64);
    let whole = [crop.x as f64, crop.y as f64, sw, sh];
    match input.fit_mode() {
        Fit::Stretch => (whole, [0.0, 0.0, mw, mh]),
        Fit::Crop => {
            let (w, h) = if sw / sh > mw / mh {
                (sh * mw / mh, sh)
            } else {
                (sw, sw * mh / mw)
            };
            (
                [whole[0] + (sw - w) / 2.0, whole[1] + (sh - h) / 2.0, w, h],
                [0.0, 0.0, mw, mh],
            )
        }
        Fit::Letterbox { .. } => {
            let s = (mw / sw).min(mh / sh);
            let (w, h) = ((sw * s).round(), (sh * s).round());
            let (x, y) = (
                ((mw - w) / 2.0).floor(), // whole pixels: (model - w) / 2
                ((mh - h) / 2.0).floor(),
            );
            (whole, [x, y, w, h])
        }
    }
}

/// The documented value for pixel value `p` (0..255 RGB, f64) of channel
/// `rgb` (0 red): normalized, then quantized or rounded for integers.
pub fn value(input: &ModelInput, p: f64, rgb: usize) -> f64 {
    let x = match input.normalization() {
        Some((mean, std)) => (p / 255.0 - f64::from(mean[rgb])) / f64::from(std[rgb]),
        None => p / 255.0,
    };
    let (lo, hi) = match input.element_type() {
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        _ => return x,
    };
    let q = match (input.quantization_params(), input.element_type()) {
        (Some(q), _) => x / f64::from(q.scale) + f64::from(q.zero_point),
        (None, DType::I8) => x * 255.0 - 128.0,
        (None, _) => x * 255.0,
    };
    q.round().clamp(lo, hi)
}

/// The expected model input (batch element) as `[c][y][x]` values in output
/// channel order, for `src` with crop `crop` (relative to `src`).
pub fn expected(input: &ModelInput, source: &Source, crop: Region, pad: [u8; 3]) -> Vec<f64> {
    let (w, h) = (input.width(), input.height());
    let (s, t) = fit(input, crop);
    let order = match input.channels() {
        ChannelOrder::Rgb => [0, 1, 2],
        ChannelOrder::Bgr => [2, 1, 0],
    };
    let mut out = vec![0.0; 3 * w * h];
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f64, y as f64);
            let inside = fx >= t[0] && fx < t[0] + t[2] && fy >= t[1] && fy < t[1] + t[3];
            let rgb = if inside {
                let sx = s[0] + (fx - t[0] + 0.5) * s[2] / t[2] - 0.5;
                let sy = s[1] + (fy - t[1] + 0.5) * s[3] / t[3] - 0.5;
                source.rgb(sx, sy).map(|v| v * 255.0)
            } else {
                pad.map(f64::from)
            };
            for (c, &from) in order.iter().enumerate() {
                out[(c * h + y) * w + x] = value(input, rgb[from], from);
            }
        }
    }
    out
}

/// The largest difference between `got` (a batch element's values in the
/// tensor's own layout) and `want` (`[c][y][x]`), and where: `(c, y, x)`.
pub fn max_error(input: &ModelInput, got: &[f64], want: &[f64]) -> (f64, (usize, usize, usize)) {
    let (w, h) = (input.width(), input.height());
    let mut worst = (0.0, (0, 0, 0));
    for c in 0..3 {
        for y in 0..h {
            for x in 0..w {
                let i = match input.layout() {
                    ModelLayout::Nchw => (c * h + y) * w + x,
                    ModelLayout::Nhwc => (y * w + x) * 3 + c,
                };
                let d = (got[i] - want[(c * h + y) * w + x]).abs();
                let d = if d.is_nan() { f64::INFINITY } else { d };
                if d > worst.0 {
                    worst = (d, (c, y, x));
                }
            }
        }
    }
    worst
}

/// Batch element `n` of a model input tensor, as f64 in its own layout.
pub fn read_element(dst: &TensorDyn, n: usize) -> Vec<f64> {
    fn read<T: zerocam_tensor::Element>(t: &Tensor<T>, n: usize, f: impl Fn(T) -> f64) -> Vec<f64> {
        let e = t.batch(n).unwrap();
        let m = e.map_read().unwrap();
        m.iter().map(|v| f(*v)).collect()
    }
    match dst {
        TensorDyn::U8(t) => read(t, n, f64::from),
        TensorDyn::I8(t) => read(t, n, f64::from),
        TensorDyn::F16(t) => read(t, n, |v| f64::from(v.to_f32())),
        TensorDyn::F32(t) => read(t, n, f64::from),
        other => panic!("not a model dtype: {:?}", other.dtype()),
    }
}
