//! [`TensorDyn`]: a tensor whose element type is a runtime value, and
//! [`DynMap`], its CPU map.

use std::fmt;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use half::f16;

use crate::{
    Access, BufferIdentity, DType, Element, Error, FdIdentity, HostPin, ImageLayout, MapMode,
    PixelFormat, ReadOnly, ReadWrite, Region, Result, Tensor, TensorMap, TensorMapTrait,
    TensorMemory, WriteOnly,
};

/// A [`Tensor`] of any [`DType`], for code that learns the element type at run
/// time (a model's output, a Python caller, a C API).
///
/// ```
/// use zerocam_tensor::{DType, Tensor, TensorDyn, TensorMemory};
/// let t = TensorDyn::new(&[2, 3], DType::F32, Some(TensorMemory::Mem), None)?;
/// assert_eq!(t.dtype(), DType::F32);
/// let typed: Tensor<f32> = t.try_into()?;
/// assert_eq!(typed.shape(), &[2, 3]);
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TensorDyn {
    /// `u8` elements.
    U8(Tensor<u8>),
    /// `i8` elements.
    I8(Tensor<i8>),
    /// `u16` elements.
    U16(Tensor<u16>),
    /// `i16` elements.
    I16(Tensor<i16>),
    /// `u32` elements.
    U32(Tensor<u32>),
    /// `i32` elements.
    I32(Tensor<i32>),
    /// `f16` elements.
    F16(Tensor<f16>),
    /// `f32` elements.
    F32(Tensor<f32>),
    /// `f64` elements.
    F64(Tensor<f64>),
}

/// Runs `$body` with `$t` bound to the typed tensor inside `$self`.
macro_rules! each {
    ($self:expr, $t:ident => $body:expr) => {
        match $self {
            TensorDyn::U8($t) => $body,
            TensorDyn::I8($t) => $body,
            TensorDyn::U16($t) => $body,
            TensorDyn::I16($t) => $body,
            TensorDyn::U32($t) => $body,
            TensorDyn::I32($t) => $body,
            TensorDyn::F16($t) => $body,
            TensorDyn::F32($t) => $body,
            TensorDyn::F64($t) => $body,
        }
    };
}

/// Evaluates `$make` with the type alias `$T` set to the Rust type of a
/// [`DType`] value, and wraps the resulting tensor.
macro_rules! by_dtype {
    ($dtype:expr, |$T:ident| $make:expr) => {
        match $dtype {
            DType::U8 => {
                type $T = u8;
                $make.map(TensorDyn::U8)
            }
            DType::I8 => {
                type $T = i8;
                $make.map(TensorDyn::I8)
            }
            DType::U16 => {
                type $T = u16;
                $make.map(TensorDyn::U16)
            }
            DType::I16 => {
                type $T = i16;
                $make.map(TensorDyn::I16)
            }
            DType::U32 => {
                type $T = u32;
                $make.map(TensorDyn::U32)
            }
            DType::I32 => {
                type $T = i32;
                $make.map(TensorDyn::I32)
            }
            DType::F16 => {
                type $T = f16;
                $make.map(TensorDyn::F16)
            }
            DType::F32 => {
                type $T = f32;
                $make.map(TensorDyn::F32)
            }
            DType::F64 => {
                type $T = f64;
                $make.map(TensorDyn::F64)
            }
        }
    };
}
pub(crate) use by_dtype;

impl TensorDyn {
    /// [`Tensor::new`] with the element type as a value.
    pub fn new(
        shape: &[usize],
        dtype: DType,
        memory: Option<TensorMemory>,
        name: Option<&str>,
    ) -> Result<TensorDyn> {
        by_dtype!(dtype, |T| Tensor::<T>::new(shape, memory, name))
    }

