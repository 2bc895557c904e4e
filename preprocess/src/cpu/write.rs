//! The row loop of the CPU path, one output row at a time, straight into
//! the mapped destination: the vertical blends of the streams' resampled
//! rows, the pixel arithmetic of the float or fixed-point path
//! ([`FloatPixels`], [`FixedPixels`]), then the element type and layout:
//! NCHW rows are written in place (`f32` directly by the arithmetic), NHWC
//! pixels are interleaved from three channel rows; floats bound for integer
//! types are rounded half away from zero (already clamped to the type's
//! range), `f16` goes through `half`'s slice conversion. The letterbox's
//! bars get the pad.

use half::slice::HalfFloatSliceExt;
use zerocam_tensor::{f16, Region};

use super::fixed::{FixedPixels, Level};
use super::float::{FloatPixels, Values};
use super::rows::{blend_rows, PlaneBytes, RowPair, StreamRows};
use super::source::Layout;
use crate::{ChannelOrder, ModelInput, ModelLayout};

/// An element type a model input can have.
pub(super) trait OutElem: Copy + Default {
    /// The element for `v`, already within the type's range: rounded half
    /// away from zero for integer types, converted for floats.
    fn from_value(v: f32) -> Self;
    /// `out` as floats, if this is `f32` (the float path writes it directly).
    fn as_f32(_out: &mut [Self]) -> Option<&mut [f32]> {
        None
    }
    /// Each of `values` (already within the type's range) into `out`.
    fn from_values(values: &[f32], out: &mut [Self]) {
        for (o, &v) in out.iter_mut().zip(values) {
            *o = Self::from_value(v);
        }
    }
    /// One row of the fixed-point path into `out` (RGB order), if this type
    /// has one (`u8`, `i8`): whether it did.
    fn fixed_row(_p: &FixedPixels, _v: &Values<'_>, _out: [&mut [Self]; 3]) -> bool {
        false
    }
    /// The element of level `v` (0..=255) of the fixed-point path.
    fn from_level(v: u8) -> Self {
        Self::from_value(f32::from(v))
    }
    /// Interleaves three rows of levels (output channel order) into pixels.
    fn interleave_levels(levels: [&[u8]; 3], out: &mut [Self]) {
        interleave_bytes(levels, out, Self::from_level);
    }
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
    fn fixed_row(p: &FixedPixels, v: &Values<'_>, out: [&mut [u8]; 3]) -> bool {
        p.run(v, out);
        true
    }
    #[inline]
    fn from_level(v: u8) -> u8 {
        v
    }
    /// Sixteen pixels at a time as one 48-byte array, which LLVM builds with
    /// vector shuffles and stores whole, then the rest a pixel at a time.
    fn interleave_levels(levels: [&[u8]; 3], out: &mut [u8]) {
        interleave_bytes(levels, out, |v| v);
    }
}

