//! [`Tensor`]: typed, owned, cheap to clone and view.

use std::fmt;
use std::marker::PhantomData;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;

use crate::buffer::Buffer;
use crate::geometry::{ArrayGeom, Dims, Geometry, ImageGeom};
use crate::map::{MapMode, ReadOnly, ReadWrite, TensorMap, WriteOnly};
use crate::memory::allocate;
use crate::storage::external::ExternalStorage;
use crate::storage::fd::FdStorage;
use crate::storage::pbo::PboStorage;
use crate::storage::pbo_ops::PboOps;
use crate::{
    dup_fd, BufferIdentity, DType, Element, Error, FdIdentity, ImageLayout, PixelFormat, Region,
    Result, TensorMemory,
};

/// A typed n-dimensional array in heap, shared, DMA-BUF or GL memory.
///
/// A tensor is a handle: cloning it, [`view`](Tensor::view), [`batch`](Tensor::batch)
/// and [`plane`](Tensor::plane) make new handles to the same memory with the same
/// [`BufferIdentity`], without copying or allocating the buffer. The memory is
/// freed when the last handle drops. An image tensor also knows its
/// [`PixelFormat`], row stride and plane offsets.
///
/// ```
/// use zerocam_tensor::{PixelFormat, Region, Tensor, TensorMemory};
/// let img = Tensor::<u8>::image(64, 48, PixelFormat::Rgb, Some(TensorMemory::Mem))?;
/// assert_eq!(img.shape(), &[48, 64, 3]);
/// let crop = img.view(Region::new(8, 8, 16, 16))?;
/// crop.map()?.fill(255);
/// let all = img.map_read()?;
/// assert_eq!(all[8 * 64 * 3 + 8 * 3], 255);
/// assert_eq!(all[0], 0);
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
pub struct Tensor<T: Element> {
    buffer: Arc<Buffer>,
    /// The second buffer of an image whose chroma lives apart (NV12M).
    chroma: Option<Arc<Buffer>>,
    geom: Geometry,
    shape: Dims,
    identity: BufferIdentity,
    name: Option<Arc<str>>,
    _elem: PhantomData<fn() -> T>,
}

impl<T: Element> Clone for Tensor<T> {
    fn clone(&self) -> Self {
        Tensor {
            buffer: self.buffer.clone(),
            chroma: self.chroma.clone(),
            geom: self.geom.clone(),
            shape: self.shape.clone(),
            identity: self.identity.clone(),
            name: self.name.clone(),
            _elem: PhantomData,
        }
    }
}

impl<T: Element> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Tensor");
        d.field("dtype", &T::DTYPE)
            .field("shape", &self.shape.as_slice())
            .field("memory", &self.memory())
            .field("id", &self.identity.id());
        if let Some(img) = self.geom.image() {
            d.field("format", &img.format);
        }
        d.field("name", &self.name).finish()
    }
}

/// Options for making a tensor beyond [`Tensor::new`]'s: an image layout, a DMA
/// heap, a name.
///
/// ```
/// use zerocam_tensor::{ImageLayout, PixelFormat, Tensor, TensorMemory};
/// let t = Tensor::<u8>::builder_image(
///         ImageLayout::new(640, 480, PixelFormat::Nv12).with_row_stride(704))
///     .memory(TensorMemory::Mem)
///     .name("frame")
///     .build()?;
/// assert_eq!(t.row_stride(), Some(704));
/// assert_eq!(t.name(), Some("frame"));
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until build()"]
pub struct TensorBuilder<T: Element> {
    what: Shape,
    memory: Option<TensorMemory>,
    heap: Option<String>,
    name: Option<String>,
    _elem: PhantomData<fn() -> T>,
}

#[derive(Debug, Clone)]
enum Shape {
    Array(Vec<usize>),
    Image(ImageLayout),
}

