//! How a V4L2 format's colour fields (`colorspace`, `ycbcr_enc`,
//! `quantization`) become the [`ColorSpec`] its YCbCr is read with, by the
//! kernel's own default rules (`V4L2_MAP_YCBCR_ENC_DEFAULT`,
//! `V4L2_MAP_QUANTIZATION_DEFAULT` in `<linux/videodev2.h>`). A pure function
//! of the driver's numbers, any numbers: unknown values fall back to the
//! defaults, never to an error.

use zerocam_tensor::{ColorSpec, Matrix, PixelFormat, Range};

use crate::v4l2::ioctl::raw;

/// The colour fields of a V4L2 capture format (`struct v4l2_pix_format` or
/// `v4l2_pix_format_mplane`) as the driver set them: 0 is "default" in each.
///
/// ```
/// use zerocam_capture::Colorimetry;
/// use zerocam_tensor::{ColorSpec, PixelFormat};
///
/// // vivid's default: colorspace sRGB (8), encoding and quantization "default".
/// let srgb = Colorimetry { colorspace: 8, ycbcr_enc: 0, quantization: 0 };
/// assert_eq!(srgb.color_spec(PixelFormat::Nv12), ColorSpec::BT601_LIMITED);
/// // A UVC webcam's MJPEG-era YUYV: colorspace JPEG (7) is full range.
/// let jpeg = Colorimetry { colorspace: 7, ycbcr_enc: 0, quantization: 0 };
/// assert_eq!(jpeg.color_spec(PixelFormat::Yuyv), ColorSpec::BT601_FULL);
/// // HD: colorspace REC709 (3).
/// let hd = Colorimetry { colorspace: 3, ycbcr_enc: 0, quantization: 0 };
/// assert_eq!(hd.color_spec(PixelFormat::Nv12), ColorSpec::BT709_LIMITED);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Colorimetry {
    /// `colorspace` (`enum v4l2_colorspace`).
    pub colorspace: u32,
    /// `ycbcr_enc` (`enum v4l2_ycbcr_encoding`).
    pub ycbcr_enc: u32,
    /// `quantization` (`enum v4l2_quantization`).
    pub quantization: u32,
}

impl Colorimetry {
    /// The fields of an `S_FMT` asking for `color`
    /// ([`Device::set_format_color`](crate::Device::set_format_color)): its
    /// Y'CbCr encoding (601 or 709) and quantization (limited or full), and
    /// the driver's own `colorspace` unchanged — or sRGB when the driver's is
    /// not a colorspace (0 or unknown: the V4L2 core would reset the request's
    /// encoding and quantization to "default" with it).
    pub const fn request(color: ColorSpec, colorspace: u32) -> Colorimetry {
        Colorimetry {
            colorspace: match colorspace {
                1..=raw::COLORSPACE_DCI_P3 => colorspace,
                _ => raw::COLORSPACE_SRGB,
            },
            ycbcr_enc: match color.matrix {
                Matrix::Bt601 => raw::YCBCR_ENC_601,
                Matrix::Bt709 => raw::YCBCR_ENC_709,
            },
            quantization: match color.range {
                Range::Limited => raw::QUANTIZATION_LIM_RANGE,
                Range::Full => raw::QUANTIZATION_FULL_RANGE,
            },
        }
    }

    /// The YCbCr encoding in effect (`V4L2_YCBCR_ENC_*`, 1..=8): `ycbcr_enc`
    /// itself, or when it is 0 (default) or a value the uAPI does not define,
    /// `V4L2_MAP_YCBCR_ENC_DEFAULT(colorspace)`: 709 for REC709 and DCI-P3,
    /// BT2020 for BT2020, SMPTE240M for SMPTE240M, 601 for every other
    /// colorspace (SMPTE170M, sRGB, JPEG, opRGB, 470 M/BG, and 0 or unknown).
    pub const fn ycbcr_encoding(self) -> u32 {
        match self.ycbcr_enc {
            e @ raw::YCBCR_ENC_601..=raw::YCBCR_ENC_SMPTE240M => e,
            _ => match self.colorspace {
                raw::COLORSPACE_REC709 | raw::COLORSPACE_DCI_P3 => raw::YCBCR_ENC_709,
                raw::COLORSPACE_BT2020 => raw::YCBCR_ENC_BT2020,
                raw::COLORSPACE_SMPTE240M => raw::YCBCR_ENC_SMPTE240M,
                _ => raw::YCBCR_ENC_601,
            },
        }
    }

