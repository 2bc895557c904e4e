//! [`ColorSpec`]: which YUV → RGB equations a conversion uses.

/// The YUV matrix: which primaries' luma weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Matrix {
    /// ITU-R BT.601 (SD; most USB and CSI sensors, vivid's default).
    #[default]
    Bt601,
    /// ITU-R BT.709 (HD).
    Bt709,
}

/// The quantisation range of the YUV samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Range {
    /// Y in 16..=235, Cb/Cr in 16..=240 ("limited", "narrow", "TV").
    #[default]
    Limited,
    /// Y, Cb, Cr in 0..=255 ("full", "JPEG", "PC").
    Full,
}

/// The colour space of a YUV source: matrix and range. The default is BT.601
/// limited range, what V4L2 drivers report for SD YUV.
///
/// [`ColorSpec::to_rgb`] is the CPU reference of the GPU conversion:
///
/// ```
/// use zerocam_gpu::{ColorSpec, Matrix, Range};
/// let spec = ColorSpec::default(); // BT.601, limited
/// assert_eq!(spec.to_rgb(81, 90, 240), [254, 0, 0]); // vivid's red
/// assert_eq!(ColorSpec::new(Matrix::Bt709, Range::Full).to_rgb(128, 128, 128), [128, 128, 128]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ColorSpec {
    /// The matrix.
    pub matrix: Matrix,
    /// The range.
    pub range: Range,
}

impl ColorSpec {
    /// The spec `matrix`, `range`.
    pub const fn new(matrix: Matrix, range: Range) -> ColorSpec {
        ColorSpec { matrix, range }
    }

    /// `(Kr, Kb)` of the matrix.
    #[inline]
    fn weights(self) -> (f32, f32) {
        match self.matrix {
            Matrix::Bt601 => (0.299, 0.114),
            Matrix::Bt709 => (0.2126, 0.0722),
        }
    }

    /// The offsets subtracted from normalised (0..1) Y, Cb, Cr.
    #[inline]
    pub(crate) fn offsets(self) -> [f32; 3] {
        let y = match self.range {
            Range::Limited => 16.0 / 255.0,
            Range::Full => 0.0,
        };
        [y, 128.0 / 255.0, 128.0 / 255.0]
    }

    /// The 3x3 matrix from offset-removed normalised YCbCr to RGB, row major.
    #[inline]
    pub(crate) fn matrix_rows(self) -> [[f32; 3]; 3] {
        let (kr, kb) = self.weights();
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

    /// The matrix in GL's column-major order (for `glUniformMatrix3fv`).
    pub(crate) fn matrix_columns(self) -> [f32; 9] {
        let m = self.matrix_rows();
        [
            m[0][0], m[1][0], m[2][0], m[0][1], m[1][1], m[2][1], m[0][2], m[1][2], m[2][2],
        ]
    }

    /// Converts normalised (0..1) Y, Cb, Cr to normalised RGB, clamped.
    #[inline]
    pub fn to_rgb_normalized(self, yuv: [f32; 3]) -> [f32; 3] {
        let off = self.offsets();
        let m = self.matrix_rows();
        let d = [yuv[0] - off[0], yuv[1] - off[1], yuv[2] - off[2]];
        m.map(|row| (row[0] * d[0] + row[1] * d[1] + row[2] * d[2]).clamp(0.0, 1.0))
    }

    /// Converts one 8-bit Y, Cb, Cr sample to 8-bit RGB (rounded).
    #[inline]
    pub fn to_rgb(self, y: u8, cb: u8, cr: u8) -> [u8; 3] {
        let n = |v: u8| f32::from(v) / 255.0;
        self.to_rgb_normalized([n(y), n(cb), n(cr)])
            .map(|c| (c * 255.0).round() as u8)
    }
}
