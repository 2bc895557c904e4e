//! The `zerocam.tensor.v1` capsule's struct and its import, without Python:
//! what `Tensor.from_zerocam` (zerocam-python, `python/src/capsule.rs`)
//! decodes once it has the capsule's pointer and a duplicate of its fd, so
//! the decoding can be tested and fuzzed on its own (fuzz target
//! `capsule_import`).
//!
//! Protocol (ABI version 1; the Python module's docs have the capsule's
//! ownership rules):
//! - Arrays: `shape`/`strides` (bytes) from `byte_offset` in the fd; only a
//!   contiguous array at offset 0 is imported.
//! - Images (`format[0] != 0`): `format` names the [`PixelFormat`], and
//!   `width`, `height`, `row_stride` and `byte_offset` describe it; `shape`
//!   and `strides` are the image tensor's, so they also carry a batch (a
//!   leading `N`, `strides[0]` apart) and the plane step of `PLANAR_RGB`
//!   (the stride of its plane dim). An import rebuilds the image from these
//!   and refuses a capsule whose shape or strides differ from the rebuilt ones.

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};

use nix::unistd::{lseek, Whence};

use crate::{DType, Error, ImageLayout, PixelFormat, TensorDyn};

/// The most dims a capsule holds.
pub const MAX_DIMS: usize = 8;

/// `DLDataType`: code (0 int, 1 uint, 2 float), bits, lanes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    /// Type code.
    pub code: u8,
    /// Bits per element.
    pub bits: u8,
    /// Lanes (1).
    pub lanes: u16,
}

/// The DLPack type of `dtype`.
pub const fn dl_dtype(dtype: DType) -> DLDataType {
    let code = match dtype {
        DType::I8 | DType::I16 | DType::I32 => 0,
        DType::U8 | DType::U16 | DType::U32 => 1,
        DType::F16 | DType::F32 | DType::F64 => 2,
    };
    DLDataType {
        code,
        // At most 8 bytes: the cast cannot truncate.
        bits: (dtype.size() * 8) as u8,
        lanes: 1,
    }
}

/// The element type of a DLPack type (code and bits; lanes are not read).
pub fn dtype_of(d: DLDataType) -> Option<DType> {
    DType::ALL.into_iter().find(|&x| {
        let y = dl_dtype(x);
        y.code == d.code && y.bits == d.bits
    })
}

/// What the capsule points to (C layout; see the module docs).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ZerocamTensorV1 {
    /// 1.
    pub abi_version: u32,
    /// A dup of the buffer's fd, owned by the capsule.
    pub fd: i32,
    /// Element type (DLPack code and bits).
    pub dtype: DLDataType,
    /// Number of dims (≤ 8).
    pub ndim: u32,
    /// Offset of the first element in the fd, bytes.
    pub byte_offset: u64,
    /// Shape (first `ndim` entries).
    pub shape: [i64; MAX_DIMS],
    /// Byte strides (first `ndim` entries).
    pub strides: [i64; MAX_DIMS],
    /// Pixel format name (NUL-terminated; empty for arrays).
    pub format: [u8; 16],
    /// Image width (0 for arrays).
    pub width: u32,
    /// Image height (0 for arrays).
    pub height: u32,
    /// Image row stride in bytes (0 for arrays).
    pub row_stride: u32,
}