    /// [`Tensor::from_fd`] with the element type as a value: a dma-buf or a
    /// memfd that cannot shrink (a sealable one is sealed).
    pub fn from_fd(
        fd: OwnedFd,
        shape: &[usize],
        dtype: DType,
        name: Option<&str>,
    ) -> Result<TensorDyn> {
        by_dtype!(dtype, |T| Tensor::<T>::from_fd(fd, shape, name))
    }

    /// [`Tensor::image`] of `u8` samples.
    pub fn image(
        width: usize,
        height: usize,
        format: PixelFormat,
        memory: Option<TensorMemory>,
    ) -> Result<TensorDyn> {
        Tensor::<u8>::image(width, height, format, memory).map(TensorDyn::U8)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        each!(self, t => t.dtype())
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        each!(self, t => t.shape())
    }

    /// Byte strides, when uniform.
    pub fn strides(&self) -> Option<Vec<usize>> {
        each!(self, t => t.strides())
    }

    /// [`Tensor::stride`]: one axis's byte stride, without allocating.
    pub fn stride(&self, axis: usize) -> Option<usize> {
        each!(self, t => t.stride(axis))
    }

    /// Size in bytes of the elements.
    pub fn size(&self) -> usize {
        each!(self, t => t.size())
    }

    /// The memory kind.
    pub fn memory(&self) -> TensorMemory {
        each!(self, t => t.memory())
    }

    /// [`Tensor::pbo_owner`] of the tensor inside.
    pub fn pbo_owner(&self) -> Option<usize> {
        each!(self, t => t.pbo_owner())
    }

    /// The name.
    pub fn name(&self) -> Option<&str> {
        each!(self, t => t.name())
    }

    /// The pixel format of an image tensor.
    pub fn format(&self) -> Option<PixelFormat> {
        each!(self, t => t.format())
    }

    /// The shared identity.
    pub fn buffer_identity(&self) -> &BufferIdentity {
        each!(self, t => t.buffer_identity())
    }

    /// `(st_dev, st_ino)` of the backing fd.
    pub fn fd_identity(&self) -> Option<FdIdentity> {
        each!(self, t => t.fd_identity())
    }

    /// Byte offset of the first element in its buffer.
    pub fn plane_offset(&self) -> usize {
        each!(self, t => t.plane_offset())
    }

    /// [`Tensor::handle_count`]: handles (tensors, maps, pins) holding the
    /// buffer now; 1 when this is the only one.
    pub fn handle_count(&self) -> usize {
        each!(self, t => t.handle_count())
    }

    /// A dup of the backing fd.
    pub fn clone_fd(&self) -> Result<OwnedFd> {
        each!(self, t => t.clone_fd())
    }

    /// [`Tensor::fd`]: the fd behind the (first) buffer, borrowed.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        each!(self, t => t.fd())
    }

    /// [`Tensor::plane_count`].
    pub fn plane_count(&self) -> usize {
        each!(self, t => t.plane_count())
    }

    /// [`Tensor::width`] of an image tensor.
    pub fn width(&self) -> Option<usize> {
        each!(self, t => t.width())
    }

    /// [`Tensor::height`] of an image tensor.
    pub fn height(&self) -> Option<usize> {
        each!(self, t => t.height())
    }

    /// [`Tensor::row_stride`] of an image tensor.
    pub fn row_stride(&self) -> Option<usize> {
        each!(self, t => t.row_stride())
    }

    /// [`Tensor::with_image`], keeping the element type.
    pub fn with_image(self, layout: ImageLayout) -> Result<TensorDyn> {
        each!(self, t => t.with_image(layout).map(TensorDyn::from))
    }

    /// [`Tensor::pin_host`].
    pub fn pin_host(&self) -> Result<HostPin> {
        each!(self, t => t.pin_host())
    }

    /// Maps the tensor with `access` chosen at run time: [`Tensor::map_read`],
    /// [`Tensor::map_write`] or [`Tensor::map`], with the element type erased.
    ///
    /// # Errors
    /// Those of [`Tensor::map`].
    pub fn map_access(&self, access: Access) -> Result<DynMap> {
        each!(self, t => match access {
            Access::Read => t.map_read().map(DynMap::new),
            Access::Write => t.map_write().map(DynMap::new),
            Access::ReadWrite => t.map().map(DynMap::new),
        })
    }

    /// [`Tensor::view`].
    pub fn view(&self, region: Region) -> Result<TensorDyn> {
        each!(self, t => t.view(region).map(TensorDyn::from))
    }

    /// [`Tensor::batch`].
    pub fn batch(&self, n: usize) -> Result<TensorDyn> {
        each!(self, t => t.batch(n).map(TensorDyn::from))
    }

    /// [`Tensor::plane`].
    pub fn plane(&self, i: usize) -> Result<TensorDyn> {
        each!(self, t => t.plane(i).map(TensorDyn::from))
    }

    /// The `u8` tensor inside, if that is the element type.
    pub fn as_u8(&self) -> Option<&Tensor<u8>> {
        match self {
            TensorDyn::U8(t) => Some(t),
            _ => None,
        }
    }
}

