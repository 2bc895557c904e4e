//! A frame's planes as OpenH264's input: I420 (`YUVSource`) with the luma
//! read in place where the frame has a Y plane and the chroma split into a
//! reused [`Scratch`] (the scratch grows once, to the first frame's size,
//! and is rewritten in place for every later frame).

use openh264::formats::YUVSource;
use zerocam_tensor::{PixelFormat, Tensor};

use super::SoftwareError;

/// Planes the encoder rewrites for every frame, kept between frames.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    y: Vec<u8>,
    u: Vec<u8>,
    v: Vec<u8>,
    /// The chroma holds the constant grey of a GREY stream.
    grey_chroma: bool,
}

/// I420 over borrowed planes: what OpenH264 reads.
pub(crate) struct I420<'a> {
    width: usize,
    height: usize,
    y: &'a [u8],
    y_stride: usize,
    u: &'a [u8],
    v: &'a [u8],
    c_stride: usize,
}

impl YUVSource for I420<'_> {
    fn dimensions(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    fn strides(&self) -> (usize, usize, usize) {
        (self.y_stride, self.c_stride, self.c_stride)
    }

    fn y(&self) -> &[u8] {
        self.y
    }

    fn u(&self) -> &[u8] {
        self.u
    }

    fn v(&self) -> &[u8] {
        self.v
    }
}

/// Plane `p`'s rows: the map's bytes, the row stride, the rows and the
/// bytes of a row, checked to lie inside the map (OpenH264 reads them
/// through raw pointers).
fn checked(
    p: usize,
    data: &[u8],
    stride: usize,
    rows: usize,
    row: usize,
) -> Result<(), SoftwareError> {
    let needed = match rows {
        0 => 0,
        n => stride.saturating_mul(n - 1).saturating_add(row),
    };
    if stride < row || data.len() < needed {
        return Err(SoftwareError::ShortPlane {
            plane: p,
            len: data.len(),
            rows,
            row,
            stride,
        });
    }
    Ok(())
}

/// Grows `v` to `len` bytes (only the first frame, or a larger one, allocates).
fn sized(v: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if v.len() != len {
        v.resize(len, 0);
    }
    &mut v[..]
}

/// The average of two samples, rounded.
fn avg(a: u8, b: u8) -> u8 {
    ((u16::from(a) + u16::from(b)).div_ceil(2)) as u8
}

/// Calls `f` with `frame` (`width`x`height`, even) as I420, and says whether
/// a plane had to be copied to make it (NV12/NV16: the chroma split; YUYV,
/// UYVY: every plane; GREY: nothing, its chroma is a constant).
pub(crate) fn with_i420<R>(
    frame: &Tensor<u8>,
    width: usize,
    height: usize,
    scratch: &mut Scratch,
    f: impl FnOnce(&I420<'_>) -> R,
) -> Result<(R, bool), SoftwareError> {
    let format = frame.format().ok_or_else(|| SoftwareError::Format {
        format: "a tensor that is not an image".into(),
    })?;
    let (cw, ch) = (width / 2, height / 2);
    match format {
        PixelFormat::Nv12 | PixelFormat::Nv16 => {
            let yp = frame.plane(0)?;
            let cp = frame.plane(1)?;
            let ym = yp.map_read()?;
            let cm = cp.map_read()?;
            let ys = yp.stride(0).unwrap_or(width);
            let cs = cp.stride(0).unwrap_or(width);
            checked(0, &ym, ys, height, width)?;
            let vsub = if format == PixelFormat::Nv16 { 1 } else { 2 };
            let crow = |r: usize| &cm[r * cs..r * cs + 2 * cw];
            checked(1, &cm, cs, height / vsub, 2 * cw)?;
            scratch.grey_chroma = false;
            let u = sized(&mut scratch.u, cw * ch);
            for r in 0..ch {
                let (a, b) = if vsub == 2 {
                    (crow(r), None)
                } else {
                    (crow(2 * r), Some(crow(2 * r + 1)))
                };
                let out = &mut u[r * cw..(r + 1) * cw];
                for (x, o) in out.iter_mut().enumerate() {
                    *o = b.map_or(a[2 * x], |b| avg(a[2 * x], b[2 * x]));
                }
            }
            let v = sized(&mut scratch.v, cw * ch);
            for r in 0..ch {
                let (a, b) = if vsub == 2 {
                    (crow(r), None)
                } else {
                    (crow(2 * r), Some(crow(2 * r + 1)))
                };
                let out = &mut v[r * cw..(r + 1) * cw];
                for (x, o) in out.iter_mut().enumerate() {
                    *o = b.map_or(a[2 * x + 1], |b| avg(a[2 * x + 1], b[2 * x + 1]));
                }
            }
            let src = I420 {
                width,
                height,
                y: &ym,
                y_stride: ys,
                u: &scratch.u,
                v: &scratch.v,
                c_stride: cw,
            };
            Ok((f(&src), true))
        }
        PixelFormat::Yuyv | PixelFormat::Uyvy => {
            let p = frame.plane(0)?;
            let m = p.map_read()?;
            let s = p.stride(0).unwrap_or(2 * width);
            checked(0, &m, s, height, 2 * width)?;
            // Byte offsets of Y0, Cb, Y1, Cr in a 4-byte pair of pixels.
            let (y0, cb, y1, cr) = if format == PixelFormat::Yuyv {
                (0, 1, 2, 3)
            } else {
                (1, 0, 3, 2)
            };
            let row = |r: usize| &m[r * s..r * s + 2 * width];
            let y = sized(&mut scratch.y, width * height);
            for r in 0..height {
                let out = &mut y[r * width..(r + 1) * width];
                for (x, q) in row(r).chunks_exact(4).enumerate() {
                    out[2 * x] = q[y0];
                    out[2 * x + 1] = q[y1];
                }
            }
            scratch.grey_chroma = false;
            for (plane, at) in [(&mut scratch.u, cb), (&mut scratch.v, cr)] {
                let c = sized(plane, cw * ch);
                for r in 0..ch {
                    let (a, b) = (row(2 * r), row(2 * r + 1));
                    let out = &mut c[r * cw..(r + 1) * cw];
                    for (x, o) in out.iter_mut().enumerate() {
                        *o = avg(a[4 * x + at], b[4 * x + at]);
                    }
                }
            }
            let src = I420 {
                width,
                height,
                y: &scratch.y,
                y_stride: width,
                u: &scratch.u,
                v: &scratch.v,
                c_stride: cw,
            };
            Ok((f(&src), true))
        }
        PixelFormat::Grey => {
            let p = frame.plane(0)?;
            let m = p.map_read()?;
            let s = p.stride(0).unwrap_or(width);
            checked(0, &m, s, height, width)?;
            if !scratch.grey_chroma || scratch.u.len() != cw * ch {
                sized(&mut scratch.u, cw * ch).fill(128);
                sized(&mut scratch.v, cw * ch).fill(128);
                scratch.grey_chroma = true;
            }
            let src = I420 {
                width,
                height,
                y: &m,
                y_stride: s,
                u: &scratch.u,
                v: &scratch.v,
                c_stride: cw,
            };
            Ok((f(&src), false))
        }
        other => Err(SoftwareError::Format {
            format: other.name().to_string(),
        }),
    }
}
