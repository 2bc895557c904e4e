//! The resampling across as byte shuffles, where a row allows it: when the
//! bytes that each block of 8 output columns reads (both texels of every
//! sample) lie within 16 bytes of the row, one 16-byte load and one shuffle
//! per texel put each column's byte in the high half of its 16-bit lane —
//! the sample in 1/256 steps, as `rows` keeps it — and the blend follows in
//! the same registers. Where they do not but each half block's (4 columns)
//! do, two loads and two shuffles per texel, or'ed. This replaces the scalar
//! gather of `rows::pass` (a load and a store a column and half) and its
//! blends: SSSE3 `pshufb` (AVX2: two blocks a register) on x86-64
//! (`x86.rs`), `tbl` on aarch64 (`arm.rs`).
//!
//! The shuffles are worked out once per geometry ([`Shuffles::plan`]). One
//! load a block fits 1-byte planes (NV12's and NV16's luma, GREY) downscaled
//! up to about 2× and upscaled, and 2-byte chroma pairs (NV12, NV16) up to
//! about 1.7× of their plane (a 4:2:0 chroma plane is usually upscaled); two
//! loads fit YUYV's and UYVY's luma and chroma at a 720 → 640 crop, packed
//! RGB there where each 4 columns read 4 pixels at most, and larger
//! downscales of the planes above. RGBA fits upscales; a geometry that does
//! not fit keeps the gather (tested per format in `tests.rs`). The
//! output is bit-identical to the gather's (the same products and
//! truncation; tested against it in `rows` and, for each vector copy,
//! against [`scalar`] here).
//!
//! Written with `std::arch` rather than a portable-SIMD crate: the one
//! operation needed, a byte table lookup into 16-bit lanes followed by a
//! high-half multiply, is `pshufb` + `pmulhuw` and `tbl` + `umull`/`uzp2`,
//! and `std::simd` is not stable. The `unsafe` here is the vector loads and
//! stores (from slices whose length is checked) and the calls of the
//! `#[target_feature]` copies after the run-time CPU check.

#[cfg(target_arch = "aarch64")]
mod arm;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod x86;

use super::rows::mulhi;
use super::source::Stream;
use super::taps::Columns;

/// Output columns a block.
const LANES: usize = 8;

/// A shuffle index that selects zero (`pshufb`: high bit set; `tbl`: out of
/// range).
const ZERO: u8 = 0x80;

/// A 16-byte shuffle.
type Mask = [u8; 16];

/// The shuffles of one stream's geometry.
#[derive(Debug, Default)]
pub(super) struct Shuffles {
    /// How many loads a block takes: 0 (the plan does not fit: the caller
    /// gathers), 1 or 2 (lanes 0-3 from the first, 4-7 from the second).
    loads: usize,
    /// Per load: per block of 8 columns, where its 16 bytes start (as
    /// `Columns::offset`).
    base: [Vec<u32>; 2],
    /// Per load: per sample, then per block, the shuffle of the first
    /// texel's bytes (lanes of the other load select zero).
    first: [Vec<Mask>; 2],
    /// The same for the second texel.
    second: [Vec<Mask>; 2],
    /// Full blocks (the columns past them are done one by one).
    blocks: usize,
    /// The stream's samples, their spacing and the texel size in bytes.
    count: usize,
    spacing: usize,
    texel: usize,
}

/// Whether each `lanes` columns of `offsets` read within 16 bytes (`span`
/// bytes from each column's offset), offsets growing.
fn fits(offsets: &[u32], lanes: usize, span: usize) -> bool {
    offsets.chunks_exact(LANES).all(|block| {
        block.chunks(lanes).all(|b| {
            let last = b.iter().map(|&o| o as usize).max().unwrap_or(0);
            b.iter().all(|&o| o >= b[0]) && last + span - b[0] as usize <= 16
        })
    })
}

impl Shuffles {
    /// Plans the shuffles of `stream` at `columns`; `false` where even half
    /// a block's bytes do not fit 16 bytes (or the plane is one texel across).
    pub(super) fn plan(&mut self, stream: &Stream, columns: &Columns) -> bool {
        for v in self.base.iter_mut() {
            v.clear();
        }
        for v in self.first.iter_mut().chain(self.second.iter_mut()) {
            v.clear();
        }
        let (t, c, d) = (stream.texel, stream.count, stream.spacing);
        (self.texel, self.count, self.spacing) = (t, c, d);
        let span = t + (c - 1) * d + 1;
        let offsets = &columns.offset;
        self.blocks = offsets.len() / LANES;
        self.loads = if columns.single {
            0
        } else if fits(offsets, LANES, span) {
            1
        } else if fits(offsets, LANES / 2, span) {
            2
        } else {
            0
        };
        if self.loads == 0 {
            return false;
        }
        let per_load = LANES / self.loads;
        for b in offsets.chunks_exact(LANES) {
            for (l, half) in b.chunks(per_load).enumerate() {
                self.base[l].push(half[0]);
            }
        }
        for k in 0..c {
            for b in offsets.chunks_exact(LANES) {
                for (l, half) in b.chunks(per_load).enumerate() {
                    let mask = |texel: usize| {
                        let mut m = [ZERO; 16];
                        for (j, &o) in half.iter().enumerate() {
                            // In range: checked by `fits` above.
                            m[2 * (l * per_load + j) + 1] =
                                (o - half[0]) as u8 + (texel + k * d) as u8;
                        }
                        m
                    };
                    self.first[l].push(mask(0));
                    self.second[l].push(mask(t));
                }
            }
        }
        true
    }

