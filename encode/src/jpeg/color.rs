//! The colour transform from a frame's YCbCr ([`ColorSpec`]) to JFIF's:
//! BT.601 full range, which every JPEG decoder assumes.

use zerocam_tensor::ColorSpec;

/// Fixed-point fraction bits of the mixed tables.
const SHIFT: u32 = 16;
/// Coefficients smaller than this are zero (float noise of `F · M`).
const EPSILON: f32 = 1e-4;

/// `s -> clamp((s * mul + add) >> SHIFT)`: one component from itself, in
/// integer arithmetic the compiler vectorizes (SSE2/AVX2, NEON), where a
/// table lookup per sample would not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Affine {
    mul: i32,
    add: i32,
}

impl Affine {
    /// Samples as they are.
    pub(crate) const IDENTITY: Affine = Affine {
        mul: 1 << SHIFT,
        add: 0,
    };

    /// The sample `s` through it.
    #[inline(always)]
    pub(crate) fn apply(self, s: u8) -> u8 {
        ((i32::from(s) * self.mul + self.add) >> SHIFT).clamp(0, 255) as u8
    }
}

/// The transforms to JFIF's colour.
#[derive(Debug, Clone)]
pub(crate) enum Transform {
    /// The source already is BT.601 full range: samples are copied as they
    /// are (and the luma plane is handed to libjpeg-turbo in place).
    Identity,
    /// Each component from itself (BT.601 limited range: a range
    /// expansion): Y, Cb, Cr.
    Separate([Affine; 3]),
    /// Y from Y, Cb and Cr; Cb and Cr from both chroma samples (BT.709
    /// sources: another matrix).
    Mixed(Box<Mixed>),
}

/// Fixed-point tables of a full 3x3 transform (`SHIFT` fraction bits; the
/// output offsets and rounding are in the first table of each component).
#[derive(Debug, Clone)]
pub(crate) struct Mixed {
    /// Y' = (y[0][Y] + y[1][Cb] + y[2][Cr]) >> SHIFT.
    pub y: [[i32; 256]; 3],
    /// Cb' = (cb[0][Cb] + cb[1][Cr]) >> SHIFT.
    pub cb: [[i32; 256]; 2],
    /// Cr' = (cr[0][Cb] + cr[1][Cr]) >> SHIFT.
    pub cr: [[i32; 256]; 2],
}

/// A fixed-point sum back to a clamped 8-bit sample.
#[inline]
pub(crate) fn clamp(sum: i32) -> u8 {
    (sum >> SHIFT).clamp(0, 255) as u8
}

impl Transform {
    /// The transform from `spec` to BT.601 full range.
    pub(crate) fn to_jfif(spec: ColorSpec) -> Transform {
        if spec == ColorSpec::BT601_FULL {
            return Transform::Identity;
        }
        let t = matrix(spec);
        let off = spec.ycbcr_offsets();
        let one = (1i32 << SHIFT) as f32;
        // Sample s of component j contributes 255 * t[i][j] * (s/255 - off[j]).
        let table = |i: usize, j: usize, bias: f32| -> [i32; 256] {
            std::array::from_fn(|s| {
                let v = 255.0 * t[i][j] * (s as f32 / 255.0 - off[j]) + bias;
                (v * one).round() as i32
            })
        };
        let zero = |i: usize, j: usize| t[i][j].abs() < EPSILON;
        let separate = zero(0, 1) && zero(0, 2) && zero(1, 2) && zero(2, 1);
        // + 0.5: round to nearest on the shift.
        let (y0, cb0, cr1) = (table(0, 0, 0.5), table(1, 1, 128.5), table(2, 2, 128.5));
        if separate {
            // 255 * t * (s/255 - off) + bias = t * s + (bias - 255 * t * off).
            let affine = |i: usize, bias: f32| Affine {
                mul: (t[i][i] * one).round() as i32,
                add: ((bias - 255.0 * t[i][i] * off[i]) * one).round() as i32,
            };
            return Transform::Separate([affine(0, 0.5), affine(1, 128.5), affine(2, 128.5)]);
        }
        Transform::Mixed(Box::new(Mixed {
            y: [y0, table(0, 1, 0.0), table(0, 2, 0.0)],
            cb: [cb0, table(1, 2, 0.0)],
            cr: [table(2, 1, 0.0), cr1],
        }))
    }

    /// The per-component maps a gathering pass applies: the transform's
    /// own when separate, the identity otherwise (a mixed transform runs
    /// after the gathering, on the raw samples).
    pub(crate) fn affines(&self) -> [Affine; 3] {
        match self {
            Transform::Separate(a) => *a,
            _ => [Affine::IDENTITY; 3],
        }
    }
}

