//! [`TensorTrait`]: what every tensor offers whatever its element type.

use std::os::fd::OwnedFd;

use crate::TensorMemory;
use crate::{BufferIdentity, DType, Element, FdIdentity, Region, Result, Tensor, TensorDyn};

/// The operations common to [`Tensor<T>`] and [`TensorDyn`], for code generic
/// over both (caches, converters).
pub trait TensorTrait: Sized {
    /// The element type.
    fn dtype(&self) -> DType;
    /// The shape.
    fn shape(&self) -> &[usize];
    /// Size in bytes of the elements.
    fn size(&self) -> usize;
    /// The memory kind.
    fn memory(&self) -> TensorMemory;
    /// The identity shared with views and clones.
    fn buffer_identity(&self) -> &BufferIdentity;
    /// `(st_dev, st_ino)` of the backing fd, if any.
    fn fd_identity(&self) -> Option<FdIdentity>;
    /// Byte offset of the first element in its buffer.
    fn plane_offset(&self) -> usize;
    /// A dup of the backing fd.
    fn clone_fd(&self) -> Result<OwnedFd>;
    /// A view of a region (see [`Tensor::view`]).
    fn view(&self, region: Region) -> Result<Self>;
    /// Element `n` of the batch (see [`Tensor::batch`]).
    fn batch(&self, n: usize) -> Result<Self>;
}

macro_rules! forward {
    ($ty:ty $(, $g:ident)?) => {
        impl$(<$g: Element>)? TensorTrait for $ty {
            fn dtype(&self) -> DType { <$ty>::dtype(self) }
            fn shape(&self) -> &[usize] { <$ty>::shape(self) }
            fn size(&self) -> usize { <$ty>::size(self) }
            fn memory(&self) -> TensorMemory { <$ty>::memory(self) }
            fn buffer_identity(&self) -> &BufferIdentity { <$ty>::buffer_identity(self) }
            fn fd_identity(&self) -> Option<FdIdentity> { <$ty>::fd_identity(self) }
            fn plane_offset(&self) -> usize { <$ty>::plane_offset(self) }
            fn clone_fd(&self) -> Result<OwnedFd> { <$ty>::clone_fd(self) }
            fn view(&self, region: Region) -> Result<Self> { <$ty>::view(self, region) }
            fn batch(&self, n: usize) -> Result<Self> { <$ty>::batch(self, n) }
        }
    };
}

forward!(Tensor<T>, T);
forward!(TensorDyn);
