//! [`ColorSpec`]: how a YCbCr image's samples are to be read — which matrix
//! and which quantisation range. Frames carry one
//! (`zerocam_capture::Frame::color_spec`); conversions take one
//! (`zerocam_gpu`'s `YcbcrToRgb`, `Gpu::convert`, `CpuPreprocessor`).

use std::fmt;

/// The YCbCr matrix: which primaries' luma weights (`Kr`, `Kb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Matrix {
    /// ITU-R BT.601 (SD; most USB and CSI sensors, vivid's default; also
    /// JPEG's and sYCC's matrix).
    #[default]
    Bt601,
    /// ITU-R BT.709 (HD).
    Bt709,
}

impl Matrix {
    /// Its short name: `bt601` or `bt709` (what Python's `Frame.color_spec` says).
    pub const fn name(self) -> &'static str {
        match self {
            Matrix::Bt601 => "bt601",
            Matrix::Bt709 => "bt709",
        }
    }
}

/// The quantisation range of the YCbCr samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Range {
    /// Y in 16..=235, Cb/Cr in 16..=240 ("limited", "narrow", "TV").
    #[default]
    Limited,
    /// Y, Cb, Cr in 0..=255 ("full", "JPEG", "PC").
    Full,
}

impl Range {
    /// Its short name: `limited` or `full` (what Python's `Frame.color_spec` says).
    pub const fn name(self) -> &'static str {
        match self {
            Range::Limited => "limited",
            Range::Full => "full",
        }
    }
}

/// The colour space of a YCbCr source: matrix and range. The default is
/// BT.601 limited range, what V4L2 drivers report for SD YCbCr and what the
/// V4L2 defaults give for a camera's sRGB colorspace.
///
/// ```
/// use zerocam_tensor::{ColorSpec, Matrix, Range};
/// assert_eq!(ColorSpec::default(), ColorSpec::BT601_LIMITED);
/// let hd = ColorSpec::new(Matrix::Bt709, Range::Full);
/// assert_eq!((hd.matrix.name(), hd.range.name()), ("bt709", "full"));
/// assert_eq!(hd.to_string(), "BT.709 full range");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ColorSpec {
    /// The matrix.
    pub matrix: Matrix,
    /// The range.
    pub range: Range,
}

impl ColorSpec {
    /// BT.601, limited range: SD video, V4L2's default for YCbCr.
    pub const BT601_LIMITED: ColorSpec = ColorSpec::new(Matrix::Bt601, Range::Limited);
    /// BT.601, full range: JPEG / sYCC.
    pub const BT601_FULL: ColorSpec = ColorSpec::new(Matrix::Bt601, Range::Full);
    /// BT.709, limited range: HD video.
    pub const BT709_LIMITED: ColorSpec = ColorSpec::new(Matrix::Bt709, Range::Limited);
    /// BT.709, full range.
    pub const BT709_FULL: ColorSpec = ColorSpec::new(Matrix::Bt709, Range::Full);

    /// The spec `matrix`, `range`.
    pub const fn new(matrix: Matrix, range: Range) -> ColorSpec {
        ColorSpec { matrix, range }
    }
}

impl fmt::Display for ColorSpec {
    /// `BT.601 limited range`, `BT.709 full range`, …
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let matrix = match self.matrix {
            Matrix::Bt601 => "BT.601",
            Matrix::Bt709 => "BT.709",
        };
        write!(f, "{matrix} {} range", self.range.name())
    }
}
