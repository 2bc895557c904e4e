//! Where each output sample of a plane reads its plane: the two texels and
//! the weight of bilinear sampling with half-pixel centres, per output column
//! and per output row, worked out once per geometry.
//!
//! The rule is the GPU's (`shaders.rs`, `bilinear`): a point `s` in luma
//! pixels is sampled in a plane `n` texels across an image `len` pixels
//! across at `(s + 0.5) * n / len - 0.5` (chroma is centre-sited), between
//! texels `floor` and `floor + 1`, each clamped to the plane.

/// The first texel, clamped so that the second (`first + 1`) is in the plane
/// too, and the weight of the second, clamped to `0..=1` (so a point past an
/// edge reads the edge texel alone). A one-texel plane reads texel 0.
fn tap(p: f64, n: usize) -> (usize, f64) {
    if n < 2 {
        return (0, 0.0);
    }
    let first = p.floor().clamp(0.0, (n - 2) as f64);
    (first as usize, (p - first).clamp(0.0, 1.0))
}

/// The sample points, in plane texels, of `outputs` outputs spread over
/// `start..start + len` luma pixels of an image `image` pixels across, in a
/// plane `plane` texels across.
fn points(
    (start, len): (f64, f64),
    outputs: usize,
    (image, plane): (usize, usize),
) -> impl Iterator<Item = f64> {
    let step = len / outputs as f64;
    let to_plane = plane as f64 / image as f64;
    (0..outputs).map(move |o| {
        let s = start + (o as f64 + 0.5) * step - 0.5;
        (s + 0.5) * to_plane - 0.5
    })
}

/// Weight `w` (0..=1) in 2^-[`FIXED_BITS`]: the fixed-point path's weights.
pub(super) const FIXED_BITS: u32 = 14;

fn fixed(w: f64) -> i16 {
    // 0..=16384 fits an i16.
    (w * f64::from(1u32 << FIXED_BITS)).round() as i16
}

/// Per output column: the byte offset in a row of the first texel read, and
/// the weight of the texel `step` bytes further on.
#[derive(Debug, Default)]
pub(super) struct Columns {
    pub(super) offset: Vec<usize>,
    pub(super) weight: Vec<f32>,
    /// The same weights in fixed point.
    pub(super) fixed: Vec<i16>,
    /// Bytes from one texel to the next (0 in a one-texel plane).
    pub(super) step: usize,
}

impl Columns {
    /// Columns of `outputs` outputs over `span` (start, length) of an
    /// `image`-pixel-wide image, read in a plane `plane` texels of `texel`
    /// bytes across.
    pub(super) fn fill(
        &mut self,
        span: (f64, f64),
        outputs: usize,
        (image, plane): (usize, usize),
        texel: usize,
    ) {
        self.offset.clear();
        self.weight.clear();
        self.fixed.clear();
        self.step = if plane < 2 { 0 } else { texel };
        for p in points(span, outputs, (image, plane)) {
            let (first, w) = tap(p, plane);
            self.offset.push(first * texel);
            self.weight.push(w as f32);
            self.fixed.push(fixed(w));
        }
    }
}

/// One output row's two plane rows and the weight of the second.
#[derive(Debug, Clone, Copy)]
pub(super) struct RowTap {
    pub(super) first: usize,
    pub(super) second: usize,
    pub(super) weight: f32,
    pub(super) fixed: i16,
}

/// Per output row: the two plane rows it blends.
#[derive(Debug, Default)]
pub(super) struct Rows {
    pub(super) taps: Vec<RowTap>,
}

impl Rows {
    /// As [`Columns::fill`], down a plane `plane` rows high.
    pub(super) fn fill(&mut self, span: (f64, f64), outputs: usize, (image, plane): (usize, usize)) {
        self.taps.clear();
        for p in points(span, outputs, (image, plane)) {
            let (first, w) = tap(p, plane);
            self.taps.push(RowTap {
                first,
                second: (first + 1).min(plane - 1),
                weight: w as f32,
                fixed: fixed(w),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_clamp_and_chroma_is_centre_sited() {
        let mut c = Columns::default();
        // 4 luma pixels onto 8 outputs, in a 2-texel chroma plane of 2 bytes.
        c.fill((0.0, 4.0), 8, (4, 2), 2);
        // Output 0 is at luma -0.25, chroma -0.375: texel 0 alone.
        assert_eq!((c.offset[0], c.weight[0]), (0, 0.0));
        // Output 4 is at luma 1.75, chroma 0.625.
        assert_eq!((c.offset[4], c.weight[4]), (0, 0.625));
        // The last, at chroma 1.375: past the last texel, which it reads alone.
        assert_eq!((c.offset[7], c.weight[7], c.fixed[7]), (0, 1.0, 1 << 14));
        assert_eq!(c.step, 2);
        let mut r = Rows::default();
        r.fill((0.0, 1.0), 3, (1, 1));
        assert!(r.taps.iter().all(|t| (t.first, t.second, t.weight) == (0, 0, 0.0)));
    }
}
