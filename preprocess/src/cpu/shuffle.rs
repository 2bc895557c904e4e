//! The resampling across as byte shuffles, where a row allows it: when the
//! bytes that each block of 8 output columns reads (both texels of every
//! sample) lie within 16 bytes of the row, one 16-byte load and one shuffle
//! per texel put each column's byte in the high half of its 16-bit lane —
//! the sample in 1/256 steps, as `rows` keeps it — and the blend follows in
//! the same registers. This replaces the scalar gather of `rows::pass` (a
//! load and a store a column and half) and its blends: SSSE3 `pshufb` (AVX2:
//! two blocks a register) on x86-64, `tbl` on aarch64.
//!
//! The shuffles are worked out once per geometry ([`Shuffles::plan`]). They
//! fit 1-byte planes (NV12's and NV16's luma, GREY) downscaled up to about
//! 2× and upscaled, and 2-byte chroma pairs (NV12, NV16) at up to about 1.7×
//! of their plane (a 4:2:0 chroma plane is usually upscaled); wider texels
//! (YUYV, packed RGB) fit only upscales, and a geometry that does not fit
//! keeps the gather. The output is bit-identical to the gather's (the same
//! products and truncation; tested against it in `rows` and, for each
//! vector copy, against [`scalar`] here).
//!
//! Written with `std::arch` rather than a portable-SIMD crate: the one
//! operation needed, a byte table lookup into 16-bit lanes followed by a
//! high-half multiply, is `pshufb` + `pmulhuw` and `tbl` + `umull`/`uzp2`,
//! and `std::simd` is not stable. The `unsafe` here is the vector loads and
//! stores (from slices whose length is checked) and the calls of the
//! `#[target_feature]` copies after the run-time CPU check.

use super::rows::mulhi;
use super::source::Stream;
use super::taps::Columns;

/// Output columns a block.
const LANES: usize = 8;

/// A shuffle index that selects zero (`pshufb`: high bit set; `tbl`: out of
/// range).
const ZERO: u8 = 0x80;

/// The shuffles of one stream's geometry.
#[derive(Debug, Default)]
pub(super) struct Shuffles {
    /// The plan fits (else the caller gathers).
    ready: bool,
    /// Per block of 8 columns: where its 16 bytes start (as `Columns::offset`).
    base: Vec<u32>,
    /// Per sample, then per block: the shuffle of the first texel's bytes.
    first: Vec<[u8; 16]>,
    /// The same for the second texel.
    second: Vec<[u8; 16]>,
    /// Full blocks (the columns past them are done one by one).
    blocks: usize,
    /// The stream's samples, their spacing and the texel size in bytes.
    count: usize,
    spacing: usize,
    texel: usize,
}

impl Shuffles {
    /// Plans the shuffles of `stream` at `columns`; `false` where a block's
    /// bytes do not fit 16 bytes (or the plane is one texel across).
    pub(super) fn plan(&mut self, stream: &Stream, columns: &Columns) -> bool {
        self.base.clear();
        self.first.clear();
        self.second.clear();
        let (t, c, d) = (stream.texel, stream.count, stream.spacing);
        (self.texel, self.count, self.spacing) = (t, c, d);
        let span = t + (c - 1) * d + 1;
        let offsets = &columns.offset;
        self.blocks = offsets.len() / LANES;
        let fits = offsets.chunks_exact(LANES).all(|b| {
            let last = b.iter().map(|&o| o as usize).max().unwrap_or(0);
            b.iter().all(|&o| o >= b[0]) && last + span - b[0] as usize <= 16
        });
        self.ready = fits && !columns.single;
        if !self.ready {
            return false;
        }
        for b in offsets.chunks_exact(LANES) {
            self.base.push(b[0]);
        }
        for k in 0..c {
            for b in offsets.chunks_exact(LANES) {
                let mask = |texel: usize| {
                    let mut m = [ZERO; 16];
                    for (j, &o) in b.iter().enumerate() {
                        // In range: checked by `fits` above.
                        m[2 * j + 1] = (o - b[0]) as u8 + (texel + k * d) as u8;
                    }
                    m
                };
                self.first.push(mask(0));
                self.second.push(mask(t));
            }
        }
        true
    }