    /// Whether [`Shuffles::resample`] applies.
    pub(super) fn ready(&self) -> bool {
        self.loads > 0
    }

    /// One row resampled across: `window` holds the row's bytes from
    /// `Columns::start` with at least 16 readable bytes past every block's
    /// base; sample `k` of column `x` into `out[k * n + x]`, `n` the columns.
    pub(super) fn resample(&self, window: &[u8], columns: &Columns, out: &mut [u16]) {
        let n = columns.offset.len();
        let out = &mut out[..n * self.count];
        let done = self.blocks * LANES;
        simd(self, window, columns, out, n);
        // The columns past the last full block.
        for k in 0..self.count {
            let row = &mut out[k * n..(k + 1) * n];
            scalar_columns(self, window, columns, k, done..n, row);
        }
    }
}

/// Columns `xs` of sample `k` one by one into `out` (the sample's row): the
/// gather's arithmetic, on the row's bytes.
fn scalar_columns(
    s: &Shuffles,
    window: &[u8],
    columns: &Columns,
    k: usize,
    xs: std::ops::Range<usize>,
    out: &mut [u16],
) {
    for x in xs {
        let o = columns.offset[x] as usize + k * s.spacing;
        let (a, b) = (window[o], window[o + s.texel]);
        let level = |v: u8| u16::from(v) << 8;
        out[x] = mulhi(level(a), columns.first[x]).wrapping_add(mulhi(level(b), columns.second[x]));
    }
}

/// The full blocks of every sample, one column at a time: where the CPU has
/// no vector copy, and the reference the copies are tested against.
#[cfg(any(test, not(target_arch = "aarch64")))]
fn scalar(s: &Shuffles, window: &[u8], columns: &Columns, out: &mut [u16], n: usize) {
    for k in 0..s.count {
        let xs = 0..s.blocks * LANES;
        scalar_columns(s, window, columns, k, xs, &mut out[k * n..(k + 1) * n]);
    }
}

/// The full blocks of every sample, with the widest vectors the CPU has.
fn simd(s: &Shuffles, window: &[u8], columns: &Columns, out: &mut [u16], n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            unsafe { x86::avx2(s, window, columns, out, n) };
        } else if is_x86_feature_detected!("ssse3") {
            // SAFETY: the CPU has SSSE3, checked just above.
            unsafe { x86::ssse3(s, window, columns, out, n) };
        } else {
            scalar(s, window, columns, out, n);
        }
    }
    // SAFETY: NEON is part of every aarch64 CPU the target runs on (its
    // baseline features).
    #[cfg(target_arch = "aarch64")]
    unsafe {
        arm::neon(s, window, columns, out, n)
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    scalar(s, window, columns, out, n);
}

/// Sample `k`'s full blocks: per load its bases and the shuffles of the two
/// texels, the columns' weights and the output.
struct Blocks<'a> {
    /// Loads a block (1 or 2).
    loads: usize,
    base: [&'a [u32]; 2],
    /// `[texel][load]`.
    masks: [[&'a [Mask]; 2]; 2],
    weights: [&'a [u16]; 2],
    out: &'a mut [u16],
}

/// Sample `k`'s [`Blocks`], out of the samples' output `out`.
fn blocks<'a>(s: &'a Shuffles, columns: &'a Columns, k: usize, out: &'a mut [u16]) -> Blocks<'a> {
    let (b, cols) = (s.blocks, s.blocks * LANES);
    // A load's masks of sample k (empty for a load the plan does not use).
    let of = |v: &'a Vec<Mask>| v.get(k * b..(k + 1) * b).unwrap_or(&[]);
    let base = |v: &'a Vec<u32>| v.get(..b).unwrap_or(&[]);
    Blocks {
        loads: s.loads,
        base: [base(&s.base[0]), base(&s.base[1])],
        masks: [
            [of(&s.first[0]), of(&s.first[1])],
            [of(&s.second[0]), of(&s.second[1])],
        ],
        weights: [&columns.first[..cols], &columns.second[..cols]],
        out: &mut out[..cols],
    }
}

/// The 16 bytes of `window` at `base` (the caller's window has them past
/// every base: `Shuffles::resample`).
#[inline(always)]
fn bytes16(window: &[u8], base: u32) -> &[u8; 16] {
    let b = base as usize;
    let bytes = window.get(b..b + 16).and_then(|w| w.try_into().ok());
    debug_assert!(bytes.is_some(), "16 bytes at {b} of {}", window.len());
    bytes.unwrap_or(&[0; 16])
}
