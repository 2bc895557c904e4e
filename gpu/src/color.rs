//! The uniforms the GL shaders take for a [`ColorSpec`] (the types and
//! their equations live in zerocam-tensor and are re-exported here).

pub use zerocam_tensor::{ColorSpec, Matrix, Range, YcbcrToRgb};

/// The matrix in GL's column-major order (for `glUniformMatrix3fv`).
#[cfg_attr(not(feature = "gl"), allow(dead_code))] // the shaders' uniform
pub(crate) fn matrix_columns(spec: ColorSpec) -> [f32; 9] {
    let m = spec.rgb_matrix();
    [
        m[0][0], m[1][0], m[2][0], m[0][1], m[1][1], m[2][1], m[0][2], m[1][2], m[2][2],
    ]
}