macro_rules! conversions {
    ($($t:ty => $v:ident),*) => {$(
        impl From<Tensor<$t>> for TensorDyn {
            fn from(t: Tensor<$t>) -> TensorDyn {
                TensorDyn::$v(t)
            }
        }

        impl TryFrom<TensorDyn> for Tensor<$t> {
            type Error = Error;

            fn try_from(t: TensorDyn) -> Result<Tensor<$t>> {
                match t {
                    TensorDyn::$v(t) => Ok(t),
                    other => Err(Error::DTypeMismatch {
                        expected: <$t as Element>::DTYPE,
                        actual: other.dtype(),
                    }),
                }
            }
        }
    )*};
}

conversions!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32,
             f16 => F16, f32 => F32, f64 => F64);

/// A CPU map of a [`TensorDyn`], its element type and access mode runtime
/// values: a [`TensorMap`] inside, so it borrows the bytes, brackets a dma-buf
/// with `DMA_BUF_IOCTL_SYNC` and ends like one — when dropped, or by
/// [`finish`](DynMap::finish), which reports a failed sync END. Made by
/// [`TensorDyn::map_access`], for code that hands the address on (a Python
/// array, a C API).
///
/// ```
/// use zerocam_tensor::{Access, DType, Tensor, TensorDyn, TensorMemory};
/// let t = TensorDyn::new(&[2, 3], DType::F32, Some(TensorMemory::Shm), None)?;
/// let mut m = t.map_access(Access::ReadWrite)?;
/// assert_eq!((m.dtype(), m.access(), m.len()), (DType::F32, Access::ReadWrite, 24));
/// assert_eq!((m.shape(), m.strides_bytes()), (&[2, 3][..], Some(&[12, 4][..])));
/// let p = m.as_mut_ptr().expect("a writable map");
/// // SAFETY (of the example): the map holds the only writable borrow of its 24
/// // bytes, and element 4 lies inside them.
/// unsafe { p.cast::<f32>().as_ptr().add(4).write(1.5) };
/// m.finish()?; // ends the map, reporting a failed dma-buf sync (a drop cannot)
///
/// let read = t.map_access(Access::Read)?;
/// assert!(read.access() == Access::Read && !read.writable());
/// let typed: Tensor<f32> = t.clone().try_into()?;
/// assert_eq!(typed.map_read()?[4], 1.5);
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
pub struct DynMap {
    map: Box<dyn ErasedMap>,
}

impl DynMap {
    fn new<T: Element, M: ModeAddress>(map: TensorMap<T, M>) -> DynMap {
        DynMap { map: Box::new(map) }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.map.dtype()
    }

    /// The access the map was made with.
    pub fn access(&self) -> Access {
        self.map.access()
    }

    /// Whether the map may write (`Write` or `ReadWrite`).
    pub fn writable(&self) -> bool {
        self.access().writes()
    }

