//! The byte shuffles on aarch64: `tbl` (a block of 8 columns a register)
//! and `umull`/`umull2` + `uzp2` for the blend's high-half multiplies.

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

/// Block `i` of `b`: its bytes looked up into each texel's levels (`TWO`:
/// two loads, or'ed), blended with its weights, stored.
#[inline]
#[target_feature(enable = "neon")]
fn block<const TWO: bool>(window: &[u8], b: &mut Blocks<'_>, i: usize) {
    let v0 = load(bytes16(window, b.base[0][i]));
    let v1 = if TWO {
        load(bytes16(window, b.base[1][i]))
    } else {
        v0
    };
    let levels = |t: usize| {
        let p = vqtbl1q_u8(v0, load(&b.masks[t][0][i]));
        let p = if TWO {
            vorrq_u8(p, vqtbl1q_u8(v1, load(&b.masks[t][1][i])))
        } else {
            p
        };
        vreinterpretq_u16_u8(p)
    };
    let cols = i * LANES..(i + 1) * LANES;
    let r = vaddq_u16(
        mulhi(levels(0), load8(&b.weights[0][cols.clone()])),
        mulhi(levels(1), load8(&b.weights[1][cols.clone()])),
    );
    let out = &mut b.out[cols];
    assert!(out.len() >= 8);
    // SAFETY: 8 writable lanes (asserted).
    unsafe { vst1q_u16(out.as_mut_ptr(), r) };
}

/// Every full block.
#[target_feature(enable = "neon")]
pub(super) fn neon(s: &Shuffles, window: &[u8], columns: &Columns, out: &mut [u16], n: usize) {
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
