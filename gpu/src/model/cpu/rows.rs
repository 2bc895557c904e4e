//! Bilinear resampling of one stream (a plane's samples), separable: each
//! plane row that output rows read is resampled across once, at the output
//! columns, into one of two kept rows; an output row is then the blend of two
//! such rows, done by the fused pass (`write`). Consecutive output rows share
//! plane rows (a 720 → 640 downscale reads each row once or twice, a 4:2:0
//! chroma upscale reads each twice), so no plane row is resampled twice.

use super::source::Stream;
use super::taps::{Columns, RowTap, Rows};

/// One stream's taps and its two kept rows.
#[derive(Debug, Default)]
pub(super) struct StreamRows {
    pub(super) columns: Columns,
    pub(super) rows: Rows,
    samples: &'static [usize],
    /// Output columns.
    width: usize,
    /// Two resampled plane rows: sample `k` of column `x` at `k * width + x`.
    kept: [Vec<f32>; 2],
    /// The plane row each of `kept` holds (`usize::MAX`: none).
    held: [usize; 2],
}

/// A plane mapped for reading: its bytes and row stride.
#[derive(Clone, Copy)]
pub(super) struct PlaneBytes<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) stride: usize,
}

impl PlaneBytes<'_> {
    fn row(&self, r: usize) -> &[u8] {
        &self.bytes[r * self.stride..]
    }
}

impl StreamRows {
    /// Prepares for `width` output columns of `stream`.
    pub(super) fn prepare(&mut self, stream: &Stream, width: usize) {
        self.samples = stream.samples;
        self.width = width;
        for k in &mut self.kept {
            k.resize(width * stream.samples.len(), 0.0);
        }
        self.forget();
    }

    /// Forgets the kept rows (a new frame).
    pub(super) fn forget(&mut self) {
        self.held = [usize::MAX; 2];
    }

    /// The two resampled rows output row `r` blends, and the weight of the
    /// second: `(first, second, tap)`; sample `k` of column `x` is at
    /// `k * width + x` in each.
    pub(super) fn row(&mut self, plane: PlaneBytes<'_>, r: usize) -> (&[f32], &[f32], RowTap) {
        let tap = self.rows.taps[r];
        let misplaced = self.held[1] == tap.first || self.held[0] == tap.second;
        if self.held[0] != tap.first && misplaced {
            self.kept.swap(0, 1);
            self.held.swap(0, 1);
        }
        for (slot, want) in [(0, tap.first), (1, tap.second)] {
            if self.held[slot] != want && !(slot == 1 && want == tap.first) {
                resample(plane.row(want), &self.columns, self.samples, &mut self.kept[slot]);
                self.held[slot] = want;
            }
        }
        let second = usize::from(tap.second != tap.first);
        (&self.kept[0], &self.kept[second], tap)
    }
}

/// One plane row resampled across at the output columns into `out`.
fn resample(row: &[u8], columns: &Columns, samples: &[usize], out: &mut [f32]) {
    match *samples {
        [a] => across(row, columns, [a], out),
        [a, b] => across(row, columns, [a, b], out),
        [a, b, c] => across(row, columns, [a, b, c], out),
        _ => {}
    }
}

fn across<const C: usize>(row: &[u8], columns: &Columns, samples: [usize; C], out: &mut [f32]) {
    let n = columns.offset.len();
    let step = columns.step;
    for (x, (&o, &w)) in columns.offset.iter().zip(&columns.weight).enumerate() {
        for (k, &s) in samples.iter().enumerate() {
            let a = f32::from(row[o + s]);
            let b = f32::from(row[o + step + s]);
            out[k * n + x] = a + (b - a) * w;
        }
    }
}