    /// The mapped tensor's shape.
    pub fn shape(&self) -> &[usize] {
        self.map.shape()
    }

    /// Byte strides matching [`shape`](DynMap::shape), when the tensor has
    /// uniform strides (see [`Tensor::strides`]).
    pub fn strides_bytes(&self) -> Option<&[usize]> {
        self.map.strides_bytes()
    }

    /// Bytes from the first element to the end of the last (padding included).
    pub fn len(&self) -> usize {
        self.map.len_bytes()
    }

    /// Whether the map is empty (never: empty tensors are refused).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The address of the first element, valid for reads of
    /// [`len`](DynMap::len) bytes while the map lives (a write-only map's
    /// bytes may be stale on non-coherent memory).
    pub fn ptr(&self) -> NonNull<u8> {
        self.map.ptr()
    }

    /// The address of the first element, valid for reads and writes of
    /// [`len`](DynMap::len) bytes while the map lives; `None` for a read map.
    pub fn as_mut_ptr(&mut self) -> Option<NonNull<u8>> {
        self.map.ptr_mut()
    }

    /// Ends the map now, reporting a failed dma-buf sync END, which a drop
    /// has to ignore.
    ///
    /// # Errors
    /// [`Error::DmaBufSync`].
    pub fn finish(self) -> Result<()> {
        self.map.finish()
    }
}

impl fmt::Debug for DynMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynMap")
            .field("dtype", &self.dtype())
            .field("access", &self.access())
            .field("shape", &self.shape())
            .field("len", &self.len())
            .finish()
    }
}

/// A [`TensorMap`] of any element type and mode, behind [`DynMap`].
trait ErasedMap: Send + Sync {
    fn dtype(&self) -> DType;
    fn access(&self) -> Access;
    fn shape(&self) -> &[usize];
    fn strides_bytes(&self) -> Option<&[usize]>;
    fn len_bytes(&self) -> usize;
    fn ptr(&self) -> NonNull<u8>;
    fn ptr_mut(&mut self) -> Option<NonNull<u8>>;
    fn finish(self: Box<Self>) -> Result<()>;
}

/// How a map mode hands out a writable address: only the writable modes,
/// through their `&mut [T]`.
trait ModeAddress: MapMode + Sized + 'static {
    fn ptr_mut<T: Element>(map: &mut TensorMap<T, Self>) -> Option<NonNull<u8>>;
}

impl ModeAddress for ReadOnly {
    fn ptr_mut<T: Element>(_: &mut TensorMap<T, Self>) -> Option<NonNull<u8>> {
        None
    }
}

impl ModeAddress for WriteOnly {
    fn ptr_mut<T: Element>(map: &mut TensorMap<T, Self>) -> Option<NonNull<u8>> {
        Some(NonNull::from(&mut **map).cast())
    }
}

impl ModeAddress for ReadWrite {
    fn ptr_mut<T: Element>(map: &mut TensorMap<T, Self>) -> Option<NonNull<u8>> {
        Some(NonNull::from(&mut **map).cast())
    }
}

impl<T: Element, M: ModeAddress> ErasedMap for TensorMap<T, M> {
    fn dtype(&self) -> DType {
        T::DTYPE
    }

    fn access(&self) -> Access {
        M::ACCESS
    }

    fn shape(&self) -> &[usize] {
        TensorMapTrait::shape(self)
    }

    fn strides_bytes(&self) -> Option<&[usize]> {
        TensorMap::strides_bytes(self)
    }

    fn len_bytes(&self) -> usize {
        std::mem::size_of_val::<[T]>(self)
    }

    fn ptr(&self) -> NonNull<u8> {
        NonNull::from(&**self).cast()
    }

    fn ptr_mut(&mut self) -> Option<NonNull<u8>> {
        M::ptr_mut(self)
    }

    fn finish(self: Box<Self>) -> Result<()> {
        TensorMap::finish(*self)
    }
}
