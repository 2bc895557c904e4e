//! Bilinear resampling of one stream (a plane's samples), separable: each
//! plane row that output rows read is resampled across once, at the output
//! columns, into one of two kept rows; an output row is then the blend of two
//! such rows, done by the fused pass. Consecutive output rows share plane
//! rows (a 720 → 640 downscale reads each row once or twice, a 4:2:0 chroma
//! upscale reads each twice), so no plane row is resampled twice.
//!
//! Across a row: where each 8 output columns read within 16 bytes of the
//! row, byte shuffles and the blend in one vector pass (`shuffle`).
//! Elsewhere two passes: a gather of each output column's bytes as one word,
//! stored as 16-bit halves, a row of each (one load and a store per half a
//! column: a scalar loop), then the blends, which vectorize: each sample is
//! a byte of one half, the same in every column.
//!
//! Resampled samples are `u16` in 1/256 steps (0..=65280), for both the
//! float and the fixed-point path: a blend is `mulhi(a, 1 - w) + mulhi(b, w)`
//! with weights in 2^-16, where `mulhi` keeps the high half of a 16-bit
//! product, one instruction for 8 lanes (`pmulhuw` on x86-64's baseline
//! SSE2, `umull`+`uzp2` on NEON). Each blend truncates twice: under 2/256 of
//! a step.

use super::area::AreaRows;
use super::shuffle::Shuffles;
use super::source::Stream;
use super::taps::{Columns, RowTap, Rows, Weights};

/// `(a * b) >> 16`. LLVM makes it `pmulhuw` when the product's high half
/// is used as it is: a shift of `a` before (`(a << 1) * b >> 16`) or of the
/// result after folds into the product and widens the loop to 32 bits
/// (emulated multiplies on SSE2), so the scales are picked to need none.
/// The signed form (`pmulhw`) was not formed at all in these loops (LLVM 22).
#[inline(always)]
pub(super) fn mulhi(a: u16, b: u16) -> u16 {
    ((u32::from(a) * u32::from(b)) >> 16) as u16
}

/// `p * (1 - w) + q * w` with `w` the weights, in the scale of `p` and `q`.
#[inline(always)]
fn blend(p: u16, q: u16, w: Weights) -> u16 {
    mulhi(p, w.first).wrapping_add(mulhi(q, w.second))
}

/// The vertical blend of two resampled rows with an output row's weights
/// (`lanes`: each weight once a lane) into `out`.
///
/// Eight columns at a time with the weights read from memory as a vector:
/// written as one loop over the row with two known scalar weights, LLVM did
/// the sums in 32-bit lanes (or, indexing the lanes with `x % 8`, did not
/// vectorize at all).
#[multiversion::multiversion(targets("x86_64+avx2"))]
pub(super) fn blend_rows(p: &[u16], q: &[u16], lanes: &[[u16; 8]; 2], out: &mut [u16]) {
    let n = out.len();
    let (p, q) = (&p[..n], &q[..n]);
    let [first, second] = lanes;
    let mut chunks = out.chunks_exact_mut(8);
    for ((o, p), q) in (&mut chunks).zip(p.chunks_exact(8)).zip(q.chunks_exact(8)) {
        for l in 0..8 {
            o[l] = mulhi(p[l], first[l]).wrapping_add(mulhi(q[l], second[l]));
        }
    }
    let done = n - chunks.into_remainder().len();
    for x in done..n {
        out[x] = mulhi(p[x], first[0]).wrapping_add(mulhi(q[x], second[0]));
    }
}

