//! The YCbCr → RGB equations of a [`ColorSpec`] (the types live in
//! zerocam-tensor and are re-exported here): the CPU reference
//! ([`YcbcrToRgb`]) and the uniforms the GL shaders take.

pub use zerocam_tensor::{ColorSpec, Matrix, Range};

/// YCbCr → RGB with a [`ColorSpec`]'s equations: the CPU reference of the
/// GPU conversion.
///
/// ```
/// use zerocam_gpu::{ColorSpec, Matrix, Range, YcbcrToRgb};
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
        let off = offsets(self);
        let m = matrix_rows(self);
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

/// The offsets subtracted from normalised (0..1) Y, Cb, Cr.
#[inline]
pub(crate) fn offsets(spec: ColorSpec) -> [f32; 3] {
    let y = match spec.range {
        Range::Limited => 16.0 / 255.0,
        Range::Full => 0.0,
    };
    [y, 128.0 / 255.0, 128.0 / 255.0]
}

/// The 3x3 matrix from offset-removed normalised YCbCr to RGB, row major.
#[inline]
pub(crate) fn matrix_rows(spec: ColorSpec) -> [[f32; 3]; 3] {
    let (kr, kb) = weights(spec.matrix);
    let kg = 1.0 - kr - kb;
    let (ys, cs) = match spec.range {
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
#[cfg_attr(not(feature = "gl"), allow(dead_code))] // the shaders' uniform
pub(crate) fn matrix_columns(spec: ColorSpec) -> [f32; 9] {
    let m = matrix_rows(spec);
    [
        m[0][0], m[1][0], m[2][0], m[0][1], m[1][1], m[2][1], m[0][2], m[1][2], m[2][2],
    ]
}
