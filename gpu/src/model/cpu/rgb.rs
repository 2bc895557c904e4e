//! Stage 1 of the CPU path: an image tensor (any format the CPU reads, padded
//! rows, split planes) to packed 8-bit RGB in a reusable buffer. YUV goes
//! through `yuvutils-rs` (SIMD: AVX2/SSE on x86-64, NEON on aarch64); packed
//! RGB and grey are copied row by row.

use yuvutils_rs::{YuvBiPlanarImage, YuvConversionMode, YuvRange, YuvStandardMatrix};
use zerocam_tensor::{PixelFormat, ReadOnly, Tensor, TensorMap};

use super::error::CpuConvertError;
use crate::{ColorSpec, Matrix, Range};

/// yuvutils' most precise fixed point: within one step of the f64 equations
/// (its `Balanced` mode is off by two in a few percent of pixels).
const MODE: YuvConversionMode = YuvConversionMode::Professional;

/// Whether the CPU path reads `format`.
pub(super) fn reads(format: PixelFormat) -> bool {
    !matches!(format, PixelFormat::PlanarRgb)
}

/// A plane of `t` mapped for reading, with its row stride in bytes.
fn plane(t: &Tensor<u8>, i: usize) -> Result<(TensorMap<u8, ReadOnly>, usize), CpuConvertError> {
    let map = t.plane(i)?.map_read()?;
    let stride = map.strides_bytes().and_then(|s| s.first().copied());
    let stride = stride.ok_or_else(|| CpuConvertError::Library {
        stage: "plane map",
        message: format!("plane {i} has no row stride"),
    })?;
    Ok((map, stride))
}

fn u32_of(v: usize) -> Result<u32, CpuConvertError> {
    u32::try_from(v).map_err(|_| CpuConvertError::Library {
        stage: "yuv",
        message: format!("{v} does not fit the library's u32 sizes"),
    })
}

fn yuv_error(e: yuvutils_rs::YuvError) -> CpuConvertError {
    CpuConvertError::Library {
        stage: "yuv",
        message: e.to_string(),
    }
}