/// Why a capsule is not imported. The messages are what `Tensor.from_zerocam`
/// raises: [`Import`](CapsuleError::Import) as an import of the capsule's fd
/// number, [`Image`](CapsuleError::Image) as its tensor error, the others as
/// `InvalidArgument`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CapsuleError {
    /// Not ABI 1, or no dims, or more than [`MAX_DIMS`].
    #[error("zerocam capsule: ABI {abi} with {ndim} dims is not supported")]
    Unsupported {
        /// `abi_version`.
        abi: u32,
        /// `ndim`.
        ndim: u32,
    },
    /// A DLPack type that is no [`DType`].
    #[error("zerocam capsule: unknown dtype")]
    UnknownDtype,
    /// A dim of 0 or below, a negative stride, an offset past `usize`.
    #[error("zerocam capsule: a dimension, stride or offset is out of range")]
    OutOfRange,
    /// A format name without a NUL, or not UTF-8.
    #[error("zerocam capsule: bad format name")]
    BadFormatName,
    /// A format name that is no [`PixelFormat`].
    #[error("format {name:?} is not one of {}", known_formats())]
    UnknownFormat {
        /// The name.
        name: String,
    },
    /// An array that is not contiguous at offset 0.
    #[error(
        "zerocam capsule: a strided or offset array (offset {offset}, shape {shape:?}, \
         strides {strides:?}) cannot be imported yet"
    )]
    Strided {
        /// `byte_offset`.
        offset: usize,
        /// The shape.
        shape: Vec<usize>,
        /// The strides.
        strides: Vec<usize>,
    },
    /// An image whose rebuilt shape or strides differ from the capsule's.
    #[error("{0}")]
    Mismatch(Box<ImageMismatch>),
    /// [`TensorDyn::from_fd`] refused the fd (its error names the
    /// duplicate's number).
    #[error("{0}")]
    Import(Error),
    /// [`TensorDyn::with_image`] refused the image.
    #[error("{0}")]
    Image(Error),
    /// [`describe`]: a tensor whose elements are not evenly strided (an
    /// image of several planes at unrelated offsets).
    #[error("a tensor of shape {shape:?} has no uniform strides: export each plane")]
    NoUniformStrides {
        /// Its shape.
        shape: Vec<usize>,
    },
    /// [`describe`]: more dims than the struct holds.
    #[error("{ndim} dims: the capsule holds at most {MAX_DIMS}")]
    TooManyDims {
        /// The tensor's dims.
        ndim: usize,
    },
    /// [`describe`]: an image field past the struct's `u32`.
    #[error("image {what} {value} does not fit the capsule's u32")]
    FieldTooLarge {
        /// `width`, `height` or `row stride`.
        what: &'static str,
        /// Its value.
        value: usize,
    },
}

/// The image a capsule names, rebuilt, and the geometry it gives instead
/// ([`CapsuleError::Mismatch`]).
#[derive(Debug)]
pub struct ImageMismatch {
    /// Width.
    pub width: usize,
    /// Height.
    pub height: usize,
    /// Format.
    pub format: PixelFormat,
    /// Row stride.
    pub row_stride: usize,
    /// `byte_offset`.
    pub offset: usize,
    /// The rebuilt image's shape.
    pub got_shape: Vec<usize>,
    /// The rebuilt image's strides (empty when not uniform).
    pub got_strides: Vec<usize>,
    /// The capsule's shape.
    pub shape: Vec<usize>,
    /// The capsule's strides.
    pub strides: Vec<usize>,
}

impl std::fmt::Display for ImageMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ImageMismatch {
            width,
            height,
            format,
            row_stride,
            offset,
            got_shape,
            got_strides,
            shape,
            strides,
        } = self;
        write!(
            f,
            "zerocam capsule: a {width}x{height} {format} image with row stride {row_stride} \
             at offset {offset} has shape {got_shape:?} and strides {got_strides:?}, but the \
             capsule gives shape {shape:?} and strides {strides:?}: not imported"
        )
    }
}

fn known_formats() -> String {
    PixelFormat::ALL.map(PixelFormat::name).join(", ")
}

/// The header's checks, before the fd is touched: ABI 1 with 1 to
/// [`MAX_DIMS`] dims and a known dtype (returned).
pub fn check_header(desc: &ZerocamTensorV1) -> Result<DType, CapsuleError> {
    if desc.abi_version != 1 || desc.ndim == 0 || desc.ndim as usize > MAX_DIMS {
        return Err(CapsuleError::Unsupported {
            abi: desc.abi_version,
            ndim: desc.ndim,
        });
    }
    dtype_of(desc.dtype).ok_or(CapsuleError::UnknownDtype)
}

