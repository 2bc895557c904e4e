//! Format negotiation: what a driver's `VIDIOC_S_FMT` / `VIDIOC_G_FMT` reply
//! means, decided by a pure function ([`FormatReply::stream_format`]) that
//! trusts none of the driver's numbers. Every plane of an accepted
//! [`StreamFormat`] fits its buffer: `bytesperline` × rows (both image planes
//! of a one-buffer NV12/NV16) ≤ `sizeimage`, computed without overflow.

use std::path::Path;

use zerocam_tensor::{ColorSpec, ImageLayout, PixelFormat};

use crate::v4l2::ioctl::raw;
use crate::{CaptureError, CaptureFormat, Colorimetry, FourCc, Result};

/// One memory plane of a negotiated format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaneLayout {
    /// Bytes per row (`bytesperline`), padding included.
    pub bytes_per_line: u32,
    /// Bytes of the plane's buffer (`sizeimage`).
    pub size: u32,
}

/// The format a stream runs with, as the driver set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFormat {
    /// The capture format.
    pub format: CaptureFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// One entry per memory plane.
    pub planes: Vec<PlaneLayout>,
    /// How the frames' YCbCr is to be read: from the driver's colour fields
    /// for V4L2 ([`Colorimetry::color_spec`]), from the configured
    /// `ColorSpace` for libcamera, what it draws with for the pattern source.
    pub color: ColorSpec,
}

/// What a driver answered to `VIDIOC_S_FMT` or `VIDIOC_G_FMT`, field by field,
/// before zerocam believes any of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatReply {
    /// `pixelformat`.
    pub fourcc: FourCc,
    /// `width` in pixels.
    pub width: u32,
    /// `height` in pixels.
    pub height: u32,
    /// `field` (`enum v4l2_field`: 1 is `V4L2_FIELD_NONE`).
    pub field: u32,
    /// Memory planes the reply describes: `num_planes` of a multi-planar reply
    /// (any value a driver writes), 1 for a single-planar one.
    pub num_planes: u8,
    /// `bytesperline` and `sizeimage` of every plane entry the reply carries:
    /// one for single-planar, `VIDEO_MAX_PLANES` (8) for multi-planar,
    /// whatever `num_planes` says.
    pub planes: Vec<PlaneLayout>,
    /// `colorspace`, `ycbcr_enc` and `quantization`.
    pub colorimetry: Colorimetry,
}

/// What is wrong with a driver's format reply (inside
/// [`CaptureError::BadFormat`], which names the device and the format).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatProblem {
    /// Frames would not be whole progressive images: separate fields
    /// (`V4L2_FIELD_TOP`, `BOTTOM`, `ALTERNATE`) or fields one after the other
    /// (`SEQ_TB`, `SEQ_BT`). Progressive and interleaved frames are taken
    /// (and 0, `ANY`, which no driver should answer, as progressive).
    #[error("field {field} is not a whole frame (taken: 0 any, 1 none, 4 interlaced, 8 interlaced-tb, 9 interlaced-bt)")]
    Field {
        /// The driver's `field`.
        field: u32,
    },
    /// The reply describes another number of memory planes than the format has.
    #[error("{described} memory plane(s) described, {format} has {expected}")]
    PlaneCount {
        /// The reply's `num_planes`.
        described: u8,
        /// The format's name.
        format: &'static str,
        /// Its memory planes.
        expected: usize,
    },
    /// A plane's geometry is impossible: zero or odd sizes for the chroma
    /// subsampling, a `bytesperline` shorter than a row, sizes that overflow.
    #[error("plane {plane} (bytesperline {bytes_per_line}): {source}")]
    Layout {
        /// The memory plane.
        plane: usize,
        /// Its `bytesperline`.
        bytes_per_line: u32,
        /// The layout the tensor crate refused, naming the values.
        source: zerocam_tensor::Error,
    },
    /// A plane's rows do not fit its `sizeimage`.
    #[error("plane {plane}: {rows} rows of bytesperline {bytes_per_line} need {needed} bytes, sizeimage is {size}")]
    PlaneTooSmall {
        /// The memory plane.
        plane: usize,
        /// Its `bytesperline` (0 in the reply counts as a packed row).
        bytes_per_line: u32,
        /// Rows it holds (luma and chroma for a one-buffer NV12/NV16).
        rows: usize,
        /// Bytes those rows need.
        needed: usize,
        /// Its `sizeimage`.
        size: u32,
    },
    /// A buffer the driver allocated (`VIDIOC_QUERYBUF`) is smaller than the
    /// format's plane.
    #[error("buffer {index} plane {plane} is {length} bytes, sizeimage is {size}")]
    BufferTooSmall {
        /// The buffer index.
        index: u32,
        /// The memory plane.
        plane: usize,
        /// The buffer plane's `length`.
        length: u32,
        /// The format's `sizeimage` for the plane.
        size: u32,
    },
}

