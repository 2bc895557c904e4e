//! Pixel formats and their plane layouts, and [`ImageLayout`], the description of
//! an image laid out in memory (padded rows, plane offsets, batches).

use std::fmt;

use crate::{Error, Result};

/// How the pixels of an image are laid out in memory.
///
/// Packed formats have one plane of interleaved samples; [`PixelFormat::Nv12`]
/// and [`PixelFormat::Nv16`] have a luma plane and an interleaved CbCr plane;
/// [`PixelFormat::PlanarRgb`] has three planes (CHW, the usual model input).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PixelFormat {
    /// Packed R, G, B (V4L2 `RGB3`).
    Rgb,
    /// Packed B, G, R (V4L2 `BGR3`).
    Bgr,
    /// Packed R, G, B, A (V4L2 `AB24`).
    Rgba,
    /// Packed B, G, R, A (V4L2 `AR24`).
    Bgra,
    /// One luma sample per pixel (V4L2 `GREY`).
    Grey,
    /// Packed 4:2:2 Y, Cb, Y, Cr (V4L2 `YUYV`).
    Yuyv,
    /// Packed 4:2:2 Cb, Y, Cr, Y (V4L2 `UYVY`; Jetson CSI, many sensors).
    Uyvy,
    /// 4:2:0: a Y plane, then a half-height interleaved CbCr plane (V4L2 `NV12`).
    Nv12,
    /// 4:2:2: a Y plane, then a full-height interleaved CbCr plane (V4L2 `NV16`).
    Nv16,
    /// Three planes R, G, B of one sample per pixel each (CHW).
    PlanarRgb,
}

impl PixelFormat {
    /// Every format, in declaration order.
    pub const ALL: [PixelFormat; 10] = [
        PixelFormat::Rgb,
        PixelFormat::Bgr,
        PixelFormat::Rgba,
        PixelFormat::Bgra,
        PixelFormat::Grey,
        PixelFormat::Yuyv,
        PixelFormat::Uyvy,
        PixelFormat::Nv12,
        PixelFormat::Nv16,
        PixelFormat::PlanarRgb,
    ];

    /// Number of planes: 1 for packed formats, 2 for NV12/NV16, 3 for planar RGB.
    pub const fn plane_count(self) -> usize {
        match self {
            PixelFormat::Nv12 | PixelFormat::Nv16 => 2,
            PixelFormat::PlanarRgb => 3,
            _ => 1,
        }
    }

    /// Samples per pixel in the packed plane (`Rgb` 3, `Yuyv` 2, `Grey` 1),
    /// 1 for each plane of the planar formats.
    pub const fn samples_per_pixel(self) -> usize {
        match self {
            PixelFormat::Rgb | PixelFormat::Bgr => 3,
            PixelFormat::Rgba | PixelFormat::Bgra => 4,
            PixelFormat::Yuyv | PixelFormat::Uyvy => 2,
            PixelFormat::Grey | PixelFormat::Nv12 | PixelFormat::Nv16 | PixelFormat::PlanarRgb => 1,
        }
    }

    /// Chroma subsampling as `(horizontal, vertical)`: a region's x and width must
    /// be multiples of the first, its y and height of the second.
    pub const fn subsampling(self) -> (usize, usize) {
        match self {
            PixelFormat::Nv12 => (2, 2),
            PixelFormat::Nv16 | PixelFormat::Yuyv | PixelFormat::Uyvy => (2, 1),
            _ => (1, 1),
        }
    }

    /// Rows of plane `plane` for an image `height` pixels high.
    pub const fn plane_rows(self, plane: usize, height: usize) -> usize {
        match (self, plane) {
            (PixelFormat::Nv12, 1) => height / 2,
            _ => height,
        }
    }

