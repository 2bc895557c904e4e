//! [`ColorSpec`]: how a YCbCr image's samples are to be read — which matrix
//! and which quantisation range. Frames carry one
//! (`zerocam_capture::Frame::color_spec`); conversions take one
//! (`Gpu::convert`, the CPU preprocessing path), and its equations are here
//! ([`YcbcrToRgb`], [`ColorSpec::rgb_matrix`]).

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

/// YCbCr → RGB with a [`ColorSpec`]'s equations: the CPU reference of the
/// GPU conversion.
///
/// ```
/// use zerocam_tensor::{ColorSpec, Matrix, Range, YcbcrToRgb};
/// let spec = ColorSpec::default(); // BT.601, limited
/// assert_eq!(spec.to_rgb(81, 90, 240), [254, 0, 0]); // vivid's red
/// assert_eq!(ColorSpec::new(Matrix::Bt709, Range::Full).to_rgb(128, 128, 128), [128, 128, 128]);
/// ```
pub trait YcbcrToRgb {
    /// Converts normalised (0..1) Y, Cb, Cr to normalised RGB, clamped.
    fn to_rgb_normalized(self, yuv: [f32; 3]) -> [f32; 3];

    /// Converts one 8-bit Y, Cb, Cr sample to 8-bit RGB (rounded).
    fn to_rgb(self, y: u8, cb: u8, cr: u8) -> [u8; 3];
}

impl YcbcrToRgb for ColorSpec {
    #[inline]
    fn to_rgb_normalized(self, yuv: [f32; 3]) -> [f32; 3] {
        let off = self.ycbcr_offsets();
        let m = self.rgb_matrix();
        let d = [yuv[0] - off[0], yuv[1] - off[1], yuv[2] - off[2]];
        m.map(|row| (row[0] * d[0] + row[1] * d[1] + row[2] * d[2]).clamp(0.0, 1.0))
    }

    #[inline]
    fn to_rgb(self, y: u8, cb: u8, cr: u8) -> [u8; 3] {
        let n = |v: u8| f32::from(v) / 255.0;
        self.to_rgb_normalized([n(y), n(cb), n(cr)])
            .map(|c| (c * 255.0).round() as u8)
    }
}

/// `(Kr, Kb)` of the matrix.
#[inline]
fn weights(matrix: Matrix) -> (f32, f32) {
    match matrix {
        Matrix::Bt601 => (0.299, 0.114),
        Matrix::Bt709 => (0.2126, 0.0722),
    }
}

impl ColorSpec {
    /// The offsets subtracted from normalised (0..1) Y, Cb, Cr.
    #[inline]
    pub fn ycbcr_offsets(self) -> [f32; 3] {
        let y = match self.range {
            Range::Limited => 16.0 / 255.0,
            Range::Full => 0.0,
        };
        [y, 128.0 / 255.0, 128.0 / 255.0]
    }

    /// The 3x3 matrix from offset-removed normalised YCbCr to RGB, row major.
    #[inline]
    pub fn rgb_matrix(self) -> [[f32; 3]; 3] {
        let (kr, kb) = weights(self.matrix);
        let kg = 1.0 - kr - kb;
        let (ys, cs) = match self.range {
            Range::Limited => (255.0 / 219.0, 255.0 / 224.0),
            Range::Full => (1.0, 1.0),
        };
        [
            [ys, 0.0, 2.0 * (1.0 - kr) * cs],
            [
                ys,
                -2.0 * kb * (1.0 - kb) / kg * cs,
                -2.0 * kr * (1.0 - kr) / kg * cs,
            ],
            [ys, 2.0 * (1.0 - kb) * cs, 0.0],
        ]
    }
}