/// Three rows of bytes (output channel order) interleaved into pixels, each
/// byte through `f` (the identity for `u8`, the sign flip for `i8`).
#[inline(always)]
fn interleave_bytes<T: Copy>(levels: [&[u8]; 3], out: &mut [T], f: impl Fn(u8) -> T) {
    let [a, b, c] = levels;
    let n = a.len().min(b.len()).min(c.len()).min(out.len() / 3);
    let (a, b, c, out) = (&a[..n], &b[..n], &c[..n], &mut out[..3 * n]);
    let mut chunks = out.chunks_exact_mut(48);
    for (((o, a), b), c) in (&mut chunks)
        .zip(a.chunks_exact(16))
        .zip(b.chunks_exact(16))
        .zip(c.chunks_exact(16))
    {
        let px: [T; 48] = std::array::from_fn(|i| {
            let (p, k) = (i / 3, i % 3);
            f([a[p], b[p], c[p]][k])
        });
        o.copy_from_slice(&px);
    }
    let done = n - chunks.into_remainder().len() / 3;
    for (((o, &a), &b), &c) in out[3 * done..]
        .chunks_exact_mut(3)
        .zip(&a[done..])
        .zip(&b[done..])
        .zip(&c[done..])
    {
        o.copy_from_slice(&[f(a), f(b), f(c)]);
    }
}
impl OutElem for i8 {
    #[inline]
    fn from_value(v: f32) -> i8 {
        round_half_away(v) as i8
    }
    fn fixed_row(p: &FixedPixels, v: &Values<'_>, out: [&mut [i8]; 3]) -> bool {
        p.run(v, out);
        true
    }
    #[inline]
    fn from_level(v: u8) -> i8 {
        <i8 as Level>::from_level(i16::from(v))
    }
    /// As `u8`'s, each level `v` as `v - 128`: its top bit flipped.
    fn interleave_levels(levels: [&[u8]; 3], out: &mut [i8]) {
        interleave_bytes(levels, out, |v| (v ^ 0x80) as i8);
    }
}
impl OutElem for f16 {
    #[inline]
    fn from_value(v: f32) -> f16 {
        f16::from_f32(v)
    }
    /// `half`'s slice conversion: F16C (x86-64, detected at run time) or
    /// NEON, several a vector; one at a time it was 6 times slower.
    fn from_values(values: &[f32], out: &mut [f16]) {
        let n = values.len().min(out.len());
        out[..n].convert_from_f32_slice(&values[..n]);
    }
}
impl OutElem for f32 {
    #[inline]
    fn from_value(v: f32) -> f32 {
        v
    }
    fn as_f32(out: &mut [f32]) -> Option<&mut [f32]> {
        Some(out)
    }
}

/// The pixel arithmetic of one conversion.
#[derive(Debug)]
pub(super) enum Pixels {
    Float(FloatPixels),
    Fixed(FixedPixels),
}

/// Channel rows of one output row, for layouts and types not written in
/// place.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    float: [Vec<f32>; 3],
    levels: [Vec<u8>; 3],
    /// The three values of an output row.
    values: [Vec<u16>; 3],
    /// Interleaved float pixels.
    pixels: Vec<f32>,
}

/// What one conversion reads and how.
pub(super) struct Frame<'a> {
    pub(super) layout: Layout,
    /// The mapped planes of the source.
    pub(super) planes: [Option<PlaneBytes<'a>>; 2],
    pub(super) pixels: Pixels,
    pub(super) input: &'a ModelInput,
    /// The model pixels the source fills.
    pub(super) target: Region,
    /// The letterbox's bars (RGB, 0..=255).
    pub(super) pad: [u8; 3],
}

/// A band of output rows of one model image, written by one thread: rows
/// `rows` of each channel plane (NCHW) or of the interleaved pixels (NHWC).
/// The bands of one image are disjoint, so threads write them at once.
pub(super) struct Band<'a, T> {
    /// NCHW: the band's rows of each channel plane; NHWC: the band's rows
    /// in `out[0]`, the others empty.
    out: [&'a mut [T]; 3],
    rows: std::ops::Range<usize>,
}

/// Splits one model image (`3 * width * height` elements of `dst`) into
/// at most `N` bands of consecutive rows, as even as rows allow, into
/// `out` (a fixed array: nothing allocated). Returns how many there are.
pub(super) fn bands<'a, T, const N: usize>(
    dst: &'a mut [T],
    input: &ModelInput,
    n: usize,
    out: &mut [Option<Band<'a, T>>; N],
) -> usize {
    let (width, height) = (input.width(), input.height());
    let n = n.clamp(1, N).min(height.max(1));
    let edge = |k: usize| k * height / n;
    match input.layout() {
        ModelLayout::Nchw => {
            let plane_len = width * height;
            let (c0, rest) = dst.split_at_mut(plane_len);
            let (c1, rest) = rest.split_at_mut(plane_len);
            let mut rest = [c0, c1, &mut rest[..plane_len]];
            for (k, slot) in out.iter_mut().enumerate().take(n) {
                let rows = edge(k)..edge(k + 1);
                let len = rows.len() * width;
                let [a, b, c] = rest;
                let ((a0, a1), (b0, b1), (c0, c1)) = (
                    a.split_at_mut(len),
                    b.split_at_mut(len),
                    c.split_at_mut(len),
                );
                *slot = Some(Band {
                    out: [a0, b0, c0],
                    rows,
                });
                rest = [a1, b1, c1];
            }
        }
        ModelLayout::Nhwc => {
            let mut rest = &mut dst[..3 * width * height];
            for (k, slot) in out.iter_mut().enumerate().take(n) {
                let rows = edge(k)..edge(k + 1);
                let (line, after) = std::mem::take(&mut rest).split_at_mut(rows.len() * width * 3);
                *slot = Some(Band {
                    out: [line, &mut [], &mut []],
                    rows,
                });
                rest = after;
            }
        }
    }
    n
}

