//! A screenshot: the PNG Chromium sent, and its pixels decoded to RGB.

use std::io::Cursor;
use std::path::Path;

use super::BrowserError;

/// A PNG screenshot of a tab's viewport, decoded.
#[derive(Debug, Clone)]
pub struct Screenshot {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The PNG as Chromium encoded it.
    pub png: Vec<u8>,
    /// The pixels, 8-bit RGB, row by row, `width * 3` bytes a row.
    rgb: Vec<u8>,
}

impl Screenshot {
    /// Decodes `png` (any color type and bit depth; alpha is dropped, 16-bit
    /// samples are cut to 8).
    pub(super) fn decode(png: Vec<u8>) -> Result<Screenshot, BrowserError> {
        let err = |e: png::DecodingError| BrowserError::Png {
            message: e.to_string(),
        };
        let mut decoder = png::Decoder::new(Cursor::new(&png));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().map_err(err)?;
        let size = reader
            .output_buffer_size()
            .ok_or_else(|| BrowserError::Png {
                message: "the image is too large to decode".to_owned(),
            })?;
        let mut buf = vec![0; size];
        let info = reader.next_frame(&mut buf).map_err(err)?;
        let channels = match info.color_type {
            png::ColorType::Grayscale => 1,
            png::ColorType::GrayscaleAlpha => 2,
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => {
                return Err(BrowserError::Png {
                    message: format!("unexpected color type {other:?} after expansion"),
                })
            }
        };
        let (width, height) = (info.width, info.height);
        let row = width as usize * channels;
        let mut rgb = Vec::with_capacity(width as usize * height as usize * 3);
        for line in buf.chunks(info.line_size).take(height as usize) {
            for px in line.get(..row).unwrap_or(line).chunks_exact(channels) {
                if channels < 3 {
                    rgb.extend_from_slice(&[px[0]; 3]);
                } else {
                    rgb.extend_from_slice(&px[..3]);
                }
            }
        }
        Ok(Screenshot {
            width,
            height,
            png,
            rgb,
        })
    }

    /// The pixel at column `x`, row `y` (from the top-left) as `[r, g, b]`.
    ///
    /// # Panics
    ///
    /// If (`x`, `y`) lies outside the image; the message names both.
    pub fn rgb(&self, x: u32, y: u32) -> [u8; 3] {
        assert!(
            x < self.width && y < self.height,
            "pixel ({x}, {y}) is outside the {}x{} screenshot",
            self.width,
            self.height
        );
        let at = (y as usize * self.width as usize + x as usize) * 3;
        [self.rgb[at], self.rgb[at + 1], self.rgb[at + 2]]
    }

    /// Writes the PNG to `path` (to look at a failing test's page).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, &self.png)
    }
}
