//! The byte shuffles on x86-64: SSSE3 (`pshufb`, a block of 8 columns a
//! register) and AVX2 (two blocks a register, one to each 128-bit half:
//! `vpshufb` shuffles the halves on their own).

use super::{blocks, bytes16, Blocks, Columns, Mask, Shuffles, LANES};
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

/// Two blocks' shuffles as one vector.
#[inline(always)]
fn load32(m: &[Mask]) -> __m256i {
    assert!(m.len() >= 2);
    // SAFETY: 32 readable bytes (asserted; the arrays are contiguous); no
    // alignment requirement.
    unsafe { _mm256_loadu_si256(m.as_ptr().cast()) }
}

/// 16 lanes of `v` as a vector.
#[inline(always)]
fn load16(v: &[u16]) -> __m256i {
    assert!(v.len() >= 16);
    // SAFETY: 32 readable bytes (asserted); no alignment requirement.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// Block `i` of `b`: its bytes shuffled into each texel's levels (`TWO`:
/// two loads, or'ed), blended with its weights, stored.
#[inline]
#[target_feature(enable = "ssse3")]
fn block<const TWO: bool>(window: &[u8], b: &mut Blocks<'_>, i: usize) {
    let v0 = load(bytes16(window, b.base[0][i]));
    let v1 = if TWO {
        load(bytes16(window, b.base[1][i]))
    } else {
        v0
    };
    let levels = |t: usize| {
        let p = _mm_shuffle_epi8(v0, load(&b.masks[t][0][i]));
        if TWO {
            _mm_or_si128(p, _mm_shuffle_epi8(v1, load(&b.masks[t][1][i])))
        } else {
            p
        }
    };
    let cols = i * LANES..(i + 1) * LANES;
    let r = _mm_add_epi16(
        _mm_mulhi_epu16(levels(0), load8(&b.weights[0][cols.clone()])),
        _mm_mulhi_epu16(levels(1), load8(&b.weights[1][cols.clone()])),
    );
    let out = &mut b.out[cols];
    assert!(out.len() >= 8);
    // SAFETY: 16 writable bytes (asserted); no alignment requirement.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), r) };
}

/// Blocks `i` and `i + 1` of `b` in one 256-bit register each way.
#[inline]
#[target_feature(enable = "avx2")]
fn pair<const TWO: bool>(window: &[u8], b: &mut Blocks<'_>, i: usize) {
    let both = |l: usize| {
        let base = b.base[l];
        _mm256_set_m128i(
            load(bytes16(window, base[i + 1])),
            load(bytes16(window, base[i])),
        )
    };
    let v0 = both(0);
    let v1 = if TWO { both(1) } else { v0 };
    let levels = |t: usize| {
        let p = _mm256_shuffle_epi8(v0, load32(&b.masks[t][0][i..i + 2]));
        if TWO {
            _mm256_or_si256(p, _mm256_shuffle_epi8(v1, load32(&b.masks[t][1][i..i + 2])))
        } else {
            p
        }
    };
    let cols = i * LANES..(i + 2) * LANES;
    let r = _mm256_add_epi16(
        _mm256_mulhi_epu16(levels(0), load16(&b.weights[0][cols.clone()])),
        _mm256_mulhi_epu16(levels(1), load16(&b.weights[1][cols.clone()])),
    );
    let out = &mut b.out[cols];
    assert!(out.len() >= 16);
    // SAFETY: 32 writable bytes (asserted); no alignment requirement.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), r) };
}

/// Every full block, one at a time.
#[target_feature(enable = "ssse3")]
pub(super) fn ssse3(s: &Shuffles, window: &[u8], columns: &Columns, out: &mut [u16], n: usize) {
    for k in 0..s.count {
        let mut b = blocks(s, columns, k, &mut out[k * n..]);
        for i in 0..b.base[0].len() {
            if b.loads == 2 {
                block::<true>(window, &mut b, i);
            } else {
                block::<false>(window, &mut b, i);
            }
        }
    }
}

/// Every full block, two at a time.
#[target_feature(enable = "avx2")]
pub(super) fn avx2(s: &Shuffles, window: &[u8], columns: &Columns, out: &mut [u16], n: usize) {
    for k in 0..s.count {
        let mut b = blocks(s, columns, k, &mut out[k * n..]);
        let count = b.base[0].len();
        let two = b.loads == 2;
        for i in (0..count - count % 2).step_by(2) {
            if two {
                pair::<true>(window, &mut b, i);
            } else {
                pair::<false>(window, &mut b, i);
            }
        }
        if count % 2 == 1 {
            if two {
                block::<true>(window, &mut b, count - 1);
            } else {
                block::<false>(window, &mut b, count - 1);
            }
        }
    }
}