/// One stream's taps and its two kept rows.
#[derive(Debug, Default)]
pub(super) struct StreamRows {
    pub(super) columns: Columns,
    pub(super) rows: Rows,
    /// Area resampling's taps and rows, when the input asks for it (the
    /// bilinear taps above are then unused).
    pub(super) area: Option<AreaRows>,
    /// The resampling across as byte shuffles, where the geometry allows.
    shuffles: Shuffles,
    stream: Option<Stream>,
    /// Output columns.
    width: usize,
    /// Each output column's bytes, gathered from a plane row.
    gathered: Gathered,
    /// Two resampled plane rows: sample `k` of column `x` at `k * width + x`.
    kept: [Vec<u16>; 2],
    /// The plane row each kept row holds (`usize::MAX`: none).
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

/// Output row `r`'s two resampled rows of a stream and their weights:
/// sample `k` of column `x` at `k * width + x` in each.
pub(super) type RowPair<'a> = (&'a [u16], &'a [u16], &'a [[u16; 8]; 2]);

impl StreamRows {
    /// Prepares for `width` output columns of `stream`.
    pub(super) fn prepare(&mut self, stream: &Stream, width: usize) {
        debug_assert!(span(stream) <= 8, "a column's bytes fit a u64");
        self.stream = Some(*stream);
        self.width = width;
        self.shuffles.plan(stream, &self.columns);
        self.forget();
    }

    /// Forgets the kept rows (a new frame).
    pub(super) fn forget(&mut self) {
        self.held = [usize::MAX; 2];
    }

    /// Output row `r`'s two resampled rows, resampling the plane rows it
    /// reads that are not kept yet.
    pub(super) fn row(&mut self, plane: PlaneBytes<'_>, r: usize) -> RowPair<'_> {
        let tap: RowTap = self.rows.taps[r];
        let Some(stream) = self.stream else {
            return (&[], &[], &self.rows.taps[r].lanes);
        };
        let kept = &mut self.kept;
        let misplaced = self.held[1] == tap.first || self.held[0] == tap.second;
        if self.held[0] != tap.first && misplaced {
            kept.swap(0, 1);
            self.held.swap(0, 1);
        }
        for (slot, want) in [(0, tap.first), (1, tap.second)] {
            if self.held[slot] != want && !(slot == 1 && want == tap.first) {
                let out = &mut kept[slot];
                out.resize(self.width * stream.count, 0);
                let row = plane.row(want);
                let (columns, g) = (&self.columns, &mut self.gathered);
                if !(self.shuffles.ready() && shuffled(&self.shuffles, row, columns, g, out)) {
                    resample(&stream, row, columns, g, out);
                }
                self.held[slot] = want;
            }
        }
        let second = usize::from(tap.second != tap.first);
        (&kept[0], &kept[second], &self.rows.taps[r].lanes)
    }
}

/// The bytes an output column reads: from its first sample in one texel to
/// its last sample in the next.
fn span(s: &Stream) -> usize {
    s.texel + (s.count - 1) * s.spacing + 1
}

/// The bytes of a row the columns read, copied to the start of
/// [`Gathered::window`] when they fit: offsets into it masked to 16 bits
/// are then in bounds, which LLVM sees, and the gather loop has no bounds
/// checks (4 instructions a column instead of 11).
const WINDOW: usize = 1 << 16;

/// Each output column's bytes ([`span`] of them), gathered as one word and
/// stored as its 16-bit halves, one row of halves each (`halves[h][x]` holds
/// bytes `2h` and `2h + 1` of column `x`): the blends then read each sample
/// from a contiguous row with one shift or mask (splitting whole words in
/// the vector loop took three shuffles for four columns on SSE2).
#[derive(Debug, Default)]
struct Gathered {
    halves: [Vec<u16>; 4],
    /// [`WINDOW`] bytes and 16 more (a word or 16 bytes read at the last
    /// offset), allocated on first use.
    window: Option<Box<[u8; WINDOW + 16]>>,
}

/// The window (of [`Gathered::window`]) holding `read` at its start.
fn window<'a>(slot: &'a mut Option<Box<[u8; WINDOW + 16]>>, read: &[u8]) -> &'a [u8; WINDOW + 16] {
    let window = slot.get_or_insert_with(|| Box::new([0; WINDOW + 16]));
    window[..read.len()].copy_from_slice(read);
    window
}

