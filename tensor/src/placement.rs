//! [`ImagePlacement`]: where an image tensor lies in the allocation or import
//! it was cut from. A GPU import cache keys on the root, so every view and batch
//! element of one buffer shares one import (an EGLImage, a render target) and
//! becomes a crop or a viewport of it.

use crate::geometry::ImageGeom;
use crate::{Element, PixelFormat, Region, Tensor};

/// One plane of a root image: the buffer it lives in (0, or 1 for the chroma
/// of a two-buffer NV12M image), its byte offset there and its row stride.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PlanePlacement {
    /// 0 for the tensor's first buffer, 1 for its second (split planes).
    pub buffer: usize,
    /// Byte offset of the plane's first row in that buffer.
    pub offset: usize,
    /// Bytes between rows.
    pub stride: usize,
}

/// The allocation or import an image tensor comes from, as laid out in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RootLayout {
    /// Pixel format.
    pub format: PixelFormat,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Images in the batch (1 when not batched).
    pub batch: usize,
    /// Bytes between batch elements.
    pub batch_stride: usize,
    /// Bytes per sample (1 for `u8`).
    pub elem_size: usize,
    planes: [PlanePlacement; 3],
}

impl RootLayout {
    pub(crate) fn new(
        format: PixelFormat,
        (width, height): (usize, usize),
        (batch, batch_stride): (usize, usize),
        planes: [PlanePlacement; 3],
        elem_size: usize,
    ) -> RootLayout {
        RootLayout {
            format,
            width,
            height,
            batch,
            batch_stride,
            elem_size,
            planes,
        }
    }

    /// The format's planes (1, 2 or 3 of them).
    pub fn planes(&self) -> &[PlanePlacement] {
        &self.planes[..self.format.plane_count()]
    }

    /// Buffers the planes live in (1, or 2 for split planes).
    pub fn buffer_count(&self) -> usize {
        self.planes().iter().map(|p| p.buffer).max().unwrap_or(0) + 1
    }
}

/// Where an image tensor lies: its root image, the batch element and the
/// rectangle of it this tensor covers.
///
/// Two views of one buffer have equal roots (and the same
/// [`BufferIdentity`](crate::BufferIdentity)) and differ in `region`.
///
/// ```
/// use zerocam_tensor::{ImageLayout, PixelFormat, Region, Tensor, TensorMemory};
/// let t = Tensor::<u8>::builder_image(
///         ImageLayout::new(64, 32, PixelFormat::Rgb).with_batch(2))
///     .memory(TensorMemory::Mem)
///     .build()?;
/// let crop = t.batch(1)?.view(Region::new(8, 4, 16, 16))?;
/// let (whole, part) = (t.placement().unwrap(), crop.placement().unwrap());
/// assert_eq!(whole.root, part.root);
/// assert_eq!((part.frame, part.region), (1, Region::new(8, 4, 16, 16)));
/// assert_eq!((whole.frames, part.frames), (2, 1));
/// assert_eq!(part.root.planes()[0].stride, 64 * 3);
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImagePlacement {
    /// The image this tensor was cut from.
    pub root: RootLayout,
    /// The batch element (0 when not batched or not a batch element).
    pub frame: usize,
    /// Batch elements this tensor covers: the root's batch for a whole batched
    /// image, 1 for one element (`batch(n)`) or an unbatched image.
    pub frames: usize,
    /// The pixels of that element this tensor covers.
    pub region: Region,
}

impl ImagePlacement {
    pub(crate) fn of(g: &ImageGeom) -> ImagePlacement {
        ImagePlacement {
            root: g.root,
            frame: g.origin.frame,
            frames: g.batch,
            region: Region::new(g.origin.x, g.origin.y, g.width, g.height),
        }
    }
}

impl<T: Element> Tensor<T> {
    /// Where this image tensor lies in the image it was cut from; `None` for
    /// arrays (and for a [`plane`](Tensor::plane), which is an array).
    pub fn placement(&self) -> Option<ImagePlacement> {
        self.geometry().image().map(ImagePlacement::of)
    }
}