/// `F · M`: the source's YCbCr → RGB matrix (normalised, offsets removed)
/// followed by JFIF's RGB → YCbCr (BT.601, full range, chroma centred on 0).
/// Only the chroma of gray is 0 in both, so `t[1][0]` and `t[2][0]` vanish.
fn matrix(spec: ColorSpec) -> [[f32; 3]; 3] {
    let m = spec.rgb_matrix();
    let (kr, kb) = (0.299f32, 0.114f32);
    let kg = 1.0 - kr - kb;
    let f = [
        [kr, kg, kb],
        [-kr / (2.0 * (1.0 - kb)), -kg / (2.0 * (1.0 - kb)), 0.5],
        [0.5, -kg / (2.0 * (1.0 - kr)), -kb / (2.0 * (1.0 - kr))],
    ];
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| f[i][k] * m[k][j]).sum()))
}

/// A sample triple through the transform: the reference the tests check
/// the tables against (the same RGB as `ColorSpec::to_rgb`, re-encoded).
#[cfg(test)]
pub(crate) fn reference(spec: ColorSpec, [y, cb, cr]: [u8; 3]) -> [u8; 3] {
    use zerocam_tensor::YcbcrToRgb as _;
    let [r, g, b] = spec.to_rgb_normalized([y, cb, cr].map(|v| f32::from(v) / 255.0));
    let yy = 0.299 * r + 0.587 * g + 0.114 * b;
    let cb = (b - yy) / 1.772 + 0.5;
    let cr = (r - yy) / 1.402 + 0.5;
    [yy, cb, cr].map(|v| (v * 255.0).round().clamp(0.0, 255.0) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocam_tensor::YcbcrToRgb as _;

    fn apply(t: &Transform, [y, cb, cr]: [u8; 3]) -> [u8; 3] {
        match t {
            Transform::Identity => [y, cb, cr],
            Transform::Separate(a) => [a[0].apply(y), a[1].apply(cb), a[2].apply(cr)],
            Transform::Mixed(m) => {
                let (y, cb, cr) = (y as usize, cb as usize, cr as usize);
                [
                    clamp(m.y[0][y] + m.y[1][cb] + m.y[2][cr]),
                    clamp(m.cb[0][cb] + m.cb[1][cr]),
                    clamp(m.cr[0][cb] + m.cr[1][cr]),
                ]
            }
        }
    }

    #[test]
    fn each_spec_gets_the_transform_it_needs() {
        assert!(matches!(
            Transform::to_jfif(ColorSpec::BT601_FULL),
            Transform::Identity
        ));
        assert!(matches!(
            Transform::to_jfif(ColorSpec::BT601_LIMITED),
            Transform::Separate(_)
        ));
        assert!(matches!(
            Transform::to_jfif(ColorSpec::BT709_LIMITED),
            Transform::Mixed(_)
        ));
        assert!(matches!(
            Transform::to_jfif(ColorSpec::BT709_FULL),
            Transform::Mixed(_)
        ));
    }

    #[test]
    fn limited_range_expands_to_full() {
        let t = Transform::to_jfif(ColorSpec::BT601_LIMITED);
        assert_eq!(apply(&t, [16, 128, 128]), [0, 128, 128]);
        // Cb 16 is -127.5 from the centre: half way, rounded up.
        assert_eq!(apply(&t, [235, 16, 240]), [255, 1, 255]);
        assert_eq!(
            apply(&t, [0, 128, 128]),
            [0, 128, 128],
            "clamped below black"
        );
    }

    #[test]
    fn the_tables_agree_with_the_float_reference() {
        for spec in [
            ColorSpec::BT601_LIMITED,
            ColorSpec::BT709_LIMITED,
            ColorSpec::BT709_FULL,
        ] {
            let t = Transform::to_jfif(spec);
            for y in (16..=235).step_by(17) {
                for cb in (40..=216).step_by(22) {
                    for cr in (40..=216).step_by(22) {
                        let (got, want) = (apply(&t, [y, cb, cr]), reference(spec, [y, cb, cr]));
                        // The reference clamps RGB; in-gamut samples agree.
                        let rgb = spec.to_rgb(y, cb, cr);
                        if rgb.iter().any(|&c| c == 0 || c == 255) {
                            continue;
                        }
                        for c in 0..3 {
                            assert!(
                                got[c].abs_diff(want[c]) <= 1,
                                "{spec} {:?}: {got:?} vs {want:?}",
                                [y, cb, cr]
                            );
                        }
                    }
                }
            }
        }
    }
}