    /// Whether [`Shuffles::resample`] applies.
    pub(super) fn ready(&self) -> bool {
        self.ready
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
            scalar_columns(
                self,
                window,
                columns,
                k,
                done..n,
                &mut out[k * n..(k + 1) * n],
            );
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

/// Sample `k`'s full blocks: per block its base, the shuffles of its two
/// texels, the columns' weights and the output.
struct Blocks<'a> {
    base: &'a [u32],
    masks: [&'a [[u8; 16]]; 2],
    weights: [&'a [u16]; 2],
    out: &'a mut [u16],
}

/// Sample `k`'s [`Blocks`], out of the samples' output `out`.
fn blocks<'a>(s: &'a Shuffles, columns: &'a Columns, k: usize, out: &'a mut [u16]) -> Blocks<'a> {
    let (b, cols) = (s.blocks, s.blocks * LANES);
    Blocks {
        base: &s.base[..b],
        masks: [&s.first[k * b..(k + 1) * b], &s.second[k * b..(k + 1) * b]],
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

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{blocks, bytes16, Blocks, Columns, Shuffles, LANES};
    use std::arch::x86_64::*;

    /// 16 bytes as a vector.
    #[inline(always)]
    fn load(b: &[u8; 16]) -> __m128i {
        // SAFETY: 16 readable bytes; `loadu` has no alignment requirement.
        unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
    }

    /// 8 lanes of `v` as a vector.
    #[inline(always)]
    fn load8(v: &[u16]) -> __m128i {
        assert!(v.len() >= 8);
        // SAFETY: 16 readable bytes (asserted); no alignment requirement.
        unsafe { _mm_loadu_si128(v.as_ptr().cast()) }
    }

    /// One block: shuffle, blend, store.
    #[target_feature(enable = "ssse3")]
    fn block(bytes: &[u8; 16], m: [&[u8; 16]; 2], w: [&[u16]; 2], out: &mut [u16]) {
        let v = load(bytes);
        let p = _mm_shuffle_epi8(v, load(m[0]));
        let q = _mm_shuffle_epi8(v, load(m[1]));
        let r = _mm_add_epi16(
            _mm_mulhi_epu16(p, load8(w[0])),
            _mm_mulhi_epu16(q, load8(w[1])),
        );
        assert!(out.len() >= 8);
        // SAFETY: 16 writable bytes (asserted); no alignment requirement.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), r) };
    }

    /// Every full block, one at a time.
    #[target_feature(enable = "ssse3")]
    pub(super) fn ssse3(s: &Shuffles, window: &[u8], columns: &Columns, out: &mut [u16], n: usize) {
        for k in 0..s.count {
            let Blocks {
                base,
                masks: [m1, m2],
                weights: [w1, w2],
                out: o,
            } = blocks(s, columns, k, &mut out[k * n..]);
            let w = w1.chunks_exact(LANES).zip(w2.chunks_exact(LANES));
            for ((((&b, m1), m2), (w1, w2)), o) in base
                .iter()
                .zip(m1)
                .zip(m2)
                .zip(w)
                .zip(o.chunks_exact_mut(LANES))
            {
                block(bytes16(window, b), [m1, m2], [w1, w2], o);
            }
        }
    }

    /// Every full block, two at a time (`vpshufb` shuffles each 128-bit
    /// half on its own, so two blocks' bytes go one to a half).
    #[target_feature(enable = "avx2")]
    pub(super) fn avx2(s: &Shuffles, window: &[u8], columns: &Columns, out: &mut [u16], n: usize) {
        for k in 0..s.count {
            let Blocks {
                base,
                masks: [m1, m2],
                weights: [w1, w2],
                out: o,
            } = blocks(s, columns, k, &mut out[k * n..]);
            let w = w1.chunks_exact(2 * LANES).zip(w2.chunks_exact(2 * LANES));
            let masks = m1.chunks_exact(2).zip(m2.chunks_exact(2));
            for (((b, (m1, m2)), (w1, w2)), o) in base
                .chunks_exact(2)
                .zip(masks)
                .zip(w)
                .zip(o.chunks_exact_mut(2 * LANES))
            {
                let v = _mm256_set_m128i(load(bytes16(window, b[1])), load(bytes16(window, b[0])));
                let p = _mm256_shuffle_epi8(v, load32(m1));
                let q = _mm256_shuffle_epi8(v, load32(m2));
                let r = _mm256_add_epi16(
                    _mm256_mulhi_epu16(p, load16(w1)),
                    _mm256_mulhi_epu16(q, load16(w2)),
                );
                assert!(o.len() >= 16);
                // SAFETY: 32 writable bytes (asserted); no alignment requirement.
                unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), r) };
            }
            if base.len() % 2 == 1 {
                let i = base.len() - 1;
                let w = [&w1[i * LANES..], &w2[i * LANES..]];
                block(
                    bytes16(window, base[i]),
                    [&m1[i], &m2[i]],
                    w,
                    &mut o[i * LANES..],
                );
            }
        }
    }

    /// Two blocks' shuffles as one vector.
    #[inline(always)]
    fn load32(m: &[[u8; 16]]) -> __m256i {
        assert!(m.len() >= 2);
        // SAFETY: 32 readable bytes (asserted; the arrays are contiguous);
        // no alignment requirement.
        unsafe { _mm256_loadu_si256(m.as_ptr().cast()) }
    }

    /// 16 lanes of `v` as a vector.
    #[inline(always)]
    fn load16(v: &[u16]) -> __m256i {
        assert!(v.len() >= 16);
        // SAFETY: 32 readable bytes (asserted); no alignment requirement.
        unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::{blocks, bytes16, Blocks, Columns, Shuffles, LANES};
    use std::arch::aarch64::*;

    /// 16 bytes as a vector.
    #[inline(always)]
    fn load(b: &[u8; 16]) -> uint8x16_t {
        // SAFETY: 16 readable bytes; `ld1` has no alignment requirement.
        unsafe { vld1q_u8(b.as_ptr()) }
    }

    /// 8 lanes of `v` as a vector.
    #[inline(always)]
    fn load8(v: &[u16]) -> uint16x8_t {
        assert!(v.len() >= 8);
        // SAFETY: 8 readable lanes (asserted).
        unsafe { vld1q_u16(v.as_ptr()) }
    }

    /// The high halves of the lanes' 32-bit products (`rows::mulhi`).
    #[inline]
    #[target_feature(enable = "neon")]
    fn mulhi(a: uint16x8_t, b: uint16x8_t) -> uint16x8_t {
        let lo = vmull_u16(vget_low_u16(a), vget_low_u16(b));
        let hi = vmull_high_u16(a, b);
        vuzp2q_u16(vreinterpretq_u16_u32(lo), vreinterpretq_u16_u32(hi))
    }

    /// Every full block.
    #[target_feature(enable = "neon")]
    pub(super) fn neon(s: &Shuffles, window: &[u8], columns: &Columns, out: &mut [u16], n: usize) {
        for k in 0..s.count {
            let Blocks {
                base,
                masks: [m1, m2],
                weights: [w1, w2],
                out: o,
            } = blocks(s, columns, k, &mut out[k * n..]);
            let w = w1.chunks_exact(LANES).zip(w2.chunks_exact(LANES));
            for ((((&b, m1), m2), (w1, w2)), o) in base
                .iter()
                .zip(m1)
                .zip(m2)
                .zip(w)
                .zip(o.chunks_exact_mut(LANES))
            {
                let v = load(bytes16(window, b));
                let p = vreinterpretq_u16_u8(vqtbl1q_u8(v, load(m1)));
                let q = vreinterpretq_u16_u8(vqtbl1q_u8(v, load(m2)));
                let r = vaddq_u16(mulhi(p, load8(w1)), mulhi(q, load8(w2)));
                assert!(o.len() >= 8);
                // SAFETY: 8 writable lanes (asserted).
                unsafe { vst1q_u16(o.as_mut_ptr(), r) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stream kind of `source::layout`, at sizes that fit and that
    /// do not, against the scalar reference, bit for bit.
    #[test]
    fn the_vector_copies_match_the_scalar_columns() {
        let kinds = [
            (1, 1, 1),
            (2, 1, 1),
            (2, 2, 1),
            (4, 2, 2),
            (3, 3, 1),
            (4, 3, 1),
        ];
        let mut planned = 0;
        for (t, c, d) in kinds {
            let stream = Stream {
                plane: 0,
                texel: t,
                subsampling: (1, 1),
                first: 0,
                count: c,
                spacing: d,
            };
            for (plane, outputs) in [
                (720, 640),
                (360, 640),
                (1280, 640),
                (700, 203),
                (40, 41),
                (1280, 192),
            ] {
                let mut columns = Columns::default();
                columns.fill((3.0, plane as f64 - 5.0), outputs, (plane, plane), (t, 0));
                let mut s = Shuffles::default();
                if !s.plan(&stream, &columns) {
                    continue;
                }
                planned += 1;
                let window: Vec<u8> = (0..plane * t + 64)
                    .map(|i| (i * 7919 % 251) as u8)
                    .collect();
                let n = outputs;
                let mut want = vec![0u16; n * c];
                let mut got = vec![1u16; n * c];
                scalar(&s, &window, &columns, &mut want, n);
                for k in 0..c {
                    scalar_columns(
                        &s,
                        &window,
                        &columns,
                        k,
                        s.blocks * LANES..n,
                        &mut want[k * n..(k + 1) * n],
                    );
                }
                s.resample(&window, &columns, &mut got);
                assert_eq!(
                    got, want,
                    "texel {t}, {c} samples {d} apart, {plane} → {outputs}"
                );
                // The 128-bit copy too, where the CPU would take AVX2's.
                #[cfg(target_arch = "x86_64")]
                if is_x86_feature_detected!("ssse3") {
                    let mut got = want.clone();
                    for k in 0..c {
                        got[k * n..k * n + s.blocks * LANES].fill(1);
                    }
                    // SAFETY: the CPU has SSSE3, checked just above.
                    unsafe { x86::ssse3(&s, &window, &columns, &mut got, n) };
                    assert_eq!(got, want, "SSSE3: texel {t}, {c} samples {d} apart");
                }
            }
        }
        assert!(planned >= 8, "only {planned} geometries fit");
    }
}
