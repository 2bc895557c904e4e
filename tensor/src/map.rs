//! CPU maps of tensors: [`TensorMap`], its access modes, and [`TensorMapTrait`].

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::buffer::Buffer;
use crate::geometry::{Dims, Span};
use crate::{Element, Result};

/// What a map may do with the bytes. For dma-bufs it is also the direction of
/// the `DMA_BUF_IOCTL_SYNC` bracket: a read map skips the write-back flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read only.
    Read,
    /// Write only (reads may see stale data on non-coherent memory).
    Write,
    /// Read and write.
    ReadWrite,
}

impl Access {
    /// Whether the access writes.
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }

    /// Whether a map made with `self` also allows `other`.
    pub fn covers(self, other: Access) -> bool {
        self == other || self == Access::ReadWrite
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "read-write",
        })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The access mode of a [`TensorMap`] as a type: [`ReadOnly`], [`WriteOnly`] or
/// [`ReadWrite`]. Only the writable ones give `&mut [T]`.
pub trait MapMode: sealed::Sealed {
    /// The mode as a value.
    const ACCESS: Access;
}

/// Marker of the writable modes.
pub trait Writable: MapMode {}

/// Map mode of [`Tensor::map_read`](crate::Tensor::map_read).
#[derive(Debug)]
pub struct ReadOnly;
/// Map mode of [`Tensor::map_write`](crate::Tensor::map_write).
#[derive(Debug)]
pub struct WriteOnly;
/// Map mode of [`Tensor::map`](crate::Tensor::map).
#[derive(Debug)]
pub struct ReadWrite;

impl sealed::Sealed for ReadOnly {}
impl sealed::Sealed for WriteOnly {}
impl sealed::Sealed for ReadWrite {}
impl MapMode for ReadOnly {
    const ACCESS: Access = Access::Read;
}
impl MapMode for WriteOnly {
    const ACCESS: Access = Access::Write;
}
impl MapMode for ReadWrite {
    const ACCESS: Access = Access::ReadWrite;
}
impl Writable for WriteOnly {}
impl Writable for ReadWrite {}

/// A CPU map of a tensor: derefs to the elements from the tensor's first element
/// to its last, rows `row stride` apart (padding included).
///
/// Made by [`Tensor::map`](crate::Tensor::map) and friends. For a dma-buf the map
/// began with `DMA_BUF_IOCTL_SYNC` START and ends with END, in the map's
/// direction, when it drops; the memory itself stays mapped for the tensor's life.
pub struct TensorMap<T: Element, M: MapMode = ReadWrite> {
    buffer: Arc<Buffer>,
    span: Span,
    ptr: NonNull<T>,
    len: usize,
    shape: Dims,
    strides: Option<Dims>,
    open: bool,
    _mode: PhantomData<M>,
}

// SAFETY: a map is an exclusive (writable) or shared (read) borrow of its bytes,
// like `&mut [T]` / `&[T]`, enforced by the buffer's borrow tracker.
unsafe impl<T: Element, M: MapMode> Send for TensorMap<T, M> {}
// SAFETY: `&TensorMap` only gives `&[T]`.
unsafe impl<T: Element, M: MapMode> Sync for TensorMap<T, M> {}

impl<T: Element, M: MapMode> TensorMap<T, M> {
    /// Maps `span` of `buffer`.
    pub(crate) fn new(
        buffer: Arc<Buffer>,
        span: Span,
        shape: Dims,
        strides: Option<Dims>,
    ) -> Result<Self> {
        let base = buffer.acquire(span, M::ACCESS)?;
        // SAFETY: span lies inside the buffer (checked when the tensor was made),
        // and the storage contract keeps `base` valid while the access is open.
        let first = unsafe { base.add(span.start) }.cast::<T>();
        Ok(TensorMap {
            buffer,
            span,
            ptr: first,
            len: (span.end - span.start) / std::mem::size_of::<T>(),
            shape,
            strides,
            open: true,
            _mode: PhantomData,
        })
    }

