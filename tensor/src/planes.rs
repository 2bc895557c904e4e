//! Multi-plane images: [`PlaneDescriptor`] and [`Tensor::from_planes`] /
//! [`Tensor::import_planes`] for NV12/NV16 whose planes are separate buffers
//! (V4L2 `NV12M`, VPU and ISP outputs) or one buffer at two offsets.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use crate::buffer::Buffer;
use crate::geometry::{ArrayGeom, Geometry, ImageGeom, PlaneGeom};
use crate::storage::fd::FdStorage;
use crate::storage::Storage;
use crate::{dup_fd, BufferIdentity, Element, Error, PixelFormat, Result, Tensor};

/// One plane of a multi-plane import: an owned (dup'd) fd, the byte offset of the
/// plane's first row in it, and its row stride (default: the packed row).
#[derive(Debug)]
pub struct PlaneDescriptor {
    fd: OwnedFd,
    stride: Option<usize>,
    offset: usize,
}

impl PlaneDescriptor {
    /// Duplicates `fd`; the caller keeps its own.
    ///
    /// # Errors
    /// [`Error::DupFailed`] for a closed fd or when out of fds.
    pub fn new(fd: BorrowedFd<'_>) -> Result<PlaneDescriptor> {
        Ok(PlaneDescriptor::from_owned(dup_fd(fd)?))
    }

    /// Takes `fd` as it is.
    pub fn from_owned(fd: OwnedFd) -> PlaneDescriptor {
        PlaneDescriptor {
            fd,
            stride: None,
            offset: 0,
        }
    }

    /// Rows `stride` bytes apart.
    pub fn with_stride(mut self, stride: usize) -> PlaneDescriptor {
        self.stride = Some(stride);
        self
    }

    /// The plane starts `offset` bytes into the fd.
    pub fn with_offset(mut self, offset: usize) -> PlaneDescriptor {
        self.offset = offset;
        self
    }

    /// The row stride, if set.
    pub fn stride(&self) -> Option<usize> {
        self.stride
    }

    /// The start offset.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The fd, borrowed.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn mismatch(format: PixelFormat, reason: String) -> Error {
    Error::PlaneMismatch { format, reason }
}

/// A 2-D plane with unit inner stride: `(offset, rows, row samples, stride)`.
fn plane_2d<T: Element>(
    t: &Tensor<T>,
    what: &str,
    format: PixelFormat,
) -> Result<(usize, [usize; 2], usize)> {
    match t.geometry() {
        Geometry::Array(a) if a.shape.len() == 2 && a.strides[1] == a.elem => {
            Ok((a.offset, [a.shape[0], a.shape[1]], a.strides[0]))
        }
        _ => Err(mismatch(
            format,
            format!(
                "{what} must be a 2-D [rows, samples] tensor, got shape {:?}",
                t.shape()
            ),
        )),
    }
}

