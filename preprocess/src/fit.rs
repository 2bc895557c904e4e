//! [`Fit`]: how a frame (or a crop of it) is placed into a model's input, and
//! [`FitPlacement`], the placement worked out for one source size — with the
//! way back from model coordinates to frame pixels.

use zerocam_tensor::Region;

use super::error::ModelInputError;

/// How a source is fitted into the model's width and height.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Fit {
    /// Scale each axis on its own to fill the input (the aspect ratio changes).
    #[default]
    Stretch,
    /// Cut the largest centred rectangle of the model's aspect ratio out of the
    /// source, then scale it to fill the input.
    Crop,
    /// Scale the whole source by one factor to fit inside the input, centred;
    /// the bars on either side hold `pad` (RGB, 0..=255, normalized like a
    /// pixel). YOLO's `letterbox` uses `(114, 114, 114)`.
    Letterbox {
        /// The bars' colour.
        pad: [u8; 3],
    },
}

impl Fit {
    /// The colour of the bars: the letterbox's pad, black for the fits
    /// that have none.
    pub fn pad(self) -> [u8; 3] {
        match self {
            Fit::Letterbox { pad } => pad,
            Fit::Stretch | Fit::Crop => [0; 3],
        }
    }
}

/// A rectangle in source pixels with fractional edges (a centre crop of an odd
/// size starts between two pixels).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceRect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// Where a source lands in a model input: the source rectangle that is
/// sampled, and the rectangle of model pixels it fills (the whole input, but
/// for a letterbox's bars). Resampling maps one onto the other with half-pixel
/// centres.
///
/// ```
/// use zerocam_preprocess::{Fit, ModelInput};
/// use zerocam_tensor::Region;
/// let input = ModelInput::new(640, 640)?.fit(Fit::Letterbox { pad: [114; 3] });
/// let p = input.place(Region::new(0, 0, 1280, 720))?;
/// assert_eq!(p.target, Region::new(0, 140, 640, 360)); // bars above and below
/// assert_eq!(p.scale(), (0.5, 0.5));
/// // A box the model found, back in frame pixels.
/// assert_eq!(p.to_frame_box([100.0, 200.0, 300.0, 400.0]), [200.0, 120.0, 600.0, 520.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitPlacement {
    /// The part of the source that is sampled, in source pixels.
    pub source: SourceRect,
    /// The model pixels it fills.
    pub target: Region,
    /// The model input's width and height.
    pub model: (usize, usize),
}

impl Fit {
    /// Places `source` (a rectangle of the frame, in frame pixels) into a
    /// `width`x`height` model input.
    ///
    /// # Errors
    /// [`ModelInputError::ZeroSize`] for an empty source or input;
    /// [`ModelInputError::LetterboxTooSmall`] when a letterbox would scale one
    /// side of the source below one model pixel.
    pub fn place(
        self,
        source: Region,
        width: usize,
        height: usize,
    ) -> Result<FitPlacement, ModelInputError> {
        if width == 0 || height == 0 {
            return Err(ModelInputError::ZeroSize { width, height });
        }
        if source.width == 0 || source.height == 0 {
            return Err(ModelInputError::ZeroSize {
                width: source.width,
                height: source.height,
            });
        }
        let (sw, sh) = (source.width as f64, source.height as f64);
        let (mw, mh) = (width as f64, height as f64);
        let whole = SourceRect {
            x: source.x as f64,
            y: source.y as f64,
            width: sw,
            height: sh,
        };
        let full = Region::new(0, 0, width, height);
        let (src, target) = match self {
            Fit::Stretch => (whole, full),
            Fit::Crop => {
                // The model's aspect ratio, as large as the source allows.
                let src = if sw * mh > sh * mw {
                    let w = sh * mw / mh;
                    SourceRect {
                        x: whole.x + (sw - w) / 2.0,
                        width: w,
                        ..whole
                    }
                } else {
                    let h = sw * mh / mw;
                    SourceRect {
                        y: whole.y + (sh - h) / 2.0,
                        height: h,
                        ..whole
                    }
                };
                (src, full)
            }
            Fit::Letterbox { .. } => {
                let scale = (mw / sw).min(mh / sh);
                // Rounded to whole model pixels; the fitting side fills exactly.
                let w = ((sw * scale).round() as usize).min(width);
                let h = ((sh * scale).round() as usize).min(height);
                if w == 0 || h == 0 {
                    return Err(ModelInputError::LetterboxTooSmall {
                        source_width: source.width,
                        source_height: source.height,
                        width,
                        height,
                    });
                }
                let target = Region::new((width - w) / 2, (height - h) / 2, w, h);
                (whole, target)
            }
        };
        Ok(FitPlacement {
            source: src,
            target,
            model: (width, height),
        })
    }
}

impl FitPlacement {
    /// Model pixels per source pixel, `(x, y)` (equal for a letterbox up to
    /// the rounding of its size to whole pixels).
    pub fn scale(&self) -> (f64, f64) {
        (
            self.target.width as f64 / self.source.width,
            self.target.height as f64 / self.source.height,
        )
    }