    /// Samples in one row of plane `plane` for an image `width` pixels wide
    /// (the interleaved CbCr row of NV12 holds `width` samples); `usize::MAX`
    /// when that overflows (no real row is that long).
    pub const fn plane_row_samples(self, _plane: usize, width: usize) -> usize {
        width.saturating_mul(self.samples_per_pixel())
    }

    /// The V4L2 fourcc of the format, where V4L2 has one.
    ///
    /// ```
    /// use zerocam_tensor::PixelFormat;
    /// assert_eq!(PixelFormat::Nv12.v4l2_fourcc(), Some(*b"NV12"));
    /// assert_eq!(PixelFormat::from_v4l2_fourcc(*b"YUYV"), Some(PixelFormat::Yuyv));
    /// ```
    pub const fn v4l2_fourcc(self) -> Option<[u8; 4]> {
        Some(match self {
            PixelFormat::Rgb => *b"RGB3",
            PixelFormat::Bgr => *b"BGR3",
            PixelFormat::Rgba => *b"AB24",
            PixelFormat::Bgra => *b"AR24",
            PixelFormat::Grey => *b"GREY",
            PixelFormat::Yuyv => *b"YUYV",
            PixelFormat::Uyvy => *b"UYVY",
            PixelFormat::Nv12 => *b"NV12",
            PixelFormat::Nv16 => *b"NV16",
            PixelFormat::PlanarRgb => return None,
        })
    }

    /// The DRM fourcc (`drm_fourcc.h`) of the format's bytes in memory, as EGL
    /// dma-buf imports and libcamera name formats. DRM names packed RGB by the
    /// little-endian word: bytes R, G, B are `DRM_FORMAT_BGR888` (`BG24`).
    ///
    /// ```
    /// use zerocam_tensor::PixelFormat;
    /// assert_eq!(PixelFormat::Rgb.drm_fourcc(), Some(*b"BG24"));
    /// assert_eq!(PixelFormat::Grey.drm_fourcc(), Some(*b"R8  "));
    /// ```
    pub const fn drm_fourcc(self) -> Option<[u8; 4]> {
        Some(match self {
            PixelFormat::Rgb => *b"BG24",
            PixelFormat::Bgr => *b"RG24",
            PixelFormat::Rgba => *b"AB24",
            PixelFormat::Bgra => *b"AR24",
            PixelFormat::Grey => *b"R8  ",
            PixelFormat::Yuyv => *b"YUYV",
            PixelFormat::Uyvy => *b"UYVY",
            PixelFormat::Nv12 => *b"NV12",
            PixelFormat::Nv16 => *b"NV16",
            PixelFormat::PlanarRgb => return None,
        })
    }

    /// The format's name, as [`Display`](fmt::Display) writes it and
    /// [`from_name`](PixelFormat::from_name) reads it.
    pub const fn name(self) -> &'static str {
        match self {
            PixelFormat::Rgb => "RGB",
            PixelFormat::Bgr => "BGR",
            PixelFormat::Rgba => "RGBA",
            PixelFormat::Bgra => "BGRA",
            PixelFormat::Grey => "GREY",
            PixelFormat::Yuyv => "YUYV",
            PixelFormat::Uyvy => "UYVY",
            PixelFormat::Nv12 => "NV12",
            PixelFormat::Nv16 => "NV16",
            PixelFormat::PlanarRgb => "PLANAR_RGB",
        }
    }

    /// The format with V4L2 fourcc `fourcc`, if zerocam knows it.
    pub fn from_v4l2_fourcc(fourcc: [u8; 4]) -> Option<PixelFormat> {
        PixelFormat::ALL
            .into_iter()
            .find(|f| f.v4l2_fourcc() == Some(fourcc))
    }

    /// Parses a format name as [`Display`](fmt::Display) writes it, case-insensitively
    /// (`"nv12"`, `"RGB"`, `"planar_rgb"`).
    pub fn from_name(name: &str) -> Option<PixelFormat> {
        PixelFormat::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for PixelFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An image's layout in memory: format and size, and the options a driver or a
/// model imposes — a row stride wider than the packed row, the offset of the
/// second plane, a leading batch dimension, and a start offset into the buffer
/// (V4L2's `data_offset`).
///
/// ```
/// use zerocam_tensor::{ImageLayout, PixelFormat};
/// // 1920x1080 NV12 with rows padded to 2048 bytes and luma padded to 1088 rows.
/// let layout = ImageLayout::new(1920, 1080, PixelFormat::Nv12)
///     .with_row_stride(2048)
///     .with_plane_offset(2048 * 1088);
/// assert_eq!(layout.size_bytes(1).unwrap(), 2048 * 1088 + 2048 * 540);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageLayout {
    /// Pixel format.
    pub format: PixelFormat,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Bytes from one row to the next; `None` for packed rows.
    pub row_stride: Option<usize>,
    /// Bytes from the image start to its second plane (and, for planar RGB, from
    /// each plane to the next); `None` for planes packed one after another.
    pub plane_offset: Option<usize>,
    /// Images in the leading batch dimension (at least 1).
    pub batch: usize,
    /// Bytes before the first image in the buffer.
    pub start_offset: usize,
}

