//! The fixed-point path, for `u8`/`i8` inputs that are the pixel levels
//! themselves (`p`, or `p - 128`: no mean/std, no quantization but the
//! identity): OpenCV's approach for 8-bit bilinear resizes, in 16-bit lanes
//! (twice as many a vector as floats). From the three values (`u16` in 1/256
//! steps, see `rows`), YCbCr → RGB with the matrix in 2^-13 (`mulhi`, giving
//! 1/32 steps; the offsets folded into one constant a channel), then each
//! channel rounded to a level and clamped to 0..=255, in one loop. Each
//! truncating multiply loses under 1/32 of a step (their mean is added back
//! before rounding): a level is within 0.6 of a step of the exact value
//! (`host_model_cpu::plain_levels_are_within_0_6_of_the_exact_value`).

use super::float::Values;
use super::rows::mulhi;
use super::source::Layout;
use crate::ModelInput;
use zerocam_tensor::DType;
use zerocam_tensor::{ColorSpec, Range};

/// Whether `input` takes pixel levels as they are: each channel's affine is
/// `p` (`u8`) or `p - 128` (`i8`).
pub(super) fn takes_levels(input: &ModelInput) -> bool {
    let bias = match input.element_type() {
        DType::U8 => 0.0,
        DType::I8 => -128.0,
        _ => return false,
    };
    input
        .affine()
        .iter()
        .all(|&(g, b)| (g - 1.0).abs() < 1e-6 && (b - bias).abs() < 1e-4)
}

/// `v` in 2^-13 (at most 2.12 here: it fits a `u16`).
fn q13(v: f32) -> u16 {
    (v * 8192.0).round() as u16
}

/// The matrix in 2^-13 (magnitudes; the signs are in `run`) and each
/// channel's constant in 1/32 steps, rounding included.
#[derive(Debug)]
pub(super) struct FixedPixels {
    yuv: bool,
    /// Luma gain, Cr in R, Cb and Cr in G (subtracted), Cb in B.
    y: u16,
    r_cr: u16,
    g_cb: u16,
    g_cr: u16,
    b_cb: u16,
    /// Added to R, G, B (wrapping): the offsets of Y, Cb and Cr through the
    /// matrix, and the rounding.
    constant: [u16; 3],
}

impl FixedPixels {
    pub(super) fn new(layout: &Layout, color: ColorSpec) -> FixedPixels {
        let m = color.rgb_matrix();
        let y_offset = match color.range {
            Range::Limited => 16.0,
            Range::Full => 0.0,
        };
        // RGB = m · (Y - y_offset, Cb - 128, Cr - 128): the offsets' part,
        // in 1/32 steps.
        let offset = m.map(|row| -32.0 * (row[0] * y_offset + (row[1] + row[2]) * 128.0));
        // + 16 rounds to a level; the truncating multiplies lose half a
        // 1/32 step each on average: R and B add two, G adds one and
        // subtracts two.
        let rounding = [17.0, 16.0, 17.0];
        let constant = [0, 1, 2].map(|c| (offset[c] + rounding[c]).round() as i16 as u16);
        FixedPixels {
            yuv: layout.yuv,
            y: q13(m[0][0]),
            r_cr: q13(m[0][2]),
            g_cb: q13(-m[1][1]),
            g_cr: q13(-m[1][2]),
            b_cb: q13(m[2][1]),
            constant,
        }
    }

    /// One output row of `n` pixels: RGB channel `c`'s levels (0..=255)
    /// into `out[c]`.
    ///
    /// One loop of `u16` arithmetic (wrapping: a channel below 0 is a
    /// negative `i16`), which LLVM vectorizes 8 lanes wide with `pmulhuw`.
    pub(super) fn run<T: Level>(&self, v: &Values<'_>, out: [&mut [T]; 3]) {
        let n = out[0].len();
        let [r, g, b] = out;
        let (r, g, b) = (&mut r[..n], &mut g[..n], &mut b[..n]);
        let [v0, v1, v2] = v.map(|v| &v[..n]);
        if !self.yuv {
            let level = |v: u16| T::from_level(((v + 128) >> 8) as i16);
            for x in 0..n {
                r[x] = level(v0[x]);
                g[x] = level(v1[x]);
                b[x] = level(v2[x]);
            }
            return;
        }
        let [kr, kg, kb] = self.constant;
        let level = |v: u16| T::from_level((v as i16) >> 5);
        for x in 0..n {
            let y = mulhi(v0[x], self.y);
            let (cb, cr) = (v1[x], v2[x]);
            r[x] = level(y.wrapping_add(mulhi(cr, self.r_cr)).wrapping_add(kr));
            let gu = mulhi(cb, self.g_cb).wrapping_add(mulhi(cr, self.g_cr));
            g[x] = level(y.wrapping_add(kg).wrapping_sub(gu));
            b[x] = level(y.wrapping_add(mulhi(cb, self.b_cb)).wrapping_add(kb));
        }
    }
}

/// An element type of the fixed-point path.
pub(super) trait Level: Copy {
    /// The element for level `v`, clamped to 0..=255 first.
    fn from_level(v: i16) -> Self;
}

impl Level for u8 {
    #[inline(always)]
    fn from_level(v: i16) -> u8 {
        v.clamp(0, 255) as u8
    }
}

impl Level for i8 {
    #[inline(always)]
    fn from_level(v: i16) -> i8 {
        (v.clamp(0, 255) - 128) as i8
    }
}
