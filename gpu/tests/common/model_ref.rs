//! A plain f64 reference of a model input, written from the definitions and
//! not from the code under test:
//! - every source pixel to RGB with the textbook YCbCr equations (Kr, Kb of
//!   BT.601/709; limited range Y 16..235, Cb/Cr 16..240), the Cb/Cr pair
//!   that covers the pixel, clamped to 0..255, not rounded;
//! - bilinear sampling at [`FitPlacement::sample_point`] (half-pixel
//!   centres), edges clamped to the crop;
//! - the value rule of the `ModelInput` doc: `x = (p / 255 - mean) / std` (or
//!   `p / 255`); floats take `x`; integers `round(x / scale) + zero_point`,
//!   or `p` (u8) and `p - 128` (i8) without quantization; clamped.
#![allow(dead_code, clippy::unwrap_used)]

use zerocam_gpu::{
    ChannelOrder, ColorSpec, Fit, FitPlacement, Matrix, ModelInput, ModelLayout, Range,
};
use zerocam_tensor::{DType, PixelFormat, Region, Tensor, TensorDyn, TensorMapTrait};

/// Plane `i` of `t` as rows of samples.
fn plane_rows(t: &Tensor<u8>, i: usize) -> Vec<Vec<u8>> {
    let p = t.plane(i).unwrap();
    let map = p.map_read().unwrap();
    let v = map.view().unwrap();
    v.rows().into_iter().map(|r| r.to_vec()).collect()
}

/// 8-bit YCbCr to RGB in 0..=255, from the definitions.
pub fn ycbcr_to_rgb(color: ColorSpec, y: u8, cb: u8, cr: u8) -> [f64; 3] {
    let (kr, kb) = match color.matrix {
        Matrix::Bt601 => (0.299, 0.114),
        Matrix::Bt709 => (0.2126, 0.0722),
    };
    let (y, cb, cr) = (f64::from(y), f64::from(cb), f64::from(cr));
    let (luma, pb, pr) = match color.range {
        Range::Limited => (
            (y - 16.0) / 219.0,
            (cb - 128.0) / 224.0,
            (cr - 128.0) / 224.0,
        ),
        Range::Full => (y / 255.0, (cb - 128.0) / 255.0, (cr - 128.0) / 255.0),
    };
    let r = luma + 2.0 * (1.0 - kr) * pr;
    let b = luma + 2.0 * (1.0 - kb) * pb;
    let g = (luma - kr * r - kb * b) / (1.0 - kr - kb);
    [r, g, b].map(|c| c.clamp(0.0, 1.0) * 255.0)
}

/// Every pixel of `src` as RGB in 0..=255, row major.
pub fn source_rgb(src: &Tensor<u8>, color: ColorSpec) -> Vec<[f64; 3]> {
    let f = src.format().unwrap();
    let (w, h) = (src.width().unwrap(), src.height().unwrap());
    let p0 = plane_rows(src, 0);
    let p1 = if f.plane_count() > 1 {
        plane_rows(src, 1)
    } else {
        Vec::new()
    };
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let pair = 2 * (x / 2);
            let rgb = match f {
                PixelFormat::Nv12 => {
                    let c = &p1[y / 2];
                    ycbcr_to_rgb(color, p0[y][x], c[pair], c[pair + 1])
                }
                PixelFormat::Nv16 => ycbcr_to_rgb(color, p0[y][x], p1[y][pair], p1[y][pair + 1]),
                PixelFormat::Yuyv => {
                    let r = &p0[y][2 * pair..];
                    ycbcr_to_rgb(color, r[2 * (x % 2)], r[1], r[3])
                }
                PixelFormat::Uyvy => {
                    let r = &p0[y][2 * pair..];
                    ycbcr_to_rgb(color, r[1 + 2 * (x % 2)], r[0], r[2])
                }
                PixelFormat::Grey => [f64::from(p0[y][x]); 3],
                PixelFormat::Rgb | PixelFormat::Rgba => {
                    let n = f.samples_per_pixel();
                    let p = &p0[y][x * n..];
                    [p[0], p[1], p[2]].map(f64::from)
                }
                PixelFormat::Bgr | PixelFormat::Bgra => {
                    let n = f.samples_per_pixel();
                    let p = &p0[y][x * n..];
                    [p[2], p[1], p[0]].map(f64::from)
                }
                other => panic!("no reference for {other:?}"),
            };
            out.push(rgb);
        }
    }
    out
}

/// The model value of pixel value `p` (0..=255) in RGB channel `c`.
pub fn model_value(input: &ModelInput, c: usize, p: f64) -> f64 {
    let x = match input.normalization() {
        Some((mean, std)) => (p / 255.0 - f64::from(mean[c])) / f64::from(std[c]),
        None => p / 255.0,
    };
    let (lo, hi) = match input.element_type() {
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        _ => return x,
    };
    let q = match (input.quantization_params(), input.element_type()) {
        (Some(q), _) => (x / f64::from(q.scale)).round() + f64::from(q.zero_point),
        (None, DType::I8) => p.round() - 128.0,
        _ => p.round(),
    };
    q.clamp(lo, hi)
}

/// The whole model image (`3 * width * height` values, in `input`'s layout
/// and channel order) for `crop` of `src`.
pub fn reference_model_input(
    src: &Tensor<u8>,
    input: &ModelInput,
    crop: Region,
    color: ColorSpec,
) -> (FitPlacement, Vec<f64>) {
    let sw = src.width().unwrap();
    let rgb = source_rgb(src, color);
    let placed = input.place(crop).unwrap();
    let (w, h) = (input.width(), input.height());
    let pad = match input.fit_mode() {
        Fit::Letterbox { pad } => pad.map(f64::from),
        _ => [0.0; 3],
    };
    let at = |x: isize, y: isize| {
        let x = x.clamp(crop.x as isize, (crop.x + crop.width - 1) as isize) as usize;
        let y = y.clamp(crop.y as isize, (crop.y + crop.height - 1) as isize) as usize;
        rgb[y * sw + x]
    };
    let t = placed.target;
    let mut out = vec![0.0; 3 * w * h];
    for row in 0..h {
        for col in 0..w {
            let inside =
                (t.x..t.x + t.width).contains(&col) && (t.y..t.y + t.height).contains(&row);
            let p = if inside {
                let (sx, sy) = placed.sample_point(col, row);
                let (x0, y0) = (sx.floor(), sy.floor());
                let (fx, fy) = (sx - x0, sy - y0);
                let (x0, y0) = (x0 as isize, y0 as isize);
                let mut p = [0.0; 3];
                for (c, v) in p.iter_mut().enumerate() {
                    let top = at(x0, y0)[c] * (1.0 - fx) + at(x0 + 1, y0)[c] * fx;
                    let bottom = at(x0, y0 + 1)[c] * (1.0 - fx) + at(x0 + 1, y0 + 1)[c] * fx;
                    *v = top * (1.0 - fy) + bottom * fy;
                }
                p
            } else {
                pad
            };
            for k in 0..3 {
                let c = match input.channels() {
                    ChannelOrder::Rgb => k,
                    ChannelOrder::Bgr => 2 - k,
                };
                let i = match input.layout() {
                    ModelLayout::Nchw => (k * h + row) * w + col,
                    ModelLayout::Nhwc => (row * w + col) * 3 + k,
                };
                out[i] = model_value(input, c, p[c]);
            }
        }
    }
    (placed, out)
}

/// Batch element `n` of a model input tensor, as f64.
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