impl<T: Element> TensorBuilder<T> {
    /// The memory kind (default: DMA → SHM → MEM fallback).
    pub fn memory(mut self, memory: TensorMemory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// The DMA heap to allocate from (a name in `/dev/dma_heap`, e.g.
    /// `"linux,cma"`); used for `TensorMemory::Dma` and the fallback's DMA step.
    pub fn dma_heap(mut self, heap: &str) -> Self {
        self.heap = Some(heap.to_owned());
        self
    }

    /// A name, shown in `Debug` and given to the shared-memory file.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Allocates the tensor.
    pub fn build(self) -> Result<Tensor<T>> {
        let e = T::DTYPE.size();
        let geom = match &self.what {
            Shape::Array(shape) => Geometry::Array(ArrayGeom::contiguous(shape, e, 0)?),
            Shape::Image(layout) => Geometry::Image(ImageGeom::from_layout(layout, e)?),
        };
        let len = match &self.what {
            Shape::Array(_) => geom.span().end,
            Shape::Image(layout) => layout.size_bytes(e)?,
        };
        let buffer = allocate(len, self.memory, self.heap.as_deref(), self.name.as_deref())?;
        Ok(Tensor::from_parts(
            Arc::new(buffer),
            None,
            geom,
            BufferIdentity::fresh(),
            self.name.map(Arc::from),
        ))
    }
}

impl<T: Element> Tensor<T> {
    pub(crate) fn from_parts(
        buffer: Arc<Buffer>,
        chroma: Option<Arc<Buffer>>,
        geom: Geometry,
        identity: BufferIdentity,
        name: Option<Arc<str>>,
    ) -> Tensor<T> {
        Tensor {
            shape: geom.shape(),
            buffer,
            chroma,
            geom,
            identity,
            name,
            _elem: PhantomData,
        }
    }

    /// The same memory and identity with another geometry.
    fn regeom(&self, geom: Geometry) -> Tensor<T> {
        Tensor::from_parts(
            self.buffer.clone(),
            self.chroma.clone(),
            geom,
            self.identity.clone(),
            self.name.clone(),
        )
    }

    fn buffer(&self) -> &Arc<Buffer> {
        &self.buffer
    }

    /// Allocates a zeroed, C-contiguous tensor of `shape`.
    ///
    /// With `memory` `None` the kind is chosen DMA → SHM → MEM (the first that
    /// allocates), or MEM when `ZEROCAM_TENSOR_FORCE_MEM=1`.
    ///
    /// # Errors
    /// [`Error::EmptyShape`] for a shape with a zero or no dimension; the
    /// backend's error when an explicit `memory` cannot be allocated.
    pub fn new(shape: &[usize], memory: Option<TensorMemory>, name: Option<&str>) -> Result<Self> {
        let mut b = Self::builder(shape);
        b.memory = memory;
        b.name = name.map(str::to_owned);
        b.build()
    }

    /// A builder for a tensor of `shape`.
    pub fn builder(shape: &[usize]) -> TensorBuilder<T> {
        TensorBuilder {
            what: Shape::Array(shape.to_vec()),
            memory: None,
            heap: None,
            name: None,
            _elem: PhantomData,
        }
    }

    /// A builder for an image tensor laid out as `layout`.
    pub fn builder_image(layout: ImageLayout) -> TensorBuilder<T> {
        TensorBuilder {
            what: Shape::Image(layout),
            ..Self::builder(&[])
        }
    }

    /// Allocates a zeroed, packed `width`x`height` image of `format`.
    ///
    /// Shape: `[H, W, C]` for packed formats, `[H*3/2, W]` for NV12, `[2H, W]` for
    /// NV16, `[3, H, W]` for planar RGB. Padded rows, plane offsets and batches
    /// go through [`builder_image`](Tensor::builder_image).
    pub fn image(
        width: usize,
        height: usize,
        format: PixelFormat,
        memory: Option<TensorMemory>,
    ) -> Result<Self> {
        let mut b = Self::builder_image(ImageLayout::new(width, height, format));
        b.memory = memory;
        b.build()
    }

