//! A frame's YCbCr samples as libjpeg-turbo's planar input: the luma plane
//! in place where it can be, or gathered with the chroma into the encoder's
//! scratch planes (NV12's interleaved CbCr split, YUYV's samples picked,
//! odd sizes padded by repeating the last column and row, the colour
//! transform applied on the way).

use turbojpeg::Subsamp;

use super::color::{clamp, Affine, Mixed};
use super::JpegError;

/// One plane of 8-bit samples: `rows` rows of `width` samples, `stride`
/// bytes apart. Checked on construction: every row lies in `data`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plane<'a> {
    data: &'a [u8],
    stride: usize,
    width: usize,
    rows: usize,
}

impl<'a> Plane<'a> {
    /// The plane `name` of `data`, or why it cannot be: empty, rows longer
    /// than their stride, or fewer bytes than its rows need.
    pub(crate) fn new(
        name: &'static str,
        data: &'a [u8],
        stride: usize,
        width: usize,
        rows: usize,
    ) -> Result<Plane<'a>, JpegError> {
        let need = rows
            .checked_sub(1)
            .and_then(|r| r.checked_mul(stride))
            .and_then(|n| n.checked_add(width));
        match need {
            Some(need) if width > 0 && stride >= width && need <= data.len() => Ok(Plane {
                data,
                stride,
                width,
                rows,
            }),
            _ => Err(JpegError::Plane {
                plane: name,
                len: data.len(),
                stride,
                width,
                rows,
            }),
        }
    }

    /// Row `r`, clamped to the last (the padding of an odd height).
    #[inline]
    fn row(&self, r: usize) -> &'a [u8] {
        let start = r.min(self.rows - 1) * self.stride;
        &self.data[start..start + self.width]
    }

    /// The plane's bytes, row stride and samples per row.
    pub(crate) fn parts(&self) -> (&'a [u8], usize, usize) {
        (self.data, self.stride, self.width)
    }

    /// The bytes from the first row, `len` of them when the plane's memory
    /// holds that many (libjpeg-turbo reads whole padded rows).
    fn bytes(&self, len: usize) -> Option<&'a [u8]> {
        self.data.get(..len)
    }
}

/// How the samples lie.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Layout<'a> {
    /// Three planes (I420, I422).
    Planar {
        /// Luma.
        y: Plane<'a>,
        /// Cb.
        cb: Plane<'a>,
        /// Cr.
        cr: Plane<'a>,
    },
    /// Luma, then interleaved CbCr pairs (NV12, NV16).
    SemiPlanar {
        /// Luma.
        y: Plane<'a>,
        /// Cb, Cr, Cb, Cr, …
        cbcr: Plane<'a>,
    },
    /// One plane of 4-byte groups of two pixels (YUYV, UYVY): the byte
    /// offsets of Y0, Cb, Y1, Cr in a group.
    Packed {
        /// The rows.
        plane: Plane<'a>,
        /// Offsets of Y0, Cb, Y1, Cr.
        order: [usize; 4],
    },
}

/// A `width`x`height` image of YCbCr samples, its chroma subsampled
/// horizontally by 2 and vertically by `vsub` (2: 4:2:0, 1: 4:2:2).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    pub layout: Layout<'a>,
    pub width: usize,
    pub height: usize,
    pub vsub: usize,
}

/// The sizes of libjpeg-turbo's planes for a source: luma padded to whole
/// chroma samples, and the chroma planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dims {
    /// Padded luma width (even).
    pub luma_width: usize,
    /// Padded luma rows (a multiple of the vertical subsampling).
    pub luma_rows: usize,
    /// Chroma samples per row.
    pub chroma_width: usize,
    /// Chroma rows.
    pub chroma_rows: usize,
}