    /// Where the top-left corner of the sampled source lands in the model
    /// input, in model pixels: the letterbox's offsets (0 for the other fits).
    pub fn offset(&self) -> (usize, usize) {
        (self.target.x, self.target.y)
    }

    /// A point in model pixels, in frame pixels.
    pub fn to_frame(&self, x: f64, y: f64) -> (f64, f64) {
        let (sx, sy) = self.scale();
        (
            self.source.x + (x - self.target.x as f64) / sx,
            self.source.y + (y - self.target.y as f64) / sy,
        )
    }

    /// A box `[x0, y0, x1, y1]` in model pixels, in frame pixels, clamped to
    /// the sampled source rectangle (a box reaching into a letterbox's bars
    /// ends at the frame's edge).
    pub fn to_frame_box(&self, b: [f64; 4]) -> [f64; 4] {
        let s = &self.source;
        let (x0, y0) = self.to_frame(b[0], b[1]);
        let (x1, y1) = self.to_frame(b[2], b[3]);
        let cx = |v: f64| v.clamp(s.x, s.x + s.width);
        let cy = |v: f64| v.clamp(s.y, s.y + s.height);
        [cx(x0), cy(y0), cx(x1), cy(y1)]
    }

    /// The source coordinate (x, y), in source pixels, that model pixel
    /// `(col, row)` samples: bilinear resampling with half-pixel centres (the
    /// OpenCV and GL convention). Pixels outside [`target`](FitPlacement::target)
    /// sample nothing (they are the pad).
    pub fn sample_point(&self, col: usize, row: usize) -> (f64, f64) {
        let (sx, sy) = self.scale();
        (
            self.source.x + (col as f64 - self.target.x as f64 + 0.5) / sx - 0.5,
            self.source.y + (row as f64 - self.target.y as f64 + 0.5) / sy - 0.5,
        )
    }
}

impl crate::ModelInput {
    /// Where `source` (a rectangle of the frame, in frame pixels) lands in
    /// this input, by its [`Fit`].
    ///
    /// # Errors
    /// As [`Fit::place`].
    pub fn place(&self, source: Region) -> Result<FitPlacement, ModelInputError> {
        self.fit_mode().place(source, self.width(), self.height())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crop_takes_the_centre_at_the_model_aspect() {
        let p = Fit::Crop
            .place(Region::new(0, 0, 1280, 720), 640, 640)
            .unwrap();
        assert_eq!(
            p.source,
            SourceRect {
                x: 280.0,
                y: 0.0,
                width: 720.0,
                height: 720.0
            }
        );
        assert_eq!(p.target, Region::new(0, 0, 640, 640));
        let tall = Fit::Crop
            .place(Region::new(10, 20, 300, 900), 300, 300)
            .unwrap();
        assert_eq!(
            (tall.source.x, tall.source.y, tall.source.height),
            (10.0, 320.0, 300.0)
        );
        // An odd fit starts between pixels.
        let odd = Fit::Crop.place(Region::new(0, 0, 5, 2), 2, 2).unwrap();
        assert_eq!((odd.source.x, odd.source.width), (1.5, 2.0));
    }

    #[test]
    fn stretch_fills_and_maps_back() {
        let p = Fit::Stretch
            .place(Region::new(0, 0, 1920, 1080), 640, 360)
            .unwrap();
        assert_eq!(p.scale(), (1.0 / 3.0, 1.0 / 3.0));
        assert_eq!(p.to_frame(320.0, 180.0), (960.0, 540.0));
        // Half-pixel centres: model pixel 0 samples source 1.0 (the centre of
        // the first three source pixels, 0..3).
        assert_eq!(p.sample_point(0, 0), (1.0, 1.0));
    }

    #[test]
    fn letterbox_bars_and_offsets() {
        let pad = Fit::Letterbox { pad: [114; 3] };
        let p = pad.place(Region::new(0, 0, 720, 1280), 640, 640).unwrap();
        assert_eq!(p.target, Region::new(140, 0, 360, 640));
        assert_eq!(p.offset(), (140, 0));
        assert_eq!(
            p.to_frame_box([0.0, 0.0, 640.0, 640.0]),
            [0.0, 0.0, 720.0, 1280.0]
        );
        let same = pad.place(Region::new(0, 0, 64, 64), 64, 64).unwrap();
        assert_eq!(same.target, Region::new(0, 0, 64, 64));
    }

    #[test]
    fn degenerate_sizes_are_errors() {
        let pad = Fit::Letterbox { pad: [0; 3] };
        assert!(matches!(
            pad.place(Region::new(0, 0, 4000, 2), 8, 8),
            Err(ModelInputError::LetterboxTooSmall {
                source_width: 4000,
                source_height: 2,
                ..
            })
        ));
        assert!(matches!(
            Fit::Crop.place(Region::new(0, 0, 0, 10), 8, 8),
            Err(ModelInputError::ZeroSize {
                width: 0,
                height: 10
            })
        ));
        assert!(Fit::Stretch.place(Region::new(0, 0, 8, 8), 0, 8).is_err());
    }
}
