//! Area resampling ([`Resample::Area`](crate::Resample::Area)) of one
//! stream: on an axis a plane is shrunk along, each output sample is the
//! mean of the texels its footprint covers, each weighted by the part of it
//! covered (OpenCV's `INTER_AREA`, PIL's `BOX`); on an axis it is not
//! shrunk along, the two bilinear taps of `taps` (as `INTER_AREA` does).
//!
//! Footprints are in the plane's own texels: output `o` of `outputs` over
//! `start..start + len` luma pixels covers `[(start + o * step) * n / image,
//! (start + (o + 1) * step) * n / image)` of a plane `n` texels across, the
//! same edges the bilinear rule's centre-sited points lie between.
//!
//! Per output row, two passes: the rows the row's footprint covers are
//! summed, weighted, over the bytes the columns read (`u32`, a vector loop)
//! and brought to 1/256 steps, then each output column sums its texels of
//! that row (`u32`: weights in 2^-16 that sum to exactly 1 keep it under
//! 2^32; a scalar loop, as each column reads its own texels). The result, in
//! the 1/256 steps the other path uses, is off by under a step of 1/256.

use super::rows::PlaneBytes;
use super::source::Stream;
use super::taps::tap;

/// One axis: output `o` reads texels `index[o * k + j]` with weights
/// `weight[o * k + j]` (2^-16, summing to 2^16), `j < k`; unused taps have
/// weight 0.
#[derive(Debug, Default)]
pub(super) struct AreaTaps {
    k: usize,
    index: Vec<u32>,
    weight: Vec<u32>,
}

impl AreaTaps {
    /// The taps of `outputs` outputs over `span` (start, length) of an
    /// `image`-pixel-long axis, in a plane `plane` texels long.
    pub(super) fn fill(
        &mut self,
        span: (f64, f64),
        outputs: usize,
        (image, plane): (usize, usize),
    ) {
        let (start, len) = span;
        let scale = plane as f64 / image as f64;
        let step = len / outputs as f64;
        let shrunk = step * scale > 1.0;
        self.k = if shrunk {
            (step * scale).ceil() as usize + 1
        } else {
            2
        };
        self.index.clear();
        self.weight.clear();
        let mut taps: Vec<(usize, f64)> = Vec::with_capacity(self.k);
        for o in 0..outputs {
            taps.clear();
            if shrunk {
                let e0 = (start + o as f64 * step) * scale;
                let e1 = (start + (o + 1) as f64 * step) * scale;
                let first = e0.floor().max(0.0) as usize;
                let mut i = first;
                while (i as f64) < e1 && taps.len() < self.k {
                    let cover = (e1.min(i as f64 + 1.0) - e0.max(i as f64)).max(0.0);
                    taps.push((i.min(plane - 1), cover / (e1 - e0)));
                    i += 1;
                }
            } else {
                // The bilinear rule's point: the footprint's centre.
                let p = (start + (o as f64 + 0.5) * step) * scale - 0.5;
                let (first, w) = tap(p, plane);
                taps.push((first, 1.0 - w));
                taps.push(((first + 1).min(plane - 1), w));
            }
            self.push(&taps);
        }
    }

    /// One output's taps, the weights rounded to 2^-16 with the rounding
    /// left over given to the heaviest, so they sum to exactly 2^16.
    fn push(&mut self, taps: &[(usize, f64)]) {
        let base = self.weight.len();
        for &(i, w) in taps {
            self.index.push(i as u32);
            self.weight.push((w * 65536.0).round() as u32);
        }
        let last = taps.last().map_or(0, |t| t.0) as u32;
        for _ in taps.len()..self.k {
            self.index.push(last);
            self.weight.push(0);
        }
        let weights = &mut self.weight[base..];
        let sum: u32 = weights.iter().sum();
        if let Some(heaviest) = weights.iter_mut().max() {
            *heaviest = (*heaviest + 65536).saturating_sub(sum);
        }
    }

    /// Output `o`'s texels and weights.
    fn of(&self, o: usize) -> impl Iterator<Item = (usize, u32)> + '_ {
        let r = o * self.k..(o + 1) * self.k;
        self.index[r.clone()]
            .iter()
            .zip(&self.weight[r])
            .map(|(&i, &w)| (i as usize, w))
    }

    /// The lowest and highest texel any output reads.
    fn bounds(&self) -> (usize, usize) {
        let lo = self.index.iter().min().copied().unwrap_or(0) as usize;
        let hi = self.index.iter().max().copied().unwrap_or(0) as usize;
        (lo, hi)
    }
}