/// The struct that describes `t` over `fd` (the exporter's own dup of
/// `t`'s fd, which the capsule then owns): what `__zerocam_tensor__` hands
/// over, and what [`import`] reads back.
///
/// # Errors
/// [`CapsuleError::NoUniformStrides`], [`CapsuleError::TooManyDims`],
/// [`CapsuleError::FieldTooLarge`].
pub fn describe(t: &TensorDyn, fd: i32) -> Result<ZerocamTensorV1, CapsuleError> {
    let shape = t.shape();
    let strides = t.strides().ok_or_else(|| CapsuleError::NoUniformStrides {
        shape: shape.to_vec(),
    })?;
    if shape.len() > MAX_DIMS {
        return Err(CapsuleError::TooManyDims { ndim: shape.len() });
    }
    let mut s = ZerocamTensorV1 {
        abi_version: 1,
        fd,
        dtype: dl_dtype(t.dtype()),
        // At most MAX_DIMS: checked above.
        ndim: shape.len() as u32,
        byte_offset: t.plane_offset() as u64,
        shape: [0; MAX_DIMS],
        strides: [0; MAX_DIMS],
        format: [0; 16],
        width: 0,
        height: 0,
        row_stride: 0,
    };
    for (i, (&d, &st)) in shape.iter().zip(&strides).enumerate() {
        s.shape[i] = d as i64;
        s.strides[i] = st as i64;
    }
    if let Some(f) = t.format() {
        let name = f.name().as_bytes();
        s.format[..name.len()].copy_from_slice(name);
        let field = |what: &'static str, v: Option<usize>| {
            let value = v.unwrap_or(0);
            u32::try_from(value).map_err(|_| CapsuleError::FieldTooLarge { what, value })
        };
        s.width = field("width", t.width())?;
        s.height = field("height", t.height())?;
        s.row_stride = field("row stride", t.row_stride())?;
    }
    Ok(s)
}

/// The tensor `desc` describes over `fd` (a duplicate of `desc.fd`, which is
/// not read). The fd is taken as [`TensorDyn::from_fd`] takes any: a dma-buf,
/// or a memfd that cannot shrink (a sealable one is sealed). An image's
/// buffer is the whole file.
pub fn import(desc: &ZerocamTensorV1, fd: OwnedFd) -> Result<TensorDyn, CapsuleError> {
    let dtype = check_header(desc)?;
    let n = desc.ndim as usize;
    let shape = desc.shape[..n]
        .iter()
        .map(|&d| usize::try_from(d).ok().filter(|&d| d > 0))
        .collect::<Option<Vec<usize>>>()
        .ok_or(CapsuleError::OutOfRange)?;
    let strides = desc.strides[..n]
        .iter()
        .map(|&st| usize::try_from(st).ok())
        .collect::<Option<Vec<usize>>>()
        .ok_or(CapsuleError::OutOfRange)?;
    let offset = usize::try_from(desc.byte_offset).map_err(|_| CapsuleError::OutOfRange)?;
    if desc.format[0] != 0 {
        let name = CStr::from_bytes_until_nul(&desc.format)
            .ok()
            .and_then(|n| n.to_str().ok())
            .ok_or(CapsuleError::BadFormatName)?;
        let format = PixelFormat::from_name(name).ok_or_else(|| CapsuleError::UnknownFormat {
            name: name.to_owned(),
        })?;
        // A file without a size (a pipe, a socket) gets one element: `from_fd`
        // then refuses it, naming what it is.
        let size = file_size(&fd).unwrap_or(dtype.size());
        let whole = TensorDyn::from_fd(fd, &[size / dtype.size()], dtype, None)
            .map_err(CapsuleError::Import)?;
        return import_image(whole, format, desc, &shape, &strides, offset);
    }
    let contiguous = {
        let mut want = dtype.size();
        let mut ok = offset == 0;
        for (d, st) in shape.iter().zip(&strides).rev() {
            ok &= *st == want;
            want = want.saturating_mul(*d);
        }
        ok
    };
    if !contiguous {
        return Err(CapsuleError::Strided {
            offset,
            shape,
            strides,
        });
    }
    TensorDyn::from_fd(fd, &shape, dtype, None).map_err(CapsuleError::Import)
}