/// The byte geometry an [`ImageLayout`] resolves to for one element size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResolvedLayout {
    pub row_stride: usize,
    /// Distance between consecutive planes (0 for a single plane).
    pub plane_step: usize,
    /// Bytes of one whole image, all planes.
    pub frame_bytes: usize,
}

impl ImageLayout {
    /// A packed, unbatched image at offset 0.
    pub const fn new(width: usize, height: usize, format: PixelFormat) -> ImageLayout {
        ImageLayout {
            format,
            width,
            height,
            row_stride: None,
            plane_offset: None,
            batch: 1,
            start_offset: 0,
        }
    }

    /// Rows `stride` bytes apart (at least the packed row).
    pub const fn with_row_stride(mut self, stride: usize) -> ImageLayout {
        self.row_stride = Some(stride);
        self
    }

    /// The second plane `offset` bytes after the image start.
    pub const fn with_plane_offset(mut self, offset: usize) -> ImageLayout {
        self.plane_offset = Some(offset);
        self
    }

    /// `batch` images one after another (shape gains a leading `N`).
    pub const fn with_batch(mut self, batch: usize) -> ImageLayout {
        self.batch = batch;
        self
    }

    /// The first image `offset` bytes into the buffer.
    pub const fn with_start_offset(mut self, offset: usize) -> ImageLayout {
        self.start_offset = offset;
        self
    }

    /// Bytes the layout needs for `elem_size`-byte samples, start offset included.
    pub fn size_bytes(&self, elem_size: usize) -> Result<usize> {
        let r = self.resolve(elem_size)?;
        r.frame_bytes
            .checked_mul(self.batch)
            .and_then(|b| b.checked_add(self.start_offset))
            .ok_or(self.bad("size overflows the address space"))
    }

    fn bad(&self, reason: &'static str) -> Error {
        Error::BadImageSize {
            format: self.format,
            width: self.width,
            height: self.height,
            reason,
        }
    }