    /// Takes ownership of `fd`, a dma-buf or a memfd whose size cannot shrink,
    /// as a C-contiguous tensor of `shape` at offset 0.
    ///
    /// The fd is mapped once, now, and stays mapped while any tensor, view or
    /// map of it lives. A file that shrank under that mapping would kill the
    /// process with `SIGBUS` on the next access, so only files that cannot
    /// shrink are accepted ([`FdKind::can_shrink`](crate::FdKind::can_shrink)):
    /// - a dma-buf (detected by its filesystem; maps use the sync bracket);
    /// - a memfd sealed with `F_SEAL_SHRINK` (our own shared memory is);
    /// - a memfd made with `MFD_ALLOW_SEALING` and not sealed yet: `from_fd`
    ///   adds `F_SEAL_SHRINK` to it (only that seal; the file can still grow)
    ///   before it reads the size. The seal is permanent, for every holder of
    ///   the file, even if the import then fails for another reason.
    ///
    /// Regular files, tmpfs and POSIX shared-memory files and memfds that
    /// cannot be sealed are refused; [`from_fd_unchecked`](Tensor::from_fd_unchecked)
    /// takes them when the caller can promise that nobody truncates them. The
    /// tensor gets a fresh [`BufferIdentity`]; its
    /// [`fd_identity`](Tensor::fd_identity) is the file's `(st_dev, st_ino)`.
    ///
    /// ```
    /// use zerocam_tensor::{Error, FdKind, Tensor, TensorMemory};
    /// let shm = Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None)?;
    /// let again = Tensor::<u8>::from_fd(shm.clone_fd()?, &[64, 64], None)?;
    /// assert_eq!(again.fd_identity(), shm.fd_identity());
    ///
    /// let dir = std::env::temp_dir().join(format!("zerocam-doc-{}", std::process::id()));
    /// std::fs::write(&dir, [0u8; 4096]).expect("a temporary file");
    /// let file = std::fs::File::open(&dir).expect("the file");
    /// std::fs::remove_file(&dir).expect("removed");
    /// let e = Tensor::<u8>::from_fd(file.into(), &[4096], None).unwrap_err();
    /// assert!(matches!(e, Error::ShrinkableFile { kind: FdKind::RegularFile | FdKind::ShmFile, .. }));
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ShrinkableFile`] naming what the file is when it can shrink;
    /// [`Error::CannotSeal`] for a sealable memfd passed read-only;
    /// [`Error::NotMappable`] for a pipe, socket, device node or directory;
    /// [`Error::BadFd`] if the fd cannot be inspected; [`Error::BufferTooSmall`]
    /// if the file is smaller than the shape. The fd is closed on every error.
    pub fn from_fd(fd: OwnedFd, shape: &[usize], name: Option<&str>) -> Result<Self> {
        let geom = ArrayGeom::contiguous(shape, T::DTYPE.size(), 0)?;
        Self::over_storage(FdStorage::import(fd)?, geom, name)
    }

    /// Imports an fd taken from **another process** (a publisher, a
    /// compositor): [`from_fd`](Tensor::from_fd)'s rule that the file cannot
    /// shrink, and more, since the sender may be hostile:
    /// - only a dma-buf or a shmem memfd sealed with `F_SEAL_SHRINK` is
    ///   taken, and what the fd is is learnt before any `fstat`, `fstatfs` or
    ///   `mmap` runs the file's filesystem code ([`check_peer_fd`](crate::check_peer_fd)):
    ///   a FUSE file whose server never answers, or a hugetlbfs file whose
    ///   pages a hole punch takes back, is refused with
    ///   [`Error::NotPeerMemory`];
    /// - only the bytes `shape` needs are mapped, not the whole file: a sparse
    ///   file of terabytes costs the address space of the tensor, no more.
    ///
    /// ```
    /// use zerocam_tensor::{Error, Tensor, TensorMemory};
    /// let shm = Tensor::<u8>::new(&[1 << 20], Some(TensorMemory::Shm), None)?;
    /// let head = Tensor::<u8>::from_peer_fd(shm.clone_fd()?, &[4096], None)?;
    /// assert_eq!(head.len(), 4096); // the span asked for, not the 1 MiB file
    /// let (r, _w) = nix::unistd::pipe().expect("a pipe");
    /// let e = Tensor::<u8>::from_peer_fd(r, &[16], None).unwrap_err();
    /// assert!(matches!(e, Error::NotPeerMemory { .. }));
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`check_peer_fd`](crate::check_peer_fd)'s; [`Error::BufferTooSmall`]
    /// when the file is smaller than the shape. The fd is closed on every
    /// error.
    pub fn from_peer_fd(fd: OwnedFd, shape: &[usize], name: Option<&str>) -> Result<Self> {
        let geom = ArrayGeom::contiguous(shape, T::DTYPE.size(), 0)?;
        let len = geom.offset + byte_len(&geom);
        Self::over_storage(FdStorage::import_peer(fd, len)?, geom, name)
    }