impl Source<'_> {
    /// libjpeg-turbo's subsampling.
    pub(crate) fn subsamp(&self) -> Subsamp {
        if self.vsub == 2 {
            Subsamp::Sub2x2
        } else {
            Subsamp::Sub2x1
        }
    }

    /// The padded plane sizes.
    pub(crate) fn dims(&self) -> Dims {
        let luma_width = self.width.div_ceil(2) * 2;
        let luma_rows = self.height.div_ceil(self.vsub) * self.vsub;
        Dims {
            luma_width,
            luma_rows,
            chroma_width: luma_width / 2,
            chroma_rows: luma_rows / self.vsub,
        }
    }

    /// The luma plane as it is in memory and its stride, when libjpeg-turbo
    /// can read it there (a planar layout whose memory holds the padded
    /// rows; always so for even sizes).
    pub(crate) fn luma_in_place(&self) -> Option<(&[u8], usize)> {
        let y = match self.layout {
            Layout::Planar { y, .. } | Layout::SemiPlanar { y, .. } => y,
            Layout::Packed { .. } => return None,
        };
        let d = self.dims();
        let len = (d.luma_rows - 1) * y.stride + d.luma_width;
        y.bytes(len).map(|b| (b, y.stride))
    }

    /// Writes the padded luma plane into `out` (rows `luma_width` apart)
    /// through `lut`.
    pub(crate) fn gather_luma(&self, out: &mut Vec<u8>, lut: Affine) {
        let d = self.dims();
        resize(out, d.luma_width * d.luma_rows);
        for (r, dst) in out.chunks_exact_mut(d.luma_width).enumerate() {
            let (body, pad) = dst.split_at_mut(self.width);
            match self.layout {
                Layout::Planar { y, .. } | Layout::SemiPlanar { y, .. } => {
                    for (d, &s) in body.iter_mut().zip(y.row(r)) {
                        *d = lut.apply(s);
                    }
                }
                Layout::Packed { plane, order } => {
                    let row = plane.row(r);
                    if order[0] == 0 {
                        pick_luma::<0, 2>(body, row, lut);
                    } else {
                        pick_luma::<1, 3>(body, row, lut);
                    }
                }
            }
            if let (Some(p), Some(&last)) = (pad.first_mut(), body.last()) {
                *p = last;
            }
        }
    }

    /// Writes the padded Cb and Cr planes into `cb` and `cr` (rows
    /// `chroma_width` apart) through `luts`.
    pub(crate) fn gather_chroma(&self, cb: &mut Vec<u8>, cr: &mut Vec<u8>, luts: [Affine; 2]) {
        let d = self.dims();
        let n = d.chroma_width * d.chroma_rows;
        resize(cb, n);
        resize(cr, n);
        let rows = cb
            .chunks_exact_mut(d.chroma_width)
            .zip(cr.chunks_exact_mut(d.chroma_width));
        for (r, (cb, cr)) in rows.enumerate() {
            let full = match self.layout {
                Layout::Planar { cb: pb, cr: pr, .. } => {
                    let (rb, rr) = (pb.row(r), pr.row(r));
                    let have = rb.len().min(rr.len());
                    for (k, (b, c)) in cb.iter_mut().zip(cr.iter_mut()).enumerate() {
                        let k = k.min(have - 1);
                        *b = luts[0].apply(rb[k]);
                        *c = luts[1].apply(rr[k]);
                    }
                    continue;
                }
                Layout::SemiPlanar { cbcr, .. } => split::<2, 0, 1>(cbcr.row(r), cb, cr, luts),
                Layout::Packed { plane, order } if order[0] == 0 => {
                    split::<4, 1, 3>(plane.row(r * self.vsub), cb, cr, luts)
                }
                Layout::Packed { plane, .. } => {
                    split::<4, 0, 2>(plane.row(r * self.vsub), cb, cr, luts)
                }
            };
            // An odd width: the last column repeats (neutral when none).
            let last = full.checked_sub(1);
            let (lb, lc) =
                last.map_or((luts[0].apply(128), luts[1].apply(128)), |k| (cb[k], cr[k]));
            cb[full..].fill(lb);
            cr[full..].fill(lc);
        }
    }
}

/// A mixed (BT.709) transform applied in place: luma first, from the raw
/// chroma at each pixel (nearest sample, as zerocam's own RGB conversion
/// reads it), then the chroma.
pub(crate) fn mix(m: &Mixed, d: Dims, vsub: usize, y: &mut [u8], cb: &mut [u8], cr: &mut [u8]) {
    for (r, row) in y.chunks_exact_mut(d.luma_width).enumerate() {
        let c = (r / vsub) * d.chroma_width;
        let (rb, rr) = (&cb[c..c + d.chroma_width], &cr[c..c + d.chroma_width]);
        for (pair, (&b, &rc)) in row.chunks_exact_mut(2).zip(rb.iter().zip(rr)) {
            let chroma = m.y[1][b as usize] + m.y[2][rc as usize];
            for s in pair {
                *s = clamp(m.y[0][*s as usize] + chroma);
            }
        }
    }
    for (b, c) in cb.iter_mut().zip(cr.iter_mut()) {
        let (ob, oc) = (*b as usize, *c as usize);
        *b = clamp(m.cb[0][ob] + m.cb[1][oc]);
        *c = clamp(m.cr[0][ob] + m.cr[1][oc]);
    }
}

/// Luma of a packed 4:2:2 row (groups of 4 bytes, Y at `Y0` and `Y1`)
/// into `body` through `a`.
#[inline]
fn pick_luma<const Y0: usize, const Y1: usize>(body: &mut [u8], row: &[u8], a: Affine) {
    for (pair, g) in body.chunks_exact_mut(2).zip(row.chunks_exact(4)) {
        pair[0] = a.apply(g[Y0]);
        pair[1] = a.apply(g[Y1]);
    }
}

/// Chroma of a row of `STEP`-byte groups, Cb at `B` and Cr at `C`, into
/// `cb` and `cr` through `a`; returns the samples written (the groups the
/// row has, at most the planes' width).
#[inline]
fn split<const STEP: usize, const B: usize, const C: usize>(
    row: &[u8],
    cb: &mut [u8],
    cr: &mut [u8],
    a: [Affine; 2],
) -> usize {
    let groups = row.chunks_exact(STEP);
    let n = groups.len().min(cb.len()).min(cr.len());
    for ((g, b), c) in groups.zip(cb.iter_mut()).zip(cr.iter_mut()) {
        *b = a[0].apply(g[B]);
        *c = a[1].apply(g[C]);
    }
    n
}

/// `v.len() == n`, growing the allocation only when it is too small.
fn resize(v: &mut Vec<u8>, n: usize) {
    v.resize(n, 0);
}
