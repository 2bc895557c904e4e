//! Stage 3 of the CPU path: normalization, quantization, channel order and
//! layout in one pass over the resampled RGB pixels, one row at a time as
//! stage 2 makes them, straight into the mapped destination: per element the
//! multiply-add of [`ModelInput::affine`], then for integer types the
//! rounding (half away from zero) and clamping of
//! [`ModelInput::pad_values`]. No float image exists in between.

use zerocam_tensor::{f16, Region};

use super::bilinear::Resampler;

use crate::model::{ChannelOrder, ModelInput, ModelLayout};

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

/// Each output channel's multiply-add, the RGB channel it reads, and the pad.
pub(super) struct Tables<T> {
    gain: [f32; 3],
    bias: [f32; 3],
    source_channel: [usize; 3],
    pad: [T; 3],
}

impl<T: OutElem> Tables<T> {
    pub(super) fn new(input: &ModelInput, pad_rgb: [u8; 3]) -> Tables<T> {
        let affine = input.affine();
        Tables {
            gain: affine.map(|(g, _)| g),
            bias: affine.map(|(_, b)| b),
            source_channel: match input.channels() {
                ChannelOrder::Rgb => [0, 1, 2],
                ChannelOrder::Bgr => [2, 1, 0],
            },
            pad: input.pad_values(pad_rgb).map(T::from_value),
        }
    }

    #[inline]
    fn value(&self, k: usize, px: &[f32]) -> T {
        T::from_value(px[self.source_channel[k]] * self.gain[k] + self.bias[k])
    }
}

/// Writes one model image (`3 * width * height` elements of `dst`) in
/// `layout`: the rows `resampler` makes from `rgb` fill `target`, the pad
/// fills the rest.
pub(super) fn write<T: OutElem>(
    dst: &mut [T],
    layout: ModelLayout,
    (width, height): (usize, usize),
    target: Region,
    (resampler, rgb): (&mut Resampler, &[u8]),
    t: &Tables<T>,
) {
    let rows = target.y..target.y + target.height;
    let cols = target.x..target.x + target.width;
    match layout {
        ModelLayout::Nchw => {
            let plane = width * height;
            for row in 0..height {
                let line = |k: usize| k * plane + row * width..k * plane + (row + 1) * width;
                if !rows.contains(&row) {
                    for k in 0..3 {
                        dst[line(k)].fill(t.pad[k]);
                    }
                    continue;
                }
                let pixels = resampler.row(rgb, row - target.y);
                for k in 0..3 {
                    let out = &mut dst[line(k)];
                    out[..cols.start].fill(t.pad[k]);
                    out[cols.end..].fill(t.pad[k]);
                    for (o, px) in out[cols.clone()].iter_mut().zip(pixels.chunks_exact(3)) {
                        *o = t.value(k, px);
                    }
                }
            }
        }
        ModelLayout::Nhwc => {
            let pad_px = |line: &mut [T]| {
                for o in line.chunks_exact_mut(3) {
                    o.copy_from_slice(&t.pad);
                }
            };
            for (row, line) in dst.chunks_exact_mut(width * 3).take(height).enumerate() {
                if !rows.contains(&row) {
                    pad_px(line);
                    continue;
                }
                pad_px(&mut line[..cols.start * 3]);
                pad_px(&mut line[cols.end * 3..]);
                let pixels = resampler.row(rgb, row - target.y);
                for (o, px) in line[cols.start * 3..cols.end * 3]
                    .chunks_exact_mut(3)
                    .zip(pixels.chunks_exact(3))
                {
                    o[0] = t.value(0, px);
                    o[1] = t.value(1, px);
                    o[2] = t.value(2, px);
                }
            }
        }
    }
}
