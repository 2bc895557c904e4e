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
pub(super) fn tap(p: f64, n: usize) -> (usize, f64) {
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
) -> impl Iterator<Item = f64> + Clone {
    let step = len / outputs as f64;
    let to_plane = plane as f64 / image as f64;
    (0..outputs).map(move |o| {
        let s = start + (o as f64 + 0.5) * step - 0.5;
        (s + 0.5) * to_plane - 0.5
    })
}

/// The weights `(1 - w, w)` of a bilinear tap in 2^-16, each at most
/// `u16::MAX` (so a weight of 1 is 1 - 2^-16): the resampling multiplies
/// keep the high half of a 16-bit product (see `rows`).
fn weights(w: f64) -> Weights {
    let second = (w * 65536.0).round().min(65535.0) as u16;
    let first = (65536 - u32::from(second)).min(65535) as u16;
    Weights { first, second }
}

/// The weights of the first and the second texel of a tap, in 2^-16.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct Weights {
    pub(super) first: u16,
    pub(super) second: u16,
}

/// Per output column: the byte offset of the first sample read (in the
/// first texel), from `start` in a row, and the weights of the two texels.
#[derive(Debug, Default)]
pub(super) struct Columns {
    /// The first byte any column reads.
    pub(super) start: usize,
    /// The largest offset.
    pub(super) last: usize,
    pub(super) offset: Vec<u32>,
    /// The weights of the first texel.
    pub(super) first: Vec<u16>,
    /// The weights of the second texel.
    pub(super) second: Vec<u16>,
    /// A one-texel plane: the next texel is the first again.
    pub(super) single: bool,
}

impl Columns {
    /// Columns of `outputs` outputs over `span` (start, length) of an
    /// `image`-pixel-wide image, read in a plane `plane` texels of `texel`
    /// bytes across from byte `first` of a texel.
    pub(super) fn fill(
        &mut self,
        span: (f64, f64),
        outputs: usize,
        (image, plane): (usize, usize),
        (texel, first): (usize, usize),
    ) {
        self.offset.clear();
        self.first.clear();
        self.second.clear();
        self.single = plane < 2;
        let taps = points(span, outputs, (image, plane)).map(|p| tap(p, plane));
        // Texels only grow along a row.
        self.start = taps.clone().next().map_or(0, |(t, _)| t * texel + first);
        for (t, w) in taps {
            let w = weights(w);
            // Offsets within one plane row, which `convert` keeps under
            // 4 GiB (`SourceTooWide`).
            let offset = t * texel + first - self.start;
            self.offset.push(u32::try_from(offset).unwrap_or(u32::MAX));
            self.first.push(w.first);
            self.second.push(w.second);
        }
        self.last = self.offset.last().map_or(0, |&o| o as usize);
    }
}

/// One output row's two plane rows and their weights, each repeated for
/// the 8 lanes of a vector (see `rows::blend_rows`).
#[derive(Debug, Clone, Copy)]
pub(super) struct RowTap {
    pub(super) first: usize,
    pub(super) second: usize,
    pub(super) lanes: [[u16; 8]; 2],
}

/// Per output row: the two plane rows it blends.
#[derive(Debug, Default)]
pub(super) struct Rows {
    pub(super) taps: Vec<RowTap>,
}

impl Rows {
    /// As [`Columns::fill`], down a plane `plane` rows high.
    pub(super) fn fill(
        &mut self,
        span: (f64, f64),
        outputs: usize,
        (image, plane): (usize, usize),
    ) {
        self.taps.clear();
        for p in points(span, outputs, (image, plane)) {
            let (first, w) = tap(p, plane);
            self.taps.push(RowTap {
                first,
                second: (first + 1).min(plane - 1),
                lanes: {
                    let w = weights(w);
                    [[w.first; 8], [w.second; 8]]
                },
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
        c.fill((0.0, 4.0), 8, (4, 2), (2, 0));
        // Output 0 is at luma -0.25, chroma -0.375: texel 0 alone.
        assert_eq!((c.start, c.last), (0, 0));
        assert_eq!((c.offset[0], c.first[0], c.second[0]), (0, 65535, 0));
        // Output 4 is at luma 1.75, chroma 0.625.
        assert_eq!((c.offset[4], c.first[4], c.second[4]), (0, 24576, 40960));
        // The last, at chroma 1.375: past the last texel, which it reads alone.
        assert_eq!((c.offset[7], c.first[7], c.second[7]), (0, 1, 65535));
        assert!(!c.single);
        let mut r = Rows::default();
        r.fill((0.0, 1.0), 3, (1, 1));
        assert!(r
            .taps
            .iter()
            .all(|t| (t.first, t.second, t.lanes[1][0]) == (0, 0, 0)));
    }
}