/// `enum v4l2_field` values whose buffers hold one whole frame: none
/// (progressive), the interleaved ones, and `ANY` (0: a driver that did not
/// say; the layout checks apply all the same).
const WHOLE_FRAME_FIELDS: [u32; 5] = [0, raw::FIELD_NONE, 4, 8, 9];

impl FormatReply {
    /// The reply of a `VIDIOC_S_FMT`/`G_FMT` call, `None` for a buffer type
    /// other than video capture.
    pub(crate) fn from_raw(f: &raw::Format) -> Option<FormatReply> {
        let plane = |bytesperline, sizeimage| PlaneLayout {
            bytes_per_line: bytesperline,
            size: sizeimage,
        };
        if let Some(p) = f.pix() {
            // The extended fields count only with the magic (the V4L2 core
            // sets it on every capture reply); without it they are "default".
            let extended = p.priv_ == raw::PIX_FMT_PRIV_MAGIC;
            return Some(FormatReply {
                fourcc: FourCc::from_u32(p.pixelformat),
                width: p.width,
                height: p.height,
                field: p.field,
                num_planes: 1,
                planes: vec![plane(p.bytesperline, p.sizeimage)],
                colorimetry: Colorimetry {
                    colorspace: p.colorspace,
                    ycbcr_enc: if extended { p.ycbcr_enc } else { 0 },
                    quantization: if extended { p.quantization } else { 0 },
                },
            });
        }
        let p = f.pix_mp()?;
        Some(FormatReply {
            fourcc: FourCc::from_u32(p.pixelformat),
            width: p.width,
            height: p.height,
            field: p.field,
            num_planes: p.num_planes,
            planes: p
                .plane_fmt
                .iter()
                .map(|pf| plane(pf.bytesperline, pf.sizeimage))
                .collect(),
            colorimetry: Colorimetry {
                colorspace: p.colorspace,
                ycbcr_enc: u32::from(p.ycbcr_enc),
                quantization: u32::from(p.quantization),
            },
        })
    }

    /// The stream format the reply describes (`VIDIOC_G_FMT`'s decision).
    ///
    /// A `bytesperline` of 0 stands for a packed row; every other value is
    /// kept as the driver gave it. The colour spec is
    /// [`Colorimetry::color_spec`] of the reply's fields: any values are taken.
    ///
    /// # Errors
    /// [`CaptureError::UnsupportedFormat`] for a fourcc zerocam does not
    /// capture; [`CaptureError::BadFormat`] with a [`FormatProblem`] for
    /// fields, a plane count, a geometry or a `sizeimage` that do not make
    /// whole frames fitting their buffers. Each names `path` and the values.
    ///
    /// ```
    /// use std::path::Path;
    /// use zerocam_capture::v4l2::FormatReply;
    /// use zerocam_capture::{CaptureError, Colorimetry, FourCc, PlaneLayout};
    /// use zerocam_tensor::ColorSpec;
    ///
    /// let mut reply = FormatReply {
    ///     fourcc: FourCc(*b"NV12"),
    ///     width: 640,
    ///     height: 480,
    ///     field: 1,
    ///     num_planes: 1,
    ///     planes: vec![PlaneLayout { bytes_per_line: 640, size: 640 * 720 }],
    ///     colorimetry: Colorimetry { colorspace: 3, ycbcr_enc: 0, quantization: 0 }, // REC709
    /// };
    /// let f = reply.stream_format(Path::new("/dev/video0"))?;
    /// assert_eq!((f.width, f.planes[0].bytes_per_line), (640, 640));
    /// assert_eq!(f.color, ColorSpec::BT709_LIMITED);
    ///
    /// reply.planes[0].size = 1000; // luma and chroma need 460800 bytes
    /// let e = reply.stream_format(Path::new("/dev/video0")).unwrap_err();
    /// assert!(matches!(e, CaptureError::BadFormat { .. }));
    /// assert!(e.to_string().contains("need 460800 bytes, sizeimage is 1000"), "{e}");
    /// # Ok::<(), CaptureError>(())
    /// ```
    pub fn stream_format(&self, path: &Path) -> Result<StreamFormat> {
        let format = CaptureFormat::from_fourcc(self.fourcc).ok_or_else(|| {
            CaptureError::UnsupportedFormat {
                path: path.to_path_buf(),
                fourcc: self.fourcc,
                offered: format!("zerocam captures {}", CaptureFormat::names()),
            }
        })?;
        let bad = |problem| CaptureError::BadFormat {
            path: path.to_path_buf(),
            fourcc: self.fourcc,
            width: self.width,
            height: self.height,
            problem,
        };
        if !WHOLE_FRAME_FIELDS.contains(&self.field) {
            return Err(bad(FormatProblem::Field { field: self.field }));
        }
        let described = usize::from(self.num_planes);
        if described != format.memory_planes || described > self.planes.len() {
            return Err(bad(FormatProblem::PlaneCount {
                described: self.num_planes,
                format: format.name,
                expected: format.memory_planes,
            }));
        }
        let (w, h) = (self.width as usize, self.height as usize);
        // The whole image first: zero sizes and chroma subsampling.
        ImageLayout::new(w, h, format.pixel)
            .size_bytes(1)
            .map_err(|source| {
                bad(FormatProblem::Layout {
                    plane: 0,
                    bytes_per_line: self.planes[0].bytes_per_line,
                    source,
                })
            })?;
        let planes = self.planes[..described]
            .iter()
            .enumerate()
            .map(|(i, p)| checked_plane(format, w, h, i, *p).map_err(bad))
            .collect::<Result<Vec<_>>>()?;
        Ok(StreamFormat {
            format,
            width: self.width,
            height: self.height,
            planes,
            color: self.colorimetry.color_spec(format.pixel),
        })
    }