    /// Checks the layout and computes its strides for `elem_size`-byte samples.
    pub(crate) fn resolve(&self, elem_size: usize) -> Result<ResolvedLayout> {
        let f = self.format;
        if self.width == 0 || self.height == 0 {
            return Err(self.bad("width and height must be non-zero"));
        }
        if self.batch == 0 {
            return Err(self.bad("batch must be at least 1"));
        }
        let (hsub, vsub) = f.subsampling();
        if !self.width.is_multiple_of(hsub) || !self.height.is_multiple_of(vsub) {
            return Err(self.bad("dimensions must be multiples of the chroma subsampling"));
        }
        let row_bytes = self
            .width
            .checked_mul(f.samples_per_pixel())
            .and_then(|samples| samples.checked_mul(elem_size))
            .ok_or(self.bad("row size overflows"))?;
        let row_stride = self.row_stride.unwrap_or(row_bytes);
        if row_stride < row_bytes || !row_stride.is_multiple_of(elem_size) {
            return Err(Error::BadStride {
                stride: row_stride,
                row_bytes,
                elem_size,
            });
        }
        if !self.start_offset.is_multiple_of(elem_size) {
            return Err(Error::BadPlaneOffset {
                offset: self.start_offset,
                min: 0,
            });
        }
        let overflow = || self.bad("size overflows the address space");
        let first_plane = row_stride.checked_mul(self.height).ok_or_else(overflow)?;
        let planes = f.plane_count();
        if planes == 1 {
            return Ok(ResolvedLayout {
                row_stride,
                plane_step: 0,
                frame_bytes: first_plane,
            });
        }
        let plane_step = self.plane_offset.unwrap_or(first_plane);
        if plane_step < first_plane || !plane_step.is_multiple_of(elem_size) {
            return Err(Error::BadPlaneOffset {
                offset: plane_step,
                min: first_plane,
            });
        }
        let last_plane = row_stride
            .checked_mul(f.plane_rows(planes - 1, self.height))
            .ok_or_else(overflow)?;
        let frame_bytes = plane_step
            .checked_mul(planes - 1)
            .and_then(|s| s.checked_add(last_plane))
            .ok_or_else(overflow)?;
        Ok(ResolvedLayout {
            row_stride,
            plane_step,
            frame_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nv12_packed_size_is_one_and_a_half_planes() {
        let l = ImageLayout::new(640, 480, PixelFormat::Nv12);
        assert_eq!(l.size_bytes(1).unwrap(), 640 * 480 * 3 / 2);
    }

    #[test]
    fn planar_rgb_f32_size() {
        let l = ImageLayout::new(4, 2, PixelFormat::PlanarRgb).with_batch(2);
        assert_eq!(l.size_bytes(4).unwrap(), 2 * 3 * 4 * 2 * 4);
    }

    #[test]
    fn stride_below_row_is_refused() {
        let l = ImageLayout::new(64, 4, PixelFormat::Rgb).with_row_stride(100);
        let e = l.size_bytes(1).unwrap_err();
        assert!(
            matches!(
                e,
                Error::BadStride {
                    stride: 100,
                    row_bytes: 192,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("100") && e.to_string().contains("192"));
    }

    #[test]
    fn overlapping_chroma_plane_is_refused() {
        let l = ImageLayout::new(64, 4, PixelFormat::Nv12).with_plane_offset(100);
        let e = l.size_bytes(1).unwrap_err();
        assert!(
            matches!(
                e,
                Error::BadPlaneOffset {
                    offset: 100,
                    min: 256
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn a_row_wider_than_the_address_space_is_an_error_not_an_overflow() {
        // Found by prop_geometry: 2^62 RGBA pixels overflowed `width * 4`.
        let l = ImageLayout::new(1 << (usize::BITS - 2), 1, PixelFormat::Rgba);
        let e = l.size_bytes(1).unwrap_err();
        assert!(
            matches!(
                e,
                Error::BadImageSize {
                    reason: "row size overflows",
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(
            PixelFormat::Rgb.plane_row_samples(0, usize::MAX),
            usize::MAX
        );
    }

    #[test]
    fn odd_nv12_is_refused() {
        let e = ImageLayout::new(63, 4, PixelFormat::Nv12)
            .size_bytes(1)
            .unwrap_err();
        assert!(e.to_string().contains("63x4"), "{e}");
    }

    #[test]
    fn names_round_trip() {
        for f in PixelFormat::ALL {
            assert_eq!(
                PixelFormat::from_name(&f.to_string().to_lowercase()),
                Some(f)
            );
            if let Some(cc) = f.v4l2_fourcc() {
                assert_eq!(PixelFormat::from_v4l2_fourcc(cc), Some(f));
            }
        }
    }
}