/// One stream's area taps across and down, and its row buffers.
#[derive(Debug, Default)]
pub(super) struct AreaRows {
    pub(super) columns: AreaTaps,
    pub(super) rows: AreaTaps,
    stream: Option<Stream>,
    width: usize,
    /// The first byte of a row the columns read, and the byte after the last.
    lo: usize,
    hi: usize,
    /// Per column and tap: the byte offset of the texel from `lo`.
    offsets: Vec<u32>,
    /// The weighted sum of the rows an output row covers, over the bytes
    /// the columns read (bytes in 2^-16 steps).
    sum: Vec<u32>,
    /// That sum in 1/256 steps.
    levels: Vec<u16>,
    /// The output row: sample `k` of column `x` at `k * width + x`.
    out: Vec<u16>,
}

impl AreaRows {
    /// Prepares for `width` output columns of `stream` (after the taps).
    pub(super) fn prepare(&mut self, stream: &Stream, width: usize) {
        self.stream = Some(*stream);
        self.width = width;
        let (first, last) = self.columns.bounds();
        (self.lo, self.hi) = (first * stream.texel, (last + 1) * stream.texel);
        let lo = self.lo;
        self.offsets.clear();
        self.offsets.extend(
            self.columns
                .index
                .iter()
                .map(|&i| (i as usize * stream.texel - lo) as u32),
        );
    }

    /// Output row `r` of the stream: sample `k` of column `x` at
    /// `k * width + x`, in 1/256 steps.
    pub(super) fn row(&mut self, plane: PlaneBytes<'_>, r: usize) -> &[u16] {
        let Some(stream) = self.stream else {
            return &[];
        };
        let (lo, n) = (self.lo, self.hi - self.lo);
        self.sum.clear();
        self.sum.resize(n, 0);
        for (i, w) in self.rows.of(r) {
            let start = i * plane.stride + lo;
            let Some(bytes) = plane.bytes.get(start..start + n) else {
                continue;
            };
            if w == 0 {
                continue;
            }
            for (s, &b) in self.sum.iter_mut().zip(bytes) {
                *s += u32::from(b) * w;
            }
        }
        // To 1/256 steps (at most 65280): the column sums then fit u32.
        self.levels.clear();
        self.levels
            .extend(self.sum.iter().map(|&s| ((s + 128) >> 8) as u16));
        let (width, k) = (self.width, self.columns.k);
        self.out.resize(width * stream.count, 0);
        let offsets = &self.offsets[..width * k];
        let weights = &self.columns.weight[..width * k];
        for c in 0..stream.count {
            let at = stream.first + c * stream.spacing;
            let levels = self.levels.get(at..).unwrap_or(&[]);
            let out = &mut self.out[c * width..(c + 1) * width];
            match k {
                2 => columns::<2>(levels, offsets, weights, out),
                3 => columns::<3>(levels, offsets, weights, out),
                4 => columns::<4>(levels, offsets, weights, out),
                _ => columns_any(k, levels, offsets, weights, out),
            }
        }
        &self.out
    }
}

/// Each output column's sum of its `K` taps of `levels`, rounded to 1/256
/// steps (`K` known, so the tap loop unrolls).
fn columns<const K: usize>(levels: &[u16], offsets: &[u32], weights: &[u32], out: &mut [u16]) {
    for ((o, offs), ws) in out
        .iter_mut()
        .zip(offsets.chunks_exact(K))
        .zip(weights.chunks_exact(K))
    {
        let mut acc = 0u32;
        for j in 0..K {
            acc += u32::from(levels.get(offs[j] as usize).copied().unwrap_or(0)) * ws[j];
        }
        *o = ((acc + 32768) >> 16) as u16;
    }
}

/// [`columns`] for any number of taps.
fn columns_any(k: usize, levels: &[u16], offsets: &[u32], weights: &[u32], out: &mut [u16]) {
    for ((o, offs), ws) in out
        .iter_mut()
        .zip(offsets.chunks_exact(k))
        .zip(weights.chunks_exact(k))
    {
        let mut acc = 0u32;
        for (&off, &w) in offs.iter().zip(ws) {
            acc += u32::from(levels.get(off as usize).copied().unwrap_or(0)) * w;
        }
        *o = ((acc + 32768) >> 16) as u16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_footprint_weighs_the_texels_it_covers() {
        let mut t = AreaTaps::default();
        // 10 texels onto 4 outputs: 2.5 texels each.
        t.fill((0.0, 10.0), 4, (10, 10));
        let o1: Vec<_> = t.of(1).filter(|&(_, w)| w > 0).collect();
        // [2.5, 5): half of texel 2, texels 3 and 4.
        assert_eq!(o1, [(2, 13107), (3, 26214), (4, 26215)]);
        assert!((0..4).all(|o| t.of(o).map(|(_, w)| w).sum::<u32>() == 65536));
        // An enlarged axis is bilinear.
        t.fill((0.0, 4.0), 8, (4, 4));
        let o4: Vec<_> = t.of(4).collect();
        assert_eq!(o4, [(1, 16384), (2, 49152)]);
    }
}
