//! The float path's per-pixel arithmetic: per output row, from the three
//! values (`u16` in 1/256 steps, see `rows`), in `f32`: YCbCr → RGB (the
//! [`ColorSpec`] matrix; the identity for RGB sources), clamping to 0..=255
//! and the model's multiply-add of [`ModelInput::affine`], folded into one
//! multiply-add and one clamp per channel:
//! `clamp(v, 0, 255) * g + b == clamp(v * g + b, min(b, 255g + b), max(..))`.
//! Each channel row is a contiguous loop of floats (vectorized).

use super::source::Layout;
use crate::{ChannelOrder, ModelInput};
use zerocam_tensor::ColorSpec;

/// `v` clamped to `lo..=hi` as two selects (`maxps`/`minps` on x86-64, a
/// vector each; [`f32::clamp`] asserts `lo <= hi` in the loop).
#[inline(always)]
fn clamp(v: f32, lo: f32, hi: f32) -> f32 {
    let v = if v < lo { lo } else { v };
    if v > hi {
        hi
    } else {
        v
    }
}

/// An output row's three values (Y, Cb, Cr or R, G, B), in 1/256 steps.
pub(super) type Values<'a> = [&'a [u16]; 3];

/// Per RGB channel: the multiply-add of the three values and the clamp, with
/// the model's gain and bias folded in.
#[derive(Debug)]
pub(super) struct FloatPixels {
    yuv: bool,
    m: [[f32; 3]; 3],
    offset: [f32; 3],
    lo: [f32; 3],
    hi: [f32; 3],
}

impl FloatPixels {
    pub(super) fn new(layout: &Layout, color: ColorSpec, input: &ModelInput) -> FloatPixels {
        let (m, o) = layout.rgb_matrix(color);
        let affine = input.affine();
        let (type_lo, type_hi) = input.value_range();
        // Output channel k shows RGB channel order[k]; the order is its own
        // inverse, so RGB channel c is output channel order[c].
        let order = match input.channels() {
            ChannelOrder::Rgb => [0, 1, 2],
            ChannelOrder::Bgr => [2, 1, 0],
        };
        let gain_bias = order.map(|k| affine[k]);
        let mut p = FloatPixels {
            yuv: layout.yuv,
            m,
            offset: o,
            lo: [0.0; 3],
            hi: [0.0; 3],
        };
        for (c, (g, b)) in gain_bias.into_iter().enumerate() {
            // Values come in 1/256 steps.
            p.m[c] = m[c].map(|v| v * g / 256.0);
            p.offset[c] = o[c] * g + b;
            let (a, z) = (b, 255.0 * g + b);
            p.lo[c] = a.min(z).max(type_lo);
            p.hi[c] = a.max(z).min(type_hi);
        }
        p
    }

    /// One output row of `n` pixels: RGB channel `c` into `out[c]`, each
    /// already the model's value (before rounding).
    pub(super) fn run(&self, v: &Values<'_>, out: [&mut [f32]; 3]) {
        float_row(self, v, out);
    }
}

/// [`FloatPixels::run`], compiled again for AVX2 (picked at run time).
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn float_row(p: &FloatPixels, v: &Values<'_>, out: [&mut [f32]; 3]) {
    let n = out[0].len();
    let v = v.map(|v| &v[..n]);
    let at = |i: usize, x: usize| f32::from(v[i][x]);
    let [r, g, b] = out;
    let (r, g, b) = (&mut r[..n], &mut g[..n], &mut b[..n]);
    let (m, o, lo, hi) = (&p.m, &p.offset, &p.lo, &p.hi);
    if p.yuv {
        // R has no Cb term, B no Cr term.
        for x in 0..n {
            let (y, cb, cr) = (at(0, x), at(1, x), at(2, x));
            r[x] = clamp(m[0][0] * y + m[0][2] * cr + o[0], lo[0], hi[0]);
            g[x] = clamp(
                m[1][0] * y + m[1][1] * cb + m[1][2] * cr + o[1],
                lo[1],
                hi[1],
            );
            b[x] = clamp(m[2][0] * y + m[2][1] * cb + o[2], lo[2], hi[2]);
        }
    } else {
        for x in 0..n {
            r[x] = clamp(m[0][0] * at(0, x) + o[0], lo[0], hi[0]);
            g[x] = clamp(m[1][1] * at(1, x) + o[1], lo[1], hi[1]);
            b[x] = clamp(m[2][2] * at(2, x) + o[2], lo[2], hi[2]);
        }
    }
}