    /// The stream format, checked against what `VIDIOC_S_FMT` asked for
    /// (`VIDIOC_S_FMT`'s decision): [`stream_format`](Self::stream_format),
    /// then the same fourcc and size.
    ///
    /// # Errors
    /// Those of [`stream_format`](Self::stream_format);
    /// [`CaptureError::UnsupportedFormat`] when the driver chose another
    /// format; [`CaptureError::UnsupportedSize`] when it chose another size.
    pub fn stream_format_for(
        &self,
        path: &Path,
        format: CaptureFormat,
        width: u32,
        height: u32,
    ) -> Result<StreamFormat> {
        let got = self.stream_format(path)?;
        if got.format.fourcc != format.fourcc {
            return Err(CaptureError::UnsupportedFormat {
                path: path.to_path_buf(),
                fourcc: format.fourcc,
                offered: format!("the driver chose {} instead", got.format.fourcc),
            });
        }
        if (got.width, got.height) != (width, height) {
            return Err(CaptureError::UnsupportedSize {
                path: path.to_path_buf(),
                fourcc: format.fourcc,
                width,
                height,
                got_width: got.width,
                got_height: got.height,
            });
        }
        Ok(got)
    }
}

/// Memory plane `index` of `format` at `w`x`h`: its image layout (both image
/// planes of a one-buffer NV12/NV16; one of them for NV12M/NV16M), checked
/// to fit `sizeimage`. A `bytesperline` of 0 becomes the packed row.
fn checked_plane(
    format: CaptureFormat,
    w: usize,
    h: usize,
    index: usize,
    reply: PlaneLayout,
) -> std::result::Result<PlaneLayout, FormatProblem> {
    let layout = if format.memory_planes == 1 {
        ImageLayout::new(w, h, format.pixel)
    } else {
        ImageLayout::new(w, format.pixel.plane_rows(index, h), PixelFormat::Grey)
    };
    let packed = format.pixel.plane_row_samples(index, w);
    let stride = match reply.bytes_per_line {
        0 => packed,
        bpl => bpl as usize,
    };
    let layout_error = |source| FormatProblem::Layout {
        plane: index,
        bytes_per_line: reply.bytes_per_line,
        source,
    };
    let bytes_per_line = u32::try_from(stride).map_err(|_| {
        layout_error(zerocam_tensor::Error::BadImageSize {
            format: format.pixel,
            width: w,
            height: h,
            reason: "a packed row does not fit bytesperline's 32 bits",
        })
    })?;
    let needed = layout
        .with_row_stride(stride)
        .size_bytes(1)
        .map_err(layout_error)?;
    if needed > reply.size as usize {
        let rows = (0..layout.format.plane_count())
            .map(|p| layout.format.plane_rows(p, layout.height))
            .sum();
        return Err(FormatProblem::PlaneTooSmall {
            plane: index,
            bytes_per_line: reply.bytes_per_line,
            rows,
            needed,
            size: reply.size,
        });
    }
    Ok(PlaneLayout {
        bytes_per_line,
        size: reply.size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(fourcc: &[u8; 4], w: u32, h: u32, planes: &[(u32, u32)]) -> FormatReply {
        FormatReply {
            fourcc: FourCc(*fourcc),
            width: w,
            height: h,
            field: raw::FIELD_NONE,
            num_planes: planes.len() as u8,
            planes: planes
                .iter()
                .map(|&(bytes_per_line, size)| PlaneLayout {
                    bytes_per_line,
                    size,
                })
                .collect(),
            colorimetry: Colorimetry::default(),
        }
    }

    fn problem(r: &FormatReply) -> FormatProblem {
        match r.stream_format(Path::new("/dev/fake")) {
            Err(CaptureError::BadFormat { problem, .. }) => problem,
            other => panic!("expected BadFormat, got {other:?}"),
        }
    }

    #[test]
    fn vivid_replies_are_taken_as_they_are() {
        let p = Path::new("/dev/video1");
        let f = reply(b"NV12", 320, 180, &[(320, 86400)])
            .stream_format(p)
            .unwrap();
        assert_eq!(
            f.planes,
            [PlaneLayout {
                bytes_per_line: 320,
                size: 86400
            }]
        );
        let f = reply(b"NM12", 320, 180, &[(384, 384 * 180), (384, 384 * 90)])
            .stream_format(p)
            .unwrap();
        assert_eq!(
            (f.format.memory_planes, f.planes[1].bytes_per_line),
            (2, 384)
        );
        let f = reply(b"YUYV", 640, 480, &[(0, 640 * 480 * 2)])
            .stream_format(p)
            .unwrap();
        assert_eq!(f.planes[0].bytes_per_line, 1280, "0 is a packed row");
    }

    #[test]
    fn hostile_replies_are_named() {
        let nv12 = |planes: &[(u32, u32)]| reply(b"NV12", 320, 180, planes);
        assert!(matches!(
            problem(&nv12(&[(320, 86399)])),
            FormatProblem::PlaneTooSmall {
                needed: 86400,
                size: 86399,
                rows: 270,
                ..
            }
        ));
        assert!(matches!(
            problem(&nv12(&[(319, 86400)])),
            FormatProblem::Layout {
                bytes_per_line: 319,
                ..
            }
        ));
        assert!(matches!(
            problem(&nv12(&[(320, 86400), (320, 86400)])),
            FormatProblem::PlaneCount {
                described: 2,
                expected: 1,
                ..
            }
        ));
        let mut r = nv12(&[(320, 86400)]);
        r.num_planes = 9;
        assert!(matches!(
            problem(&r),
            FormatProblem::PlaneCount { described: 9, .. }
        ));
        r = nv12(&[(320, 86400)]);
        r.field = 7; // V4L2_FIELD_ALTERNATE
        assert!(matches!(problem(&r), FormatProblem::Field { field: 7 }));
        r = reply(b"NV12", 321, 180, &[(400, 1 << 20)]);
        assert!(
            matches!(problem(&r), FormatProblem::Layout { plane: 0, .. }),
            "odd width"
        );
        r = reply(b"RGB3", u32::MAX, u32::MAX, &[(0, u32::MAX)]);
        let e = problem(&r);
        assert!(
            matches!(
                e,
                FormatProblem::Layout { .. } | FormatProblem::PlaneTooSmall { .. }
            ),
            "{e}"
        );
        let e = reply(b"MJPG", 320, 180, &[(0, 1000)])
            .stream_format(Path::new("/dev/fake"))
            .unwrap_err();
        assert!(matches!(e, CaptureError::UnsupportedFormat { .. }), "{e}");
    }

    #[test]
    fn a_different_answer_than_asked_is_refused() {
        let p = Path::new("/dev/fake");
        let nv12: CaptureFormat = "NV12".parse().unwrap();
        let r = reply(b"YUYV", 320, 180, &[(640, 640 * 180)]);
        let e = r.stream_format_for(p, nv12, 320, 180).unwrap_err();
        assert!(
            e.to_string().contains("the driver chose YUYV instead"),
            "{e}"
        );
        let r = reply(b"NV12", 320, 240, &[(320, 320 * 360)]);
        let e = r.stream_format_for(p, nv12, 320, 180).unwrap_err();
        assert!(
            matches!(
                e,
                CaptureError::UnsupportedSize {
                    got_height: 240,
                    ..
                }
            ),
            "{e}"
        );
    }
}
