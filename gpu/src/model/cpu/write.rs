//! Stage 3 of the CPU path: normalization, quantization, channel order and
//! layout in one pass over the resized RGB pixels (16-bit, `p * 257`),
//! straight into the mapped destination: per element the multiply-add of
//! [`ModelInput::affine`], then for integer types the rounding (half away
//! from zero) and clamping of [`ModelInput::pad_values`]. No float image
//! exists in between.

use fast_image_resize::pixels::U16x3;
use zerocam_tensor::{f16, Region};

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

/// Each output channel's multiply-add on 16-bit samples, the RGB channel it
/// reads, and the pad.
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
            gain: affine.map(|(g, _)| g / 257.0),
            bias: affine.map(|(_, b)| b),
            source_channel: match input.channels() {
                ChannelOrder::Rgb => [0, 1, 2],
                ChannelOrder::Bgr => [2, 1, 0],
            },
            pad: input.pad_values(pad_rgb).map(T::from_value),
        }
    }

    #[inline]
    fn value(&self, k: usize, px: &U16x3) -> T {
        T::from_value(f32::from(px.0[self.source_channel[k]]) * self.gain[k] + self.bias[k])
    }
}

/// Writes one model image (`3 * width * height` elements of `dst`) in
/// `layout`: `rgb` (`target.width`x`target.height` pixels) fills `target`,
/// the pad fills the rest.
pub(super) fn write<T: OutElem>(
    dst: &mut [T],
    layout: ModelLayout,
    (width, height): (usize, usize),
    target: Region,
    rgb: &[U16x3],
    t: &Tables<T>,
) {
    let rows = target.y..target.y + target.height;
    let cols = target.x..target.x + target.width;
    let src_row = |row: usize| &rgb[(row - target.y) * target.width..][..target.width];
    match layout {
        ModelLayout::Nchw => {
            for (k, plane) in dst.chunks_exact_mut(width * height).take(3).enumerate() {
                let pad = t.pad[k];
                for (row, line) in plane.chunks_exact_mut(width).enumerate() {
                    if !rows.contains(&row) {
                        line.fill(pad);
                        continue;
                    }
                    line[..cols.start].fill(pad);
                    line[cols.end..].fill(pad);
                    for (o, px) in line[cols.clone()].iter_mut().zip(src_row(row)) {
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
                for (o, px) in line[cols.start * 3..cols.end * 3]
                    .chunks_exact_mut(3)
                    .zip(src_row(row))
                {
                    o[0] = t.value(0, px);
                    o[1] = t.value(1, px);
                    o[2] = t.value(2, px);
                }
            }
        }
    }
}