    /// Ends the map now and reports a failed dma-buf sync END, which `Drop`
    /// has to ignore.
    pub fn finish(mut self) -> Result<()> {
        self.open = false;
        self.buffer.release(self.span, M::ACCESS)
    }

    /// Byte strides matching the tensor's shape, when it has uniform strides.
    pub fn strides_bytes(&self) -> Option<&[usize]> {
        self.strides.as_deref()
    }
}

impl<T: Element, M: MapMode> Drop for TensorMap<T, M> {
    fn drop(&mut self) {
        if self.open {
            // An END sync failure cannot be reported from drop; `finish` reports it.
            let _ = self.buffer.release(self.span, M::ACCESS);
        }
    }
}

impl<T: Element, M: MapMode> Deref for TensorMap<T, M> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: ptr is aligned (64-byte base, offsets in whole elements) and
        // valid for `len` elements while the map is open; the tracker allows no
        // overlapping writable map; every bit pattern is a valid `Element`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element, M: Writable> DerefMut for TensorMap<T, M> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `deref`; a writable mode holds the only map of these bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element, M: MapMode> fmt::Debug for TensorMap<T, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorMap")
            .field("access", &M::ACCESS)
            .field("shape", &self.shape)
            .field("len", &self.len)
            .finish()
    }
}

/// What every map offers, whatever its mode.
pub trait TensorMapTrait<T: Element>: Deref<Target = [T]> {
    /// The mapped tensor's shape.
    fn shape(&self) -> &[usize];
    /// The map's access.
    fn access(&self) -> Access;
    /// An ndarray view with the tensor's shape and strides (padding skipped).
    ///
    /// # Errors
    /// [`Error::NotStrided`](crate::Error::NotStrided) for layouts without
    /// uniform strides (a view of NV12, planes in separate buffers).
    #[cfg(feature = "ndarray")]
    fn view(&self) -> Result<ndarray::ArrayViewD<'_, T>>;
}

#[cfg(feature = "ndarray")]
fn element_strides<T>(shape: &[usize], strides: Option<&[usize]>) -> Result<ndarray::IxDyn> {
    let strides = strides.ok_or_else(|| crate::Error::NotStrided {
        shape: shape.to_vec(),
    })?;
    let e = std::mem::size_of::<T>();
    // Dims: inline up to rank 4, so a view allocates nothing.
    let elements: crate::geometry::Dims = strides.iter().map(|s| s / e).collect();
    Ok(ndarray::IxDyn(&elements))
}

impl<T: Element, M: MapMode> TensorMapTrait<T> for TensorMap<T, M> {
    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn access(&self) -> Access {
        M::ACCESS
    }

    #[cfg(feature = "ndarray")]
    fn view(&self) -> Result<ndarray::ArrayViewD<'_, T>> {
        use ndarray::ShapeBuilder;
        let strides = element_strides::<T>(&self.shape, self.strides.as_deref())?;
        let shape = ndarray::IxDyn(&self.shape).strides(strides);
        ndarray::ArrayViewD::from_shape(shape, self).map_err(|_| crate::Error::NotStrided {
            shape: self.shape.to_vec(),
        })
    }
}

#[cfg(feature = "ndarray")]
impl<T: Element, M: Writable> TensorMap<T, M> {
    /// A mutable ndarray view with the tensor's shape and strides.
    pub fn view_mut(&mut self) -> Result<ndarray::ArrayViewMutD<'_, T>> {
        use ndarray::ShapeBuilder;
        let strides = element_strides::<T>(&self.shape, self.strides.as_deref())?;
        let dims = self.shape.clone(); // inline up to rank 4: no allocation
        let shape = ndarray::IxDyn(&dims).strides(strides);
        ndarray::ArrayViewMutD::from_shape(shape, self).map_err(|_| crate::Error::NotStrided {
            shape: dims.to_vec(),
        })
    }
}