/// Converts all of `src` (one image, `width`x`height`) to packed RGB in `out`,
/// which grows to `width * height * 3` bytes; `tail` holds up to two luma
/// rows (a luma and a chroma row for 4:2:2 packed). Neither shrinks: steady state does not reallocate them.
pub(super) fn to_rgb(
    src: &Tensor<u8>,
    (width, height): (usize, usize),
    format: PixelFormat,
    color: ColorSpec,
    out: &mut Vec<u8>,
    tail: &mut Vec<u8>,
) -> Result<(), CpuConvertError> {
    let row_bytes = width * 3;
    out.resize(row_bytes * height, 0);
    let range = match color.range {
        Range::Limited => YuvRange::Limited,
        Range::Full => YuvRange::Full,
    };
    let matrix = match color.matrix {
        Matrix::Bt601 => YuvStandardMatrix::Bt601,
        Matrix::Bt709 => YuvStandardMatrix::Bt709,
    };
    let (w32, out_stride) = (u32_of(width)?, u32_of(row_bytes)?);
    match format {
        PixelFormat::Nv12 | PixelFormat::Nv16 => {
            let (y, y_stride) = plane(src, 0)?;
            let (uv, uv_stride) = plane(src, 1)?;
            let convert = if format == PixelFormat::Nv12 {
                yuvutils_rs::yuv_nv12_to_rgb
            } else {
                yuvutils_rs::yuv_nv16_to_rgb
            };
            // yuvutils 0.8 takes padded luma rows but wants the chroma plane
            // exactly packed: one call per chroma row (1 or 2 luma rows), with
            // that row's own length as its stride. No copy.
            let vs = format.subsampling().1;
            let uv_row = width.div_ceil(2) * 2;
            // It also skips luma rows shorter than the stride: the last
            // band's rows, where the map ends, go through `tail` (a copy of
            // at most two rows).
            for (band, out) in out.chunks_mut(row_bytes * vs).enumerate() {
                let rows = out.len() / row_bytes;
                let y_band = &y[band * vs * y_stride..];
                let (y_plane, y_stride) = if y_band.len() >= rows * y_stride {
                    (y_band, y_stride)
                } else {
                    tail.clear();
                    for r in 0..rows {
                        tail.extend_from_slice(&y_band[r * y_stride..][..width]);
                    }
                    (&tail[..], width)
                };
                let image = YuvBiPlanarImage {
                    y_plane,
                    y_stride: u32_of(y_stride)?,
                    uv_plane: &uv[band * uv_stride..][..uv_row],
                    uv_stride: u32_of(uv_row)?,
                    width: w32,
                    height: u32_of(rows)?,
                };
                convert(&image, out, out_stride, range, matrix, MODE).map_err(yuv_error)?;
            }
            Ok(())
        }
        PixelFormat::Yuyv | PixelFormat::Uyvy => {
            // yuvutils 0.8's packed 4:2:2 path has no precise mode (errors of
            // 2 steps): each row is split into a luma row and a CbCr row in
            // `tail` and goes through the NV16 path.
            let (yuy, stride) = plane(src, 0)?;
            let pairs = width.div_ceil(2);
            tail.resize(pairs * 4, 0);
            let (luma, chroma) = tail.split_at_mut(pairs * 2);
            let (y_at, c_at) = if format == PixelFormat::Yuyv {
                ([0, 2], [1, 3])
            } else {
                ([1, 3], [0, 2])
            };
            for (r, out) in out.chunks_exact_mut(row_bytes).enumerate() {
                let row = &yuy[r * stride..][..pairs * 4];
                for (((px, l), c), _) in row
                    .chunks_exact(4)
                    .zip(luma.chunks_exact_mut(2))
                    .zip(chroma.chunks_exact_mut(2))
                    .zip(0..pairs)
                {
                    l.copy_from_slice(&[px[y_at[0]], px[y_at[1]]]);
                    c.copy_from_slice(&[px[c_at[0]], px[c_at[1]]]);
                }
                let image = YuvBiPlanarImage {
                    y_plane: luma,
                    y_stride: u32_of(pairs * 2)?,
                    uv_plane: chroma,
                    uv_stride: u32_of(pairs * 2)?,
                    width: w32,
                    height: 1,
                };
                yuvutils_rs::yuv_nv16_to_rgb(&image, out, out_stride, range, matrix, MODE)
                    .map_err(yuv_error)?;
            }
            Ok(())
        }
        PixelFormat::Grey
        | PixelFormat::Rgb
        | PixelFormat::Bgr
        | PixelFormat::Rgba
        | PixelFormat::Bgra => {
            let (map, stride) = plane(src, 0)?;
            let bpp = format.samples_per_pixel();
            for (r, dst) in out.chunks_exact_mut(row_bytes).enumerate() {
                let row = &map[r * stride..][..width * bpp];
                copy_row(format, row, dst);
            }
            Ok(())
        }
        other => Err(CpuConvertError::UnsupportedSource {
            format: Some(other),
        }),
    }
}

/// One row of a packed RGB-family or grey format to packed RGB.
fn copy_row(format: PixelFormat, row: &[u8], dst: &mut [u8]) {
    match format {
        PixelFormat::Rgb => dst.copy_from_slice(row),
        PixelFormat::Grey => {
            for (o, &g) in dst.chunks_exact_mut(3).zip(row) {
                o.fill(g);
            }
        }
        _ => {
            let bpp = format.samples_per_pixel();
            let bgr = matches!(format, PixelFormat::Bgr | PixelFormat::Bgra);
            for (o, p) in dst.chunks_exact_mut(3).zip(row.chunks_exact(bpp)) {
                if bgr {
                    o.copy_from_slice(&[p[2], p[1], p[0]]);
                } else {
                    o.copy_from_slice(&p[..3]);
                }
            }
        }
    }
}