/// [`Shuffles::resample`] of `row` through the window; `false` (nothing
/// done) where the row's bytes do not fit it.
fn shuffled(
    s: &Shuffles,
    row: &[u8],
    columns: &Columns,
    g: &mut Gathered,
    out: &mut [u16],
) -> bool {
    let row = &row[columns.start..];
    let read = &row[..(columns.last + 16).min(row.len())];
    if read.len() > WINDOW {
        return false;
    }
    s.resample(window(&mut g.window, read), columns, out);
    true
}

/// A word of gathered bytes.
trait Word: Copy {
    /// The word of the first `W` bytes of `bytes` (the rest zero).
    fn read<const W: usize>(bytes: &[u8]) -> Self;
    /// Its 16-bit halves, low first (zero past the word).
    fn halves(self) -> [u16; 4];
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            #[inline(always)]
            fn read<const W: usize>(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b[..W].copy_from_slice(&bytes[..W]);
                <$t>::from_le_bytes(b)
            }
            #[inline(always)]
            fn halves(self) -> [u16; 4] {
                let w = u64::from(self);
                [
                    w as u16,
                    (w >> 16) as u16,
                    (w >> 32) as u16,
                    (w >> 48) as u16,
                ]
            }
        }
    };
}
word!(u16);
word!(u32);
word!(u64);

/// One plane row of `stream` resampled across at the output columns into
/// `out`.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn resample(stream: &Stream, row: &[u8], columns: &Columns, g: &mut Gathered, out: &mut [u16]) {
    // (texel, samples, spacing): the stream kinds of `source::layout`.
    match (stream.texel, stream.count, stream.spacing) {
        (1, 1, _) => pass::<1, 1, 1, 2, 1, u16>(row, columns, g, out),
        (2, 1, _) => pass::<2, 1, 1, 3, 2, u32>(row, columns, g, out),
        (2, 2, 1) => pass::<2, 2, 1, 4, 2, u32>(row, columns, g, out),
        (4, 2, 2) => pass::<4, 2, 2, 7, 4, u64>(row, columns, g, out),
        (3, 3, 1) => pass::<3, 3, 1, 6, 3, u64>(row, columns, g, out),
        (4, 3, 1) => pass::<4, 3, 1, 7, 4, u64>(row, columns, g, out),
        _ => {}
    }
}

/// [`resample`] for texels of `T` bytes giving `C` samples `D` bytes apart,
/// `W` bytes a column in `H` halves, read as `U` (inlined into each of
/// `resample`'s targets).
#[inline(always)]
fn pass<const T: usize, const C: usize, const D: usize, const W: usize, const H: usize, U: Word>(
    row: &[u8],
    columns: &Columns,
    g: &mut Gathered,
    out: &mut [u16],
) {
    let n = columns.offset.len();
    for h in &mut g.halves {
        h.resize(n, 0);
    }
    let row = &row[columns.start..];
    let read = &row[..(columns.last + W).min(row.len())];
    let [h0, h1, h2, h3] = &mut g.halves;
    let (h0, h1, h2, h3) = (&mut h0[..n], &mut h1[..n], &mut h2[..n], &mut h3[..n]);
    let mut halves = [h0, h1, h2, h3];
    let offsets = &columns.offset[..n];
    if columns.single {
        // One texel across: it is its own neighbour.
        let mut both = [0u8; 16];
        both[..W - T].copy_from_slice(&row[..W - T]);
        both[T..W].copy_from_slice(&row[..W - T]);
        let word = U::read::<W>(&both);
        gather::<U, H>(|_| word, offsets, &mut halves);
    } else if read.len() <= WINDOW {
        let window = window(&mut g.window, read);
        let at = |o: u32| (o as usize) & (WINDOW - 1);
        gather::<U, H>(
            |o| U::read::<W>(&window[at(o)..at(o) + W]),
            offsets,
            &mut halves,
        );
    } else {
        let at = |o: u32| o as usize;
        gather::<U, H>(
            |o| U::read::<W>(&row[at(o)..at(o) + W]),
            offsets,
            &mut halves,
        );
    }
    let [h0, h1, h2, h3] = halves;
    let halves = [&*h0, &*h1, &*h2, &*h3];
    let (first, second) = (&columns.first[..n], &columns.second[..n]);
    for (k, out) in out.chunks_exact_mut(n).take(C).enumerate() {
        // Sample k's bytes in the two texels, and their halves.
        let (a, b) = (k * D, T + k * D);
        let (ha, hb) = (halves[a / 2], halves[b / 2]);
        // A byte in 1/256 steps: the low byte of a half moved up, or the
        // high byte masked.
        let level = |half: u16, byte: usize| {
            if byte.is_multiple_of(2) {
                half << 8
            } else {
                half & 0xff00
            }
        };
        for x in 0..n {
            let w = Weights {
                first: first[x],
                second: second[x],
            };
            out[x] = blend(level(ha[x], a), level(hb[x], b), w);
        }
    }
}