/// The image a capsule describes: its format fields (`format`, `width`,
/// `height`, `row_stride`, `byte_offset`) and what only the shape and strides
/// carry — a batch (one leading dim more than an image has) and the step
/// between the planes of a planar image (the stride of its plane dim). The
/// rebuilt image must have exactly the capsule's shape and strides, else the
/// import is refused: a producer's geometry is never reinterpreted.
fn import_image(
    whole: TensorDyn,
    format: PixelFormat,
    s: &ZerocamTensorV1,
    shape: &[usize],
    strides: &[usize],
    offset: usize,
) -> Result<TensorDyn, CapsuleError> {
    let (width, height, row_stride) = (s.width as usize, s.height as usize, s.row_stride as usize);
    let mut layout = ImageLayout::new(width, height, format)
        .with_row_stride(row_stride)
        .with_start_offset(offset);
    let build = |layout: ImageLayout| {
        whole
            .clone()
            .with_image(layout)
            .map_err(CapsuleError::Image)
    };
    if format == PixelFormat::PlanarRgb && shape.len() >= 3 {
        // [N?, 3, H, W]: the plane dim's stride is the plane step.
        layout = layout.with_plane_offset(strides[shape.len() - 3]);
    }
    let mut t = build(layout)?;
    if shape.len() == t.shape().len() + 1 {
        t = build(layout.with_batch(shape[0]))?;
    }
    let got = t.strides();
    if t.shape() != shape || got.as_deref() != Some(strides) {
        return Err(CapsuleError::Mismatch(Box::new(ImageMismatch {
            width,
            height,
            format,
            row_stride,
            offset,
            got_shape: t.shape().to_vec(),
            got_strides: got.unwrap_or_default(),
            shape: shape.to_vec(),
            strides: strides.to_vec(),
        })));
    }
    Ok(t)
}

/// The file's size, by `lseek`, with the file offset (shared with the
/// producer's fd) put back where it was; `None` when it has none. A dma-buf
/// answers only `SEEK_END` and `SEEK_SET` at offset 0 (`SEEK_CUR` is
/// `EINVAL`): its offset means nothing, and is put back at 0.
pub fn file_size(fd: &impl AsFd) -> Option<usize> {
    let fd = fd.as_fd();
    let here = lseek(fd, 0, Whence::SeekCur).unwrap_or(0);
    let end = lseek(fd, 0, Whence::SeekEnd).ok()?;
    // Back to the offset read first (0 for a dma-buf).
    let _ = lseek(fd, here.max(0), Whence::SeekSet);
    usize::try_from(end).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Tensor, TensorMemory};

    fn desc(t: &TensorDyn, fd: i32) -> ZerocamTensorV1 {
        describe(t, fd).expect("describable")
    }

    fn round_trip(t: TensorDyn) -> TensorDyn {
        let fd = t.clone_fd().expect("an fd");
        let s = desc(&t, -1);
        let u = import(&s, fd).expect("imported");
        assert_eq!((u.shape(), u.strides()), (t.shape(), t.strides()));
        assert_eq!(u.format(), t.format());
        u
    }

    #[test]
    fn real_capsules_round_trip() {
        let shm = Some(TensorMemory::Shm);
        round_trip(TensorDyn::new(&[5, 6], DType::F64, shm, None).unwrap());
        let img = Tensor::<u8>::image(64, 48, PixelFormat::Nv12, shm).unwrap();
        round_trip(img.into());
        let batch = Tensor::<u8>::new(&[3 * 4 * 32], shm, None)
            .unwrap()
            .with_image(
                ImageLayout::new(8, 4, PixelFormat::Rgb)
                    .with_row_stride(32)
                    .with_batch(3),
            )
            .unwrap();
        assert_eq!(round_trip(batch.into()).shape(), &[3, 4, 8, 3]);
    }

    #[test]
    fn refusals_have_the_python_messages() {
        let t = TensorDyn::new(&[4, 4], DType::U8, Some(TensorMemory::Shm), None).unwrap();
        let fd = || t.clone_fd().unwrap();
        let mut s = desc(&t, 3);
        s.abi_version = 2;
        assert_eq!(
            import(&s, fd()).unwrap_err().to_string(),
            "zerocam capsule: ABI 2 with 2 dims is not supported"
        );
        s.abi_version = 1;
        s.strides[0] = 8;
        let e = import(&s, fd()).unwrap_err();
        assert!(matches!(e, CapsuleError::Strided { .. }), "{e}");
        s.strides[0] = 4;
        s.format[..4].copy_from_slice(b"NV21");
        assert_eq!(
            import(&s, fd()).unwrap_err().to_string(),
            format!("format \"NV21\" is not one of {}", known_formats())
        );
        s.shape[1] = -1;
        assert!(matches!(import(&s, fd()), Err(CapsuleError::OutOfRange)));
        s.dtype.bits = 7;
        assert!(matches!(import(&s, fd()), Err(CapsuleError::UnknownDtype)));
    }
}
