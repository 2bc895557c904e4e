//! [`TensorDyn`]: a tensor whose element type is a runtime value.

use std::os::fd::OwnedFd;

use half::f16;

use crate::{
    BufferIdentity, DType, Element, Error, FdIdentity, PixelFormat, Region, Result, Tensor,
    TensorMemory,
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

    /// [`Tensor::from_fd`] with the element type as a value.
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

    /// Size in bytes of the elements.
    pub fn size(&self) -> usize {
        each!(self, t => t.size())
    }

    /// The memory kind.
    pub fn memory(&self) -> TensorMemory {
        each!(self, t => t.memory())
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

    /// A dup of the backing fd.
    pub fn clone_fd(&self) -> Result<OwnedFd> {
        each!(self, t => t.clone_fd())
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