/// Stores the first `H` halves of the word `read` gives for each offset in
/// `halves` (a loop per `H`: iterators, so no bounds checks).
#[inline(always)]
fn gather<U: Word, const H: usize>(
    read: impl Fn(u32) -> U,
    offsets: &[u32],
    halves: &mut [&mut [u16]; 4],
) {
    let [h0, h1, h2, h3] = halves;
    let (h0, h1, h2) = (h0.iter_mut(), h1.iter_mut(), h2.iter_mut());
    match H {
        1 => {
            for (d0, &o) in h0.zip(offsets) {
                *d0 = read(o).halves()[0];
            }
        }
        2 => {
            for ((d0, d1), &o) in h0.zip(h1).zip(offsets) {
                let h = read(o).halves();
                (*d0, *d1) = (h[0], h[1]);
            }
        }
        3 => {
            for (((d0, d1), d2), &o) in h0.zip(h1).zip(h2).zip(offsets) {
                let h = read(o).halves();
                (*d0, *d1, *d2) = (h[0], h[1], h[2]);
            }
        }
        _ => {
            for ((((d0, d1), d2), d3), &o) in h0.zip(h1).zip(h2).zip(h3.iter_mut()).zip(offsets) {
                let h = read(o).halves();
                (*d0, *d1, *d2, *d3) = (h[0], h[1], h[2], h[3]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte shuffles give the gather's samples bit for bit, for every
    /// stream kind of `source::layout` at every geometry they take.
    #[test]
    fn the_shuffles_resample_as_the_gather_does() {
        let mut shuffled_rows = 0;
        for (t, c, d) in Stream::KINDS {
            let stream = Stream::kind(t, c, d);
            for (plane, outputs) in [(720, 640), (360, 640), (640, 640), (40, 43), (300, 161)] {
                let mut columns = Columns::default();
                columns.fill((5.0, plane as f64 - 9.0), outputs, (plane, plane), (t, 0));
                let mut s = Shuffles::default();
                if !s.plan(&stream, &columns) {
                    continue;
                }
                let row: Vec<u8> = (0..plane * t).map(|i| (i * 7919 % 251) as u8).collect();
                let mut g = Gathered::default();
                let (mut want, mut got) = (vec![0; outputs * c], vec![1; outputs * c]);
                resample(&stream, &row, &columns, &mut g, &mut want);
                assert!(shuffled(&s, &row, &columns, &mut g, &mut got));
                assert_eq!(
                    got, want,
                    "texel {t}, {c} samples {d} apart, {plane} → {outputs}"
                );
                shuffled_rows += 1;
            }
        }
        assert!(shuffled_rows >= 8, "{shuffled_rows} geometries shuffled");
    }
}
