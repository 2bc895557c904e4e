//! [`SourceImage`]: one image a [`Preprocessor`](super::Preprocessor) reads,
//! with its own crop and colour spec, so each camera of a batch is read its
//! own way.

use zerocam_tensor::{ColorSpec, Region, Tensor};

/// One source of a conversion: an image tensor (a camera frame's, a view,
/// a decoded picture), the rectangle of it to convert, and how to read its
/// YUV.
///
/// ```
/// use zerocam_preprocess::SourceImage;
/// use zerocam_tensor::{ColorSpec, Matrix, PixelFormat, Range, Region, Tensor, TensorMemory};
/// let frame = Tensor::<u8>::image(1280, 720, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
/// let whole = SourceImage::new(&frame); // all of it, BT.601 limited range
/// assert_eq!(whole.crop, None);
/// let left = SourceImage::new(&frame)
///     .with_crop(Some(Region::new(0, 0, 640, 720)))
///     .with_color(ColorSpec::new(Matrix::Bt709, Range::Full));
/// assert_eq!(left.crop.map(|r| r.width), Some(640));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SourceImage<'a> {
    /// The image: NV12, NV16, YUYV, UYVY, RGB, BGR, RGBA, BGRA or GREY
    /// samples (what the CPU and GPU paths take).
    pub tensor: &'a Tensor<u8>,
    /// The rectangle to convert, in the image's pixels (`None`: all of it).
    pub crop: Option<Region>,
    /// How its YUV is read (ignored for RGB sources).
    pub color: ColorSpec,
}

impl<'a> SourceImage<'a> {
    /// All of `tensor`, its YUV read as BT.601 limited range
    /// ([`ColorSpec::default`]).
    pub fn new(tensor: &'a Tensor<u8>) -> SourceImage<'a> {
        SourceImage {
            tensor,
            crop: None,
            color: ColorSpec::default(),
        }
    }

    /// The same, converting only `crop` (in the image's pixels; `None`:
    /// all of it).
    pub fn with_crop(self, crop: Option<Region>) -> SourceImage<'a> {
        SourceImage { crop, ..self }
    }

    /// The same, reading YUV as `color` (for a camera frame, its
    /// `color_spec()`: what its camera sends).
    pub fn with_color(self, color: ColorSpec) -> SourceImage<'a> {
        SourceImage { color, ..self }
    }
}

impl<'a> From<&'a Tensor<u8>> for SourceImage<'a> {
    fn from(tensor: &'a Tensor<u8>) -> SourceImage<'a> {
        SourceImage::new(tensor)
    }
}
