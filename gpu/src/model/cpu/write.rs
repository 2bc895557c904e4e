//! The fused pass of the CPU path, one output row at a time, straight into
//! the mapped destination: per pixel the vertical blend of each value's two
//! resampled rows, YCbCr → RGB (the [`ColorSpec`] matrix; the identity for
//! RGB sources), clamping to 0..=255, then per element the multiply-add of
//! [`ModelInput::affine`] and, for integer types, the rounding (half away
//! from zero) and clamping of [`ModelInput::pad_values`]; NCHW or NHWC.
//! No image exists in between: three rows of floats per stream.

use zerocam_tensor::f16;

use super::source::Layout;
use crate::model::{ChannelOrder, ModelInput};
use crate::ColorSpec;

/// An element type a model input can have.
pub(super) trait OutElem: Copy + Default {
    /// The element for `v`: rounded half away from zero and clamped for
    /// integer types (`as` saturates), converted for floats.
    fn from_value(v: f32) -> Self;
}

/// `v` moved half a step away from zero, for a truncating `as` cast to round
/// it half away from zero like [`f32::round`], which is a library call on
/// x86-64 without SSE4.1 (and so per element, 4x slower here).
#[inline]
fn round_half_away(v: f32) -> f32 {
    v + 0.5f32.copysign(v)
}

impl OutElem for u8 {
    #[inline]
    fn from_value(v: f32) -> u8 {
        round_half_away(v) as u8
    }
}
impl OutElem for i8 {
    #[inline]
    fn from_value(v: f32) -> i8 {
        round_half_away(v) as i8
    }
}
impl OutElem for f16 {
    #[inline]
    fn from_value(v: f32) -> f16 {
        f16::from_f32(v)
    }
}
impl OutElem for f32 {
    #[inline]
    fn from_value(v: f32) -> f32 {
        v
    }
}

/// Per output channel: the RGB channel as a multiply-add of the three values
/// (in output channel order), then the model's multiply-add; and the pad.
pub(super) struct Fused<T> {
    rows: [[f32; 3]; 3],
    offset: [f32; 3],
    gain: [f32; 3],
    bias: [f32; 3],
    pub(super) pad: [T; 3],
}

impl<T: OutElem> Fused<T> {
    pub(super) fn new(layout: &Layout, color: ColorSpec, input: &ModelInput, pad: [u8; 3]) -> Self {
        let (m, o) = layout.to_rgb(color);
        let order = match input.channels() {
            ChannelOrder::Rgb => [0, 1, 2],
            ChannelOrder::Bgr => [2, 1, 0],
        };
        let affine = input.affine();
        Fused {
            rows: order.map(|c| m[c]),
            offset: order.map(|c| o[c]),
            gain: affine.map(|(g, _)| g),
            bias: affine.map(|(_, b)| b),
            pad: input.pad_values(pad).map(T::from_value),
        }
    }

    /// Output channel `k` of values `v`.
    #[inline(always)]
    fn value(&self, k: usize, v: [f32; 3]) -> T {
        let m = &self.rows[k];
        let rgb = (m[0] * v[0] + m[1] * v[1] + m[2] * v[2] + self.offset[k]).clamp(0.0, 255.0);
        T::from_value(rgb * self.gain[k] + self.bias[k])
    }
}

/// One value's two resampled rows and the weight of the second.
pub(super) type Blend<'a> = (&'a [f32], &'a [f32], f32);

#[inline(always)]
fn blend(b: &Blend<'_>, x: usize) -> f32 {
    let (p, q) = (b.0[x], b.1[x]);
    p + (q - p) * b.2
}

/// `n` pixels of values `v` into three channel rows (NCHW).
pub(super) fn planar<T: OutElem>(f: &Fused<T>, v: &[Blend<'_>; 3], out: [&mut [T]; 3], n: usize) {
    let v = v.map(|(p, q, w)| (&p[..n], &q[..n], w));
    let [o0, o1, o2] = out;
    let (o0, o1, o2) = (&mut o0[..n], &mut o1[..n], &mut o2[..n]);
    for x in 0..n {
        let px = [blend(&v[0], x), blend(&v[1], x), blend(&v[2], x)];
        o0[x] = f.value(0, px);
        o1[x] = f.value(1, px);
        o2[x] = f.value(2, px);
    }
}

/// `n` pixels of values `v` into interleaved pixels (NHWC).
pub(super) fn interleaved<T: OutElem>(f: &Fused<T>, v: &[Blend<'_>; 3], out: &mut [T], n: usize) {
    let v = v.map(|(p, q, w)| (&p[..n], &q[..n], w));
    for (x, o) in out[..3 * n].chunks_exact_mut(3).enumerate() {
        let px = [blend(&v[0], x), blend(&v[1], x), blend(&v[2], x)];
        o[0] = f.value(0, px);
        o[1] = f.value(1, px);
        o[2] = f.value(2, px);
    }
}