    /// A tensor of `geom` over an imported file, checked to fit in it.
    pub(crate) fn over_storage(
        storage: FdStorage,
        geom: ArrayGeom,
        name: Option<&str>,
    ) -> Result<Self> {
        let buffer = Buffer::new(storage);
        check_fits(geom.offset + byte_len(&geom), buffer.len())?;
        Ok(Tensor::from_parts(
            Arc::new(buffer),
            None,
            Geometry::Array(geom),
            BufferIdentity::fresh(),
            name.map(Arc::from),
        ))
    }

    /// Wraps memory someone else owns — a mapped GStreamer buffer, a
    /// decoder's output — as a **read-only** C-contiguous tensor of `shape`,
    /// without a copy. `owner` is kept (boxed) until the last tensor, view
    /// or map of it drops; its [`ExternalMemory`](crate::ExternalMemory)
    /// contract keeps the bytes valid and unchanged meanwhile. The memory
    /// kind is [`TensorMemory::Mem`]; [`is_external`](Tensor::is_external)
    /// tells it from our own heap.
    ///
    /// ```
    /// use zerocam_tensor::{Error, ExternalMemory, Tensor};
    ///
    /// struct Decoded(Vec<u8>); // stands for a decoder's frame
    /// // SAFETY: the Vec is never touched again: same bytes, unchanged, while it lives.
    /// unsafe impl ExternalMemory for Decoded {
    ///     fn bytes(&self) -> &[u8] { &self.0 }
    /// }
    ///
    /// let t = Tensor::<u8>::from_external(Decoded(vec![7; 64]), &[8, 8], None)?;
    /// assert!(t.is_external());
    /// assert_eq!(t.map_read()?[63], 7);
    /// assert!(matches!(t.map_write(), Err(Error::ReadOnly { .. })));
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] when the bytes are fewer than the shape
    /// needs (or none); [`Error::Misaligned`] when they are not aligned for
    /// `T`; the shape's own errors.
    pub fn from_external(
        owner: impl crate::ExternalMemory,
        shape: &[usize],
        name: Option<&str>,
    ) -> Result<Self> {
        let geom = ArrayGeom::contiguous(shape, T::DTYPE.size(), 0)?;
        let storage = ExternalStorage::new(Box::new(owner), std::mem::align_of::<T>())?;
        Self::over_external(storage, geom, name)
    }

    /// Wraps memory someone else owns and lends for writing — a model
    /// runtime's input tensor, a numpy array — as a **writable**
    /// C-contiguous tensor of `shape`, without a copy: what a model input
    /// is written straight into
    /// (`Preprocessor::run_into` in zerocam-preprocess). `owner` is kept
    /// (boxed) until the last tensor, view or map of it drops; its
    /// [`ExternalMemoryMut`](crate::ExternalMemoryMut) contract keeps the
    /// bytes valid and the owner's other users out while a map is open.
    ///
    /// ```
    /// use zerocam_tensor::{ExternalMemoryMut, Tensor};
    ///
    /// struct Input(Box<[f32]>); // stands for a runtime's input buffer
    /// // SAFETY: the box is never reallocated; nothing else touches it.
    /// unsafe impl ExternalMemoryMut for Input {
    ///     fn bytes_mut(&mut self) -> &mut [u8] {
    ///         let len = self.0.len() * 4;
    ///         // SAFETY: the f32s' own bytes, as many as they have.
    ///         unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), len) }
    ///     }
    /// }
    ///
    /// let t = Tensor::<f32>::from_external_mut(Input(vec![0.0; 12].into()), &[1, 3, 2, 2], None)?;
    /// t.map_write()?[5] = 0.5;
    /// assert_eq!(t.map_read()?[5], 0.5);
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`from_external`](Tensor::from_external).
    pub fn from_external_mut(
        owner: impl crate::ExternalMemoryMut,
        shape: &[usize],
        name: Option<&str>,
    ) -> Result<Self> {
        let geom = ArrayGeom::contiguous(shape, T::DTYPE.size(), 0)?;
        let storage = ExternalStorage::new_mut(Box::new(owner), std::mem::align_of::<T>())?;
        Self::over_external(storage, geom, name)
    }

    /// A tensor of `geom` over an outside owner's memory, checked to fit in it.
    fn over_external(
        storage: ExternalStorage,
        geom: ArrayGeom,
        name: Option<&str>,
    ) -> Result<Self> {
        let buffer = Buffer::new(storage);
        check_fits(byte_len(&geom), buffer.len())?;
        Ok(Tensor::from_parts(
            Arc::new(buffer),
            None,
            Geometry::Array(geom),
            BufferIdentity::fresh(),
            name.map(Arc::from),
        ))
    }

    /// Whether the tensor wraps memory someone else owns
    /// ([`from_external`](Tensor::from_external)).
    pub fn is_external(&self) -> bool {
        self.buffer().is_external()
    }

    /// Wraps GL pixel buffer object `buffer` of `shape`; the GL backend's `ops`
    /// maps, unmaps and finally deletes it.
    pub fn from_pbo(
        ops: Arc<dyn PboOps>,
        buffer: u32,
        shape: &[usize],
        name: Option<&str>,
    ) -> Result<Self> {
        let geom = ArrayGeom::contiguous(shape, T::DTYPE.size(), 0)?;
        let len = byte_len(&geom);
        Ok(Tensor::from_parts(
            Arc::new(Buffer::new(PboStorage::new(ops, buffer, len))),
            None,
            Geometry::Array(geom),
            BufferIdentity::fresh(),
            name.map(Arc::from),
        ))
    }

    /// Reinterprets this contiguous tensor's bytes as an image laid out as
    /// `layout`, starting `layout.start_offset` bytes into the tensor.
    ///
    /// This is how a driver's buffer becomes an image: import the fd with
    /// [`from_fd`](Tensor::from_fd) at its full size, then describe its layout
    /// (V4L2's `bytesperline`, `data_offset`).
    ///
    /// # Errors
    /// The layout's own errors; [`Error::BufferTooSmall`] if it does not fit;
    /// [`Error::UnsupportedFormat`] on a tensor that is already an image.
    pub fn with_image(self, layout: ImageLayout) -> Result<Self> {
        let base = match &self.geom {
            Geometry::Array(a)
                if ArrayGeom::contiguous(&a.shape, a.elem, a.offset)
                    .ok()
                    .as_ref()
                    == Some(a) =>
            {
                a.offset
            }
            Geometry::Array(_) | Geometry::Image(_) => {
                return Err(Error::UnsupportedFormat {
                    format: layout.format,
                    operation: "with_image on a view or an image tensor",
                })
            }
        };
        let available = self.geom.span().end;
        let start = base
            .checked_add(layout.start_offset)
            .ok_or(Error::BadPlaneOffset {
                offset: layout.start_offset,
                min: 0,
            })?;
        let layout = layout.with_start_offset(start);
        let geom = ImageGeom::from_layout(&layout, T::DTYPE.size())?;
        check_fits(geom.span().end, available)?;
        Ok(self.regeom(Geometry::Image(geom)))
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geom
    }

    pub(crate) fn chroma_arc(&self) -> Option<&Arc<Buffer>> {
        self.chroma.as_ref()
    }

    pub(crate) fn buffer_arc(&self) -> &Arc<Buffer> {
        &self.buffer
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// The shape (see [`image`](Tensor::image) for image tensors).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Byte strides matching [`shape`](Tensor::shape), when the layout has
    /// uniform strides (all but views of NV12/NV16 and split-plane images).
    pub fn strides(&self) -> Option<Vec<usize>> {
        self.geom.strides().map(|s| s.to_vec())
    }

    /// The byte stride of axis `axis` of [`strides`](Tensor::strides),
    /// without allocating (for per-frame checks); `None` past the last axis
    /// or when the layout has no uniform strides.
    ///
    /// ```
    /// use zerocam_tensor::{Region, Tensor, TensorMemory};
    /// let t = Tensor::<f32>::new(&[2, 6, 4], Some(TensorMemory::Mem), None)?;
    /// assert_eq!((t.stride(0), t.stride(2), t.stride(3)), (Some(96), Some(4), None));
    /// let view = t.view(Region::new(0, 0, 3, 2))?; // [2, 3, 4] of the [2, 6, 4]
    /// assert_eq!(view.stride(0), Some(96));
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    pub fn stride(&self, axis: usize) -> Option<usize> {
        self.geom.strides().and_then(|s| s.get(axis).copied())
    }

    /// Number of elements of the shape.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements (never true: empty shapes are refused).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size in bytes of the elements (`len() * size_of::<T>()`, padding excluded).
    pub fn size(&self) -> usize {
        self.len() * T::DTYPE.size()
    }

    /// The memory kind.
    pub fn memory(&self) -> TensorMemory {
        self.buffer().memory()
    }

    /// The name given at allocation or import.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// How many handles hold this tensor's (first) buffer now: tensors (this
    /// one, its clones, views, batches and planes), live maps and host pins.
    ///
    /// 1 means this handle is the only one, and it stays so until this handle
    /// is cloned, viewed or mapped (only a handle makes another): nothing
    /// else reads or writes the memory through this import. That is how a
    /// pool of output tensors tells a result still in use from one it may
    /// overwrite. Not counted: another import of the same fd
    /// (`from_fd(clone_fd())` makes a new buffer), a GPU cache's weak
    /// entries, [`MemoryHold`](crate::MemoryHold)s (a device's registration),
    /// and, for an image whose chroma lives in a second buffer
    /// (NV12M), handles on that chroma plane alone.
    ///
    /// ```
    /// use zerocam_tensor::{Tensor, TensorMemory};
    /// let t = Tensor::<f32>::new(&[1, 3, 4, 4], Some(TensorMemory::Mem), None)?;
    /// assert_eq!(t.handle_count(), 1);
    /// let held = t.clone();
    /// let map = t.map_read()?;
    /// assert_eq!(t.handle_count(), 3);
    /// drop((held, map));
    /// assert_eq!(t.handle_count(), 1);
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    pub fn handle_count(&self) -> usize {
        Arc::strong_count(&self.buffer)
    }

    /// The identity shared with clones, views, batches and planes.
    pub fn buffer_identity(&self) -> &BufferIdentity {
        &self.identity
    }

    /// The pixel format of an image tensor.
    pub fn format(&self) -> Option<PixelFormat> {
        self.geom.image().map(|i| i.format)
    }

    /// Width in pixels of an image tensor.
    pub fn width(&self) -> Option<usize> {
        self.geom.image().map(|i| i.width)
    }

    /// Height in pixels of an image tensor.
    pub fn height(&self) -> Option<usize> {
        self.geom.image().map(|i| i.height)
    }

    /// Bytes between rows of the first plane of an image tensor.
    pub fn row_stride(&self) -> Option<usize> {
        self.geom.image().map(|i| i.planes[0].stride)
    }

    /// Byte offset of the tensor's first element in its (first) buffer: the
    /// import offset an import cache keys on with [`fd_identity`](Tensor::fd_identity).
    pub fn plane_offset(&self) -> usize {
        self.geom.offset()
    }

    /// Number of planes (1 for arrays and packed images).
    pub fn plane_count(&self) -> usize {
        self.geom.image().map_or(1, ImageGeom::plane_count)
    }

    /// The fd behind the tensor's (first) buffer, borrowed. `None` for heap memory.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.buffer().fd()
    }

    /// Records that a device (a GPU sampling or rendering, a DMA engine) uses
    /// the whole of this tensor's buffer(s) with `access` until the borrow
    /// drops: overlapping CPU maps are refused meanwhile, as with
    /// [`FileBorrows::device_borrow`](crate::FileBorrows::device_borrow), but
    /// through the record the tensor already holds (no registry lookup).
    ///
    /// ```
    /// use zerocam_tensor::{Access, Error, Tensor, TensorMemory};
    /// let t = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None)?;
    /// let gpu = t.device_borrow(Access::Read)?;
    /// assert!(matches!(t.map_write(), Err(Error::MapConflict { .. })));
    /// assert!(t.map_read().is_ok());
    /// drop(gpu);
    /// assert!(t.map_write().is_ok());
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::MapConflict`] while a conflicting map or borrow is alive.
    pub fn device_borrow(&self, access: crate::Access) -> Result<crate::DeviceBorrow> {
        crate::DeviceBorrow::new(
            self.buffer.tracker(),
            self.chroma.as_ref().map(|c| c.tracker()),
            access,
        )
    }

    /// The GL buffer object name behind a PBO tensor (for the GL side: a
    /// readback or an upload straight into it); `None` for other memory. The
    /// name means something only in its owner's context: see
    /// [`pbo_owner`](Tensor::pbo_owner).
    pub fn pbo_buffer(&self) -> Option<u32> {
        self.buffer().pbo().map(|(buffer, _)| buffer)
    }

    /// [`PboOps::owner`] of a PBO tensor's GL side; `None` for other memory.
    pub fn pbo_owner(&self) -> Option<usize> {
        self.buffer().pbo().map(|(_, owner)| owner)
    }

    /// `(st_dev, st_ino)` of the fd behind the tensor's (first) buffer.
    pub fn fd_identity(&self) -> Option<FdIdentity> {
        self.buffer().fd_identity()
    }

    /// A new fd for the tensor's buffer (a `dup`), e.g. to queue it to V4L2, import
    /// it into EGL or pass it to another process.
    ///
    /// # Errors
    /// [`Error::NoFd`] for heap and PBO memory; [`Error::MultiBuffer`] for an image
    /// whose planes live in two buffers (use [`plane`](Tensor::plane)`(i)`).
    pub fn clone_fd(&self) -> Result<OwnedFd> {
        if self.geom.buffer_count() > 1 {
            return Err(Error::MultiBuffer {
                buffers: self.geom.buffer_count(),
            });
        }
        let fd = self.fd().ok_or(Error::NoFd {
            memory: self.memory(),
        })?;
        dup_fd(fd)
    }

    /// A view of `region` of the leading frame: rows `y..y+height` and columns
    /// `x..x+width` (of an image, or of dims 0 and 1 of an array). Shares the
    /// buffer and identity; views of views add offsets.
    ///
    /// # Errors
    /// [`Error::RegionOutOfBounds`], [`Error::EmptyRegion`],
    /// [`Error::RegionNotAligned`] (odd edges on subsampled chroma),
    /// [`Error::NotTwoDimensional`]. Never clamps.
    pub fn view(&self, region: Region) -> Result<Self> {
        Ok(self.regeom(self.geom.view(region)?))
    }

    /// Element `n` of the leading batch dimension: of `[N, ...]` for arrays, of
    /// the image batch for images (`batch(0)` of an unbatched image is the image).
    ///
    /// # Errors
    /// [`Error::BatchIndexOutOfBounds`] when `n >= N`.
    pub fn batch(&self, n: usize) -> Result<Self> {
        Ok(self.regeom(self.geom.batch(n)?))
    }

    /// Plane `i` of an image as a 2-D tensor of samples `[rows, row samples]`
    /// (with a leading `N` when batched); plane 0 of an array is the array.
    ///
    /// # Errors
    /// [`Error::NoSuchPlane`] for `i` past the format's planes.
    pub fn plane(&self, i: usize) -> Result<Self> {
        let Some(img) = self.geom.image() else {
            return if i == 0 {
                Ok(self.clone())
            } else {
                Err(Error::NoSuchPlane {
                    index: i,
                    planes: 1,
                })
            };
        };
        let (buffer, geom) = img.plane(i)?;
        let buffer = match (buffer, &self.chroma) {
            (0, _) => self.buffer.clone(),
            (_, Some(chroma)) => chroma.clone(),
            (_, None) => {
                return Err(Error::NoSuchPlane {
                    index: i,
                    planes: 1,
                })
            }
        };
        Ok(Tensor::from_parts(
            buffer,
            None,
            Geometry::Array(geom),
            self.identity.clone(),
            self.name.clone(),
        ))
    }

    fn map_mode<M: MapMode>(&self) -> Result<TensorMap<T, M>> {
        if self.geom.buffer_count() > 1 {
            return Err(Error::MultiBuffer {
                buffers: self.geom.buffer_count(),
            });
        }
        TensorMap::new(
            self.buffer().clone(),
            self.geom.span(),
            self.shape.clone(),
            self.geom.strides(),
        )
    }

    /// Maps the tensor for reading and writing.
    ///
    /// The slice runs from the first element to the last, padding included (rows
    /// are [`row_stride`](Tensor::row_stride) apart); `TensorMapTrait::view` gives
    /// the strided ndarray. For a dma-buf this is one `DMA_BUF_IOCTL_SYNC`
    /// START|RW now and END|RW at drop — the buffer is already mapped.
    ///
    /// # Errors
    /// [`Error::MapConflict`] if another map of overlapping bytes is alive and
    /// either map writes; [`Error::ReadOnly`] for a read-only fd;
    /// [`Error::MultiBuffer`] for split-plane images (map each plane);
    /// [`Error::DmaBufSync`] if the kernel refuses the sync.
    pub fn map(&self) -> Result<TensorMap<T, ReadWrite>> {
        self.map_mode()
    }

    /// Maps the tensor read-only (dma-buf sync READ: no write-back at the end).
    /// Any number of read maps may coexist.
    pub fn map_read(&self) -> Result<TensorMap<T, ReadOnly>> {
        self.map_mode()
    }

    /// Maps the tensor write-only (dma-buf sync WRITE).
    pub fn map_write(&self) -> Result<TensorMap<T, WriteOnly>> {
        self.map_mode()
    }
}

fn byte_len(g: &ArrayGeom) -> usize {
    g.shape.iter().product::<usize>() * g.elem
}

fn check_fits(needed: usize, available: usize) -> Result<()> {
    if needed > available {
        return Err(Error::BufferTooSmall { needed, available });
    }
    Ok(())
}