/// Writes one band's rows: the target's rows from the streams (their kept
/// rows start afresh, so a band's output is the same on any thread), the
/// pad around them.
pub(super) fn write_band<T: OutElem>(
    band: Band<'_, T>,
    f: &Frame<'_>,
    streams: &mut [StreamRows; 2],
    scratch: &mut Scratch,
) {
    let width = f.input.width();
    let pad = f.input.pad_values(f.pad).map(T::from_value);
    let t = f.target;
    let cols = t.x..t.x + t.width;
    let n = t.width;
    let bgr = f.input.channels() == ChannelOrder::Bgr;
    let Band { out: planes, rows } = band;
    let first = rows.start;
    let [c0, c1, c2] = planes;
    for row in rows {
        let inside = (t.y..t.y + t.height).contains(&row);
        let local = row - first;
        match f.input.layout() {
            ModelLayout::Nchw => {
                let line = local * width..(local + 1) * width;
                let mut out = [&mut c0[line.clone()], &mut c1[line.clone()], &mut c2[line]];
                for (c, pad) in out.iter_mut().zip(pad) {
                    if inside {
                        c[..cols.start].fill(pad);
                        c[cols.end..].fill(pad);
                    } else {
                        c.fill(pad);
                    }
                }
                if !inside {
                    continue;
                }
                let [c0, c1, c2] = out;
                let (c0, c1, c2) = (
                    &mut c0[cols.clone()],
                    &mut c1[cols.clone()],
                    &mut c2[cols.clone()],
                );
                // RGB order: output channel k shows RGB channel order[k].
                let rgb = if bgr { [c2, c1, c0] } else { [c0, c1, c2] };
                planar_row(f, streams, scratch, row - t.y, rgb);
            }
            ModelLayout::Nhwc => {
                let line = &mut c0[local * width * 3..(local + 1) * width * 3];
                if !inside {
                    pad_pixels(line, pad);
                    continue;
                }
                pad_pixels(&mut line[..cols.start * 3], pad);
                pad_pixels(&mut line[cols.end * 3..], pad);
                let out = &mut line[cols.start * 3..cols.end * 3];
                interleaved_row(f, streams, scratch, row - t.y, n, out);
            }
        }
    }
}

/// Target row `r` into three channel rows (RGB order) of the destination.
fn planar_row<T: OutElem>(
    f: &Frame<'_>,
    streams: &mut [StreamRows; 2],
    scratch: &mut Scratch,
    r: usize,
    out: [&mut [T]; 3],
) {
    let n = out[0].len();
    match &f.pixels {
        Pixels::Float(p) => {
            let Some(v) = values(f, streams, r, n, &mut scratch.values) else {
                return;
            };
            let [a, b, c] = out;
            if let (Some(a), Some(b), Some(c)) = (T::as_f32(a), T::as_f32(b), T::as_f32(c)) {
                p.run(&v, [a, b, c]);
                return;
            }
            let rows = rows_of(&mut scratch.float, n);
            p.run(&v, rows);
            for (o, s) in [a, b, c].into_iter().zip(&scratch.float) {
                T::from_values(&s[..n], o);
            }
        }
        Pixels::Fixed(p) => {
            if let Some(v) = values(f, streams, r, n, &mut scratch.values) {
                T::fixed_row(p, &v, out);
            }
        }
    }
}