    /// The quantization in effect (`V4L2_QUANTIZATION_FULL_RANGE` 1 or
    /// `LIM_RANGE` 2): `quantization` itself, or when it is 0 (default) or
    /// undefined, `V4L2_MAP_QUANTIZATION_DEFAULT`: full range for RGB
    /// formats and for colorspace JPEG, limited for every other YCbCr.
    pub const fn quantization_in_effect(self, rgb: bool) -> u32 {
        match self.quantization {
            q @ (raw::QUANTIZATION_FULL_RANGE | raw::QUANTIZATION_LIM_RANGE) => q,
            _ if rgb || self.colorspace == raw::COLORSPACE_JPEG => raw::QUANTIZATION_FULL_RANGE,
            _ => raw::QUANTIZATION_LIM_RANGE,
        }
    }

    /// Whether zerocam reads the encoding in effect with another matrix's
    /// weights: BT.2020 (both), SMPTE 240M (see [`color_spec`](Self::color_spec)).
    pub const fn is_approximate(self) -> bool {
        matches!(
            self.ycbcr_encoding(),
            raw::YCBCR_ENC_BT2020 | raw::YCBCR_ENC_BT2020_CONST_LUM | raw::YCBCR_ENC_SMPTE240M
        )
    }

    /// The spec frames of this colorimetry are read with, for frames in
    /// `pixel` (RGB formats take full range by default, YCbCr and GREY limited).
    ///
    /// The matrix is that of [`ycbcr_encoding`](Self::ycbcr_encoding): BT.601
    /// for 601, xvYCC 601 and sYCC (the same equations; xvYCC's
    /// out-of-gamut values are clamped); BT.709 for 709 and xvYCC 709. zerocam
    /// has no equations for BT.2020 and SMPTE 240M: they are read as BT.709,
    /// the nearest (SMPTE 240M's `Kr`, `Kb` are within 0.015 of BT.709's,
    /// BT.2020's within 0.051; BT.601's are further from both), and
    /// [`is_approximate`](Self::is_approximate) says so. The range is
    /// [`quantization_in_effect`](Self::quantization_in_effect)'s. For RGB
    /// formats the spec only records the colorspace: no conversion reads it.
    pub const fn color_spec(self, pixel: PixelFormat) -> ColorSpec {
        let rgb = matches!(
            pixel,
            PixelFormat::Rgb | PixelFormat::Bgr | PixelFormat::Rgba | PixelFormat::Bgra
        );
        let matrix = match self.ycbcr_encoding() {
            raw::YCBCR_ENC_601 | raw::YCBCR_ENC_XV601 | raw::YCBCR_ENC_SYCC => Matrix::Bt601,
            raw::YCBCR_ENC_709 | raw::YCBCR_ENC_XV709 => Matrix::Bt709,
            // BT.2020 and SMPTE 240M: no equations of their own, BT.709's are the nearest.
            _ => Matrix::Bt709,
        };
        let range = match self.quantization_in_effect(rgb) {
            raw::QUANTIZATION_FULL_RANGE => Range::Full,
            _ => Range::Limited,
        };
        ColorSpec::new(matrix, range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raw::*;

    const COLORSPACE_DEFAULT: u32 = 0;
    const COLORSPACE_SMPTE170M: u32 = 1;

    fn fields(colorspace: u32, ycbcr_enc: u32, quantization: u32) -> Colorimetry {
        Colorimetry {
            colorspace,
            ycbcr_enc,
            quantization,
        }
    }

    fn spec(colorspace: u32, ycbcr_enc: u32, quantization: u32) -> ColorSpec {
        fields(colorspace, ycbcr_enc, quantization).color_spec(PixelFormat::Nv12)
    }

    #[test]
    fn each_colorspace_maps_by_the_kernels_default_rules() {
        let cases = [
            (COLORSPACE_DEFAULT, ColorSpec::BT601_LIMITED),
            (COLORSPACE_SMPTE170M, ColorSpec::BT601_LIMITED),
            (COLORSPACE_SMPTE240M, ColorSpec::BT709_LIMITED),
            (COLORSPACE_REC709, ColorSpec::BT709_LIMITED),
            (5, ColorSpec::BT601_LIMITED), // 470 System M
            (6, ColorSpec::BT601_LIMITED), // 470 System BG
            (COLORSPACE_JPEG, ColorSpec::BT601_FULL),
            (COLORSPACE_SRGB, ColorSpec::BT601_LIMITED),
            (9, ColorSpec::BT601_LIMITED), // opRGB
            (COLORSPACE_BT2020, ColorSpec::BT709_LIMITED),
            (11, ColorSpec::BT601_LIMITED), // RAW
            (COLORSPACE_DCI_P3, ColorSpec::BT709_LIMITED),
            (0xdead, ColorSpec::BT601_LIMITED), // not a colorspace
        ];
        for (colorspace, want) in cases {
            assert_eq!(spec(colorspace, 0, 0), want, "colorspace {colorspace}");
        }
    }

    #[test]
    fn the_encoding_in_effect_follows_v4l2_map_ycbcr_enc_default() {
        let enc = |colorspace, ycbcr_enc| fields(colorspace, ycbcr_enc, 0).ycbcr_encoding();
        assert_eq!(enc(COLORSPACE_SMPTE170M, 0), YCBCR_ENC_601);
        assert_eq!(enc(COLORSPACE_REC709, 0), YCBCR_ENC_709);
        assert_eq!(enc(COLORSPACE_SRGB, 0), YCBCR_ENC_601);
        assert_eq!(enc(COLORSPACE_JPEG, 0), YCBCR_ENC_601);
        assert_eq!(enc(COLORSPACE_BT2020, 0), YCBCR_ENC_BT2020);
        assert_eq!(enc(COLORSPACE_SMPTE240M, 0), YCBCR_ENC_SMPTE240M);
        assert_eq!(enc(COLORSPACE_DCI_P3, 0), YCBCR_ENC_709);
        // A set encoding wins over the colorspace's; an undefined one does not.
        assert_eq!(enc(COLORSPACE_SRGB, YCBCR_ENC_709), YCBCR_ENC_709);
        assert_eq!(enc(COLORSPACE_REC709, YCBCR_ENC_601), YCBCR_ENC_601);
        assert_eq!(enc(COLORSPACE_REC709, 9), YCBCR_ENC_709);
        assert_eq!(enc(COLORSPACE_REC709, 128), YCBCR_ENC_709, "HSV_ENC_180");
    }

    #[test]
    fn each_encoding_reads_with_its_matrix_or_the_nearest() {
        let cases = [
            (YCBCR_ENC_601, Matrix::Bt601, false),
            (YCBCR_ENC_709, Matrix::Bt709, false),
            (YCBCR_ENC_XV601, Matrix::Bt601, false),
            (YCBCR_ENC_XV709, Matrix::Bt709, false),
            (YCBCR_ENC_SYCC, Matrix::Bt601, false),
            (YCBCR_ENC_BT2020, Matrix::Bt709, true),
            (YCBCR_ENC_BT2020_CONST_LUM, Matrix::Bt709, true),
            (YCBCR_ENC_SMPTE240M, Matrix::Bt709, true),
        ];
        for (ycbcr_enc, matrix, approximate) in cases {
            let c = fields(COLORSPACE_SRGB, ycbcr_enc, 0);
            assert_eq!(
                c.color_spec(PixelFormat::Yuyv).matrix,
                matrix,
                "{ycbcr_enc}"
            );
            assert_eq!(c.is_approximate(), approximate, "{ycbcr_enc}");
        }
    }

    #[test]
    fn nearest_matrix_is_the_nearest_by_weights() {
        // (Kr, Kb) of the encodings read as BT.709: closer to 709 than to 601.
        let dist = |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).hypot(a.1 - b.1);
        let (bt601, bt709) = ((0.299, 0.114), (0.2126, 0.0722));
        for other in [(0.2627, 0.0593), (0.212, 0.087)] {
            assert!(dist(other, bt709) < dist(other, bt601), "{other:?}");
            assert!(dist(other, bt709) < 0.052, "{other:?}");
        }
    }

    #[test]
    fn a_requested_colour_reads_back_as_itself_whatever_the_colorspace() {
        let specs = [
            ColorSpec::BT601_LIMITED,
            ColorSpec::BT601_FULL,
            ColorSpec::BT709_LIMITED,
            ColorSpec::BT709_FULL,
        ];
        for spec in specs {
            for colorspace in [COLORSPACE_SRGB, COLORSPACE_REC709, COLORSPACE_JPEG, 1, 12] {
                let c = Colorimetry::request(spec, colorspace);
                assert_eq!(c.colorspace, colorspace, "the driver's colorspace is kept");
                assert_eq!(c.color_spec(PixelFormat::Nv12), spec, "{colorspace}");
            }
            for not_a_colorspace in [0, 13, u32::MAX] {
                let c = Colorimetry::request(spec, not_a_colorspace);
                assert_eq!(c.colorspace, COLORSPACE_SRGB, "{not_a_colorspace}");
                assert_eq!(c.color_spec(PixelFormat::Nv12), spec);
            }
        }
    }

    #[test]
    fn quantization_follows_v4l2_map_quantization_default() {
        let range = |colorspace, quantization| spec(colorspace, 0, quantization).range;
        assert_eq!(range(COLORSPACE_SRGB, QUANTIZATION_FULL_RANGE), Range::Full);
        assert_eq!(
            range(COLORSPACE_JPEG, QUANTIZATION_LIM_RANGE),
            Range::Limited
        );
        assert_eq!(range(COLORSPACE_JPEG, 0), Range::Full);
        assert_eq!(range(COLORSPACE_JPEG, 7), Range::Full, "undefined: default");
        assert_eq!(range(COLORSPACE_REC709, 7), Range::Limited);
        let c = fields(COLORSPACE_SRGB, 0, 0);
        for pixel in [PixelFormat::Rgb, PixelFormat::Bgr, PixelFormat::Rgba] {
            assert_eq!(
                c.color_spec(pixel),
                ColorSpec::BT601_FULL,
                "{pixel:?} is RGB"
            );
        }
        for pixel in [PixelFormat::Grey, PixelFormat::Yuyv, PixelFormat::Nv16] {
            assert_eq!(c.color_spec(pixel), ColorSpec::BT601_LIMITED, "{pixel:?}");
        }
    }

    #[test]
    fn the_colour_fields_are_read_from_both_apis() {
        let p = std::path::Path::new("/dev/video1");
        // vivid after its Colorspace control is set to Rec. 709: colorspace
        // REC709, encoding and quantization left at "default".
        let mut f = raw::Format::new(raw::BUF_TYPE_VIDEO_CAPTURE);
        f.fmt.pix = raw::PixFormat {
            width: 320,
            height: 180,
            pixelformat: crate::FourCc(*b"YUYV").to_u32(),
            field: raw::FIELD_NONE,
            bytesperline: 640,
            sizeimage: 640 * 180,
            colorspace: raw::COLORSPACE_REC709,
            priv_: raw::PIX_FMT_PRIV_MAGIC,
            quantization: raw::QUANTIZATION_FULL_RANGE,
            ..Default::default()
        };
        let r = crate::v4l2::FormatReply::from_raw(&f).unwrap();
        let want = fields(COLORSPACE_REC709, 0, QUANTIZATION_FULL_RANGE);
        assert_eq!(r.colorimetry, want);
        assert_eq!(r.stream_format(p).unwrap().color, ColorSpec::BT709_FULL);
        // Without the magic, the extended fields are not the driver's: default.
        f.fmt.pix.priv_ = 0; // writing a Copy union field is safe
        let r = crate::v4l2::FormatReply::from_raw(&f).unwrap();
        assert_eq!(r.colorimetry.quantization, 0);
        assert_eq!(r.stream_format(p).unwrap().color, ColorSpec::BT709_LIMITED);

        let mut f = raw::Format::new(raw::BUF_TYPE_VIDEO_CAPTURE_MPLANE);
        let mut plane_fmt = [raw::PlanePixFormat::default(); raw::MAX_PLANES];
        plane_fmt[0] = raw::PlanePixFormat {
            sizeimage: 320 * 270,
            bytesperline: 320,
            reserved: [0; 6],
        };
        f.fmt.pix_mp = raw::PixFormatMplane {
            width: 320,
            height: 180,
            pixelformat: crate::FourCc(*b"NV12").to_u32(),
            field: raw::FIELD_NONE,
            colorspace: raw::COLORSPACE_JPEG,
            plane_fmt,
            num_planes: 1,
            ycbcr_enc: raw::YCBCR_ENC_709 as u8,
            ..Default::default()
        };
        let r = crate::v4l2::FormatReply::from_raw(&f).unwrap();
        assert_eq!(r.colorimetry.ycbcr_enc, raw::YCBCR_ENC_709);
        assert_eq!(r.stream_format(p).unwrap().color, ColorSpec::BT709_FULL);
    }
}