impl<T: Element> Tensor<T> {
    /// Combines a luma tensor `[H, W]` and a chroma tensor (`[H/2, W]` for NV12,
    /// `[H, W]` for NV16, interleaved CbCr) into one image tensor with a fresh
    /// identity. The planes may live in one buffer or two; each keeps its own
    /// row stride and offset.
    ///
    /// ```
    /// use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};
    /// let y = Tensor::<u8>::new(&[4, 8], Some(TensorMemory::Mem), None)?;
    /// let uv = Tensor::<u8>::new(&[2, 8], Some(TensorMemory::Mem), None)?;
    /// let nv12 = Tensor::from_planes(y, uv, PixelFormat::Nv12)?;
    /// assert_eq!((nv12.width(), nv12.height()), (Some(8), Some(4)));
    /// assert_eq!(nv12.plane(1)?.shape(), &[2, 8]);
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::UnsupportedFormat`] for formats other than NV12/NV16;
    /// [`Error::PlaneMismatch`] naming the shapes when the planes do not fit
    /// together, or when they overlap in one buffer.
    pub fn from_planes(luma: Tensor<T>, chroma: Tensor<T>, format: PixelFormat) -> Result<Self> {
        if !matches!(format, PixelFormat::Nv12 | PixelFormat::Nv16) {
            return Err(Error::UnsupportedFormat {
                format,
                operation: "from_planes",
            });
        }
        let (y_off, [h, w], y_stride) = plane_2d(&luma, "luma", format)?;
        let (c_off, c_shape, c_stride) = plane_2d(&chroma, "chroma", format)?;
        let (hsub, vsub) = format.subsampling();
        if w % hsub != 0 || h % vsub != 0 {
            return Err(mismatch(
                format,
                format!("luma {w}x{h} is not a multiple of the {hsub}x{vsub} subsampling"),
            ));
        }
        let expected = [format.plane_rows(1, h), w];
        if c_shape != expected {
            return Err(mismatch(
                format,
                format!("chroma shape {c_shape:?} should be {expected:?} for luma [{h}, {w}]"),
            ));
        }
        let same = Arc::ptr_eq(luma.buffer_arc(), chroma.buffer_arc());
        let e = T::DTYPE.size();
        let luma_end = y_off + (h - 1) * y_stride + w * e;
        if same && c_off < luma_end {
            return Err(mismatch(
                format,
                format!(
                    "chroma at byte {c_off} overlaps or precedes luma at bytes {y_off}..{luma_end}"
                ),
            ));
        }
        let mut planes = [PlaneGeom::default(); 3];
        planes[0] = PlaneGeom {
            buffer: 0,
            offset: y_off,
            stride: y_stride,
        };
        planes[1] = PlaneGeom {
            buffer: usize::from(!same),
            offset: c_off,
            stride: c_stride,
        };
        let geom = ImageGeom::root(format, (w, h), (1, 0), planes, e);
        let second = (!same).then(|| chroma.buffer_arc().clone());
        Ok(Tensor::from_parts(
            luma.buffer_arc().clone(),
            second,
            Geometry::Image(geom),
            BufferIdentity::fresh(),
            None,
        ))
    }

    /// Imports a `width`x`height` NV12/NV16 image from two plane descriptors
    /// (two fds, or one fd at two offsets — detected by the files' identity, so
    /// the buffer is mapped once). Each fd is checked as by
    /// [`from_fd`](Tensor::from_fd): a dma-buf or a memfd that cannot shrink
    /// (a sealable one is sealed).
    ///
    /// # Errors
    /// As [`from_fd`](Tensor::from_fd) for each fd ([`Error::ShrinkableFile`]
    /// for a regular or shared-memory file, …); [`Error::BadStride`] for a
    /// stride below the row; [`Error::BufferTooSmall`] when a plane runs past
    /// its fd; [`Error::PlaneMismatch`] / [`Error::UnsupportedFormat`] as
    /// [`from_planes`](Tensor::from_planes).
    pub fn import_planes(
        width: usize,
        height: usize,
        format: PixelFormat,
        luma: PlaneDescriptor,
        chroma: PlaneDescriptor,
    ) -> Result<Self> {
        if !matches!(format, PixelFormat::Nv12 | PixelFormat::Nv16) {
            return Err(Error::UnsupportedFormat {
                format,
                operation: "import_planes",
            });
        }
        let e = T::DTYPE.size();
        let luma_buf = Arc::new(Buffer::new(FdStorage::import(luma.fd)?));
        let chroma_buf = match (luma_buf.fd_identity(), FdStorage::import(chroma.fd)?) {
            (Some(a), c) if Some(a) == c.fd_identity() => luma_buf.clone(),
            (_, c) => Arc::new(Buffer::new(c)),
        };
        let plane = |buf: Arc<Buffer>, rows: usize, stride: Option<usize>, offset: usize| {
            let row_bytes = width.checked_mul(e).ok_or(Error::ShapeOverflow {
                shape: vec![rows, width],
                elem_size: e,
            })?;
            let stride = stride.unwrap_or(row_bytes);
            if !offset.is_multiple_of(e) {
                return Err(Error::BadPlaneOffset { offset, min: 0 });
            }
            if stride < row_bytes || !stride.is_multiple_of(e) {
                return Err(Error::BadStride {
                    stride,
                    row_bytes,
                    elem_size: e,
                });
            }
            let mut geom = ArrayGeom::contiguous(&[rows, width], e, offset)?;
            let needed = (rows - 1)
                .checked_mul(stride)
                .and_then(|n| n.checked_add(offset))
                .and_then(|n| n.checked_add(row_bytes))
                .unwrap_or(usize::MAX);
            geom.strides[0] = stride;
            if needed > buf.len() {
                return Err(Error::BufferTooSmall {
                    needed,
                    available: buf.len(),
                });
            }
            Ok(Tensor::<T>::from_parts(
                buf,
                None,
                Geometry::Array(geom),
                BufferIdentity::fresh(),
                None,
            ))
        };
        let y = plane(luma_buf, height, luma.stride, luma.offset)?;
        let c_rows = format.plane_rows(1, height);
        let c = plane(chroma_buf, c_rows, chroma.stride, chroma.offset)?;
        Tensor::from_planes(y, c, format)
    }
}
