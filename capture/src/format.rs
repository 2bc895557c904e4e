//! Fourccs and the catalogue of capture formats zerocam hands out as tensors.

use std::fmt;
use std::str::FromStr;

use zerocam_tensor::PixelFormat;

use crate::ArgumentError;

/// A V4L2 pixel format code, e.g. `NV12` or `NM12` (NV12M).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FourCc(pub [u8; 4]);

impl FourCc {
    /// The kernel's `u32` form.
    pub const fn to_u32(self) -> u32 {
        u32::from_le_bytes(self.0)
    }

    /// From the kernel's `u32` form.
    pub const fn from_u32(v: u32) -> FourCc {
        FourCc(v.to_le_bytes())
    }
}

impl fmt::Display for FourCc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in &self.0 {
            let c = if b.is_ascii_graphic() { b as char } else { '.' };
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for FourCc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FourCc({self})")
    }
}

/// A capture format zerocam can turn into a tensor: its fourcc, the pixel
/// layout, and how many memory planes (separate buffers) a frame has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CaptureFormat {
    /// The V4L2 code.
    pub fourcc: FourCc,
    /// The name users type (`NV12M`, `RGB24`).
    pub name: &'static str,
    /// The pixel layout of the frame.
    pub pixel: PixelFormat,
    /// Memory planes: 2 for `NV12M`/`NV16M` (luma and chroma in separate
    /// buffers), 1 otherwise.
    pub memory_planes: usize,
}

/// Every format zerocam captures.
pub const CAPTURE_FORMATS: [CaptureFormat; 9] = [
    fmt(*b"NV12", "NV12", PixelFormat::Nv12, 1),
    fmt(*b"NM12", "NV12M", PixelFormat::Nv12, 2),
    fmt(*b"NV16", "NV16", PixelFormat::Nv16, 1),
    fmt(*b"NM16", "NV16M", PixelFormat::Nv16, 2),
    fmt(*b"YUYV", "YUYV", PixelFormat::Yuyv, 1),
    fmt(*b"UYVY", "UYVY", PixelFormat::Uyvy, 1),
    fmt(*b"RGB3", "RGB24", PixelFormat::Rgb, 1),
    fmt(*b"BGR3", "BGR24", PixelFormat::Bgr, 1),
    fmt(*b"GREY", "GREY", PixelFormat::Grey, 1),
];

const fn fmt(
    code: [u8; 4],
    name: &'static str,
    pixel: PixelFormat,
    planes: usize,
) -> CaptureFormat {
    CaptureFormat {
        fourcc: FourCc(code),
        name,
        pixel,
        memory_planes: planes,
    }
}

impl CaptureFormat {
    /// The format with V4L2 code `fourcc`.
    pub fn from_fourcc(fourcc: FourCc) -> Option<CaptureFormat> {
        CAPTURE_FORMATS.into_iter().find(|f| f.fourcc == fourcc)
    }

    /// The names of [`CAPTURE_FORMATS`], comma-separated, for messages.
    ///
    /// ```
    /// assert_eq!(
    ///     zerocam_capture::CaptureFormat::names(),
    ///     "NV12, NV12M, NV16, NV16M, YUYV, UYVY, RGB24, BGR24, GREY"
    /// );
    /// ```
    pub fn names() -> String {
        CAPTURE_FORMATS.map(|f| f.name).join(", ")
    }
}

impl FromStr for CaptureFormat {
    type Err = ArgumentError;

    /// Parses a name (`NV12M`, `rgb24`) or a fourcc (`NM12`, `RGB3`), any case.
    ///
    /// ```
    /// use zerocam_capture::CaptureFormat;
    /// let f: CaptureFormat = "nv12m".parse()?;
    /// assert_eq!((f.fourcc.to_string().as_str(), f.memory_planes), ("NM12", 2));
    /// assert!("MJPG".parse::<CaptureFormat>().is_err());
    /// # Ok::<(), zerocam_capture::ArgumentError>(())
    /// ```
    fn from_str(s: &str) -> Result<CaptureFormat, ArgumentError> {
        CAPTURE_FORMATS
            .into_iter()
            .find(|f| {
                f.name.eq_ignore_ascii_case(s) || f.fourcc.to_string().eq_ignore_ascii_case(s)
            })
            .ok_or_else(|| ArgumentError::UnknownFormat(s.to_owned()))
    }
}

/// Parses `WIDTHxHEIGHT`.
///
/// ```
/// assert_eq!(zerocam_capture::format::parse_size("1280x720"), Ok((1280, 720)));
/// assert!(zerocam_capture::format::parse_size("1280").is_err());
/// ```
pub fn parse_size(s: &str) -> Result<(u32, u32), ArgumentError> {
    let bad = || ArgumentError::BadSize(s.to_owned());
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if w == 0 || h == 0 {
        return Err(bad());
    }
    Ok((w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_fourccs_parse() {
        for f in CAPTURE_FORMATS {
            assert_eq!(f.name.parse::<CaptureFormat>(), Ok(f));
            assert_eq!(f.fourcc.to_string().parse::<CaptureFormat>(), Ok(f));
            assert_eq!(
                CaptureFormat::from_fourcc(FourCc::from_u32(f.fourcc.to_u32())),
                Some(f)
            );
        }
        assert_eq!(
            "H264".parse::<CaptureFormat>(),
            Err(ArgumentError::UnknownFormat("H264".into()))
        );
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("640X480"), Ok((640, 480)));
        for bad in ["0x480", "640x", "x", "axb", ""] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fourcc_displays_printable() {
        assert_eq!(FourCc(*b"NM12").to_string(), "NM12");
        assert_eq!(FourCc([0, b'A', 0xff, b' ']).to_string(), ".A..");
    }
}