/// Target row `r` into `n` interleaved pixels of the destination.
fn interleaved_row<T: OutElem>(
    f: &Frame<'_>,
    streams: &mut [StreamRows; 2],
    scratch: &mut Scratch,
    r: usize,
    n: usize,
    out: &mut [T],
) {
    let order = match f.input.channels() {
        ChannelOrder::Rgb => [0, 1, 2],
        ChannelOrder::Bgr => [2, 1, 0],
    };
    match &f.pixels {
        Pixels::Float(p) => {
            let Some(v) = values(f, streams, r, n, &mut scratch.values) else {
                return;
            };
            p.run(&v, rows_of(&mut scratch.float, n));
            let [a, b, c] = order.map(|k| &scratch.float[k][..n]);
            let interleave = |pixels: &mut [f32]| {
                for (((o, &a), &b), &c) in pixels.chunks_exact_mut(3).zip(a).zip(b).zip(c) {
                    o.copy_from_slice(&[a, b, c]);
                }
            };
            if let Some(pixels) = T::as_f32(out) {
                interleave(pixels);
            } else {
                scratch.pixels.resize(3 * n, 0.0);
                interleave(&mut scratch.pixels[..3 * n]);
                T::from_values(&scratch.pixels[..3 * n], out);
            }
        }
        Pixels::Fixed(p) => {
            let Some(v) = values(f, streams, r, n, &mut scratch.values) else {
                return;
            };
            p.run(&v, rows_of(&mut scratch.levels, n));
            let levels = order.map(|k| &scratch.levels[k][..n]);
            T::interleave_levels(levels, out);
        }
    }
}

/// Three scratch rows of `n`.
fn rows_of<S: Copy + Default>(rows: &mut [Vec<S>; 3], n: usize) -> [&mut [S]; 3] {
    let [a, b, c] = rows;
    for r in [&mut *a, &mut *b, &mut *c] {
        r.resize(n, S::default());
    }
    [&mut a[..n], &mut b[..n], &mut c[..n]]
}

/// Target row `r`'s three values, each `n` samples: the vertical blends of
/// the streams' resampled rows (or their area rows), into `out`.
fn values<'s>(
    f: &Frame<'_>,
    streams: &mut [StreamRows; 2],
    r: usize,
    n: usize,
    out: &'s mut [Vec<u16>; 3],
) -> Option<Values<'s>> {
    let [first, second] = streams;
    let rows = [resampled(f, first, 0, r), resampled(f, second, 1, r)];
    for ((stream, k), out) in f.layout.values.into_iter().zip(out.iter_mut()) {
        out.resize(n, 0);
        match rows[stream].as_ref()? {
            Resampled::Pair((p, q, lanes)) => blend_rows(
                p.get(k * n..(k + 1) * n)?,
                q.get(k * n..(k + 1) * n)?,
                lanes,
                out,
            ),
            Resampled::Row(row) => out.copy_from_slice(row.get(k * n..(k + 1) * n)?),
        }
    }
    let [a, b, c] = out;
    Some([&a[..], &b[..], &c[..]])
}

/// A stream's samples for one target row.
enum Resampled<'a> {
    /// Two resampled rows to blend (bilinear).
    Pair(RowPair<'a>),
    /// The row itself (area).
    Row(&'a [u16]),
}

/// Stream `i`'s resampled rows for target row `r`.
fn resampled<'a>(
    f: &Frame<'_>,
    rows: &'a mut StreamRows,
    i: usize,
    r: usize,
) -> Option<Resampled<'a>> {
    let plane = f.layout.streams.get(i).and_then(|s| f.planes[s.plane])?;
    if rows.area.is_some() {
        return Some(Resampled::Row(rows.area.as_mut()?.row(plane, r)));
    }
    Some(Resampled::Pair(rows.row(plane, r)))
}

fn pad_pixels<T: OutElem>(line: &mut [T], value: [T; 3]) {
    for o in line.chunks_exact_mut(3) {
        o.copy_from_slice(&value);
    }
}
