//! The crate's error type.

use std::path::PathBuf;

use nix::errno::Errno;

use crate::{DType, FdKind, PixelFormat, Region};

/// The result type of every fallible zerocam-tensor operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong making, importing, viewing or mapping a tensor.
///
/// Each variant carries the values involved so its message says what was wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A shape with no dimensions or a zero-sized dimension.
    #[error("shape {shape:?} has no elements")]
    EmptyShape {
        /// The shape that was asked for.
        shape: Vec<usize>,
    },

    /// The byte size of a shape does not fit in `usize`.
    #[error("shape {shape:?} of {elem_size}-byte elements overflows the address space")]
    ShapeOverflow {
        /// The shape that was asked for.
        shape: Vec<usize>,
        /// Bytes per element.
        elem_size: usize,
    },

    /// A region that does not lie inside the tensor's frame.
    #[error("region x={x} y={y} {w}x{h} is out of bounds: x+width = {xw} > width {width} or y+height = {yh} > height {height}", x = region.x, y = region.y, w = region.width, h = region.height, xw = region.x.saturating_add(region.width), yh = region.y.saturating_add(region.height))]
    RegionOutOfBounds {
        /// The region that was asked for.
        region: Region,
        /// Width of the frame it was asked of.
        width: usize,
        /// Height of the frame it was asked of.
        height: usize,
    },

    /// A region of zero width or height.
    #[error("region x={} y={} {}x{} is empty", region.x, region.y, region.width, region.height)]
    EmptyRegion {
        /// The region that was asked for.
        region: Region,
    },

    /// A region whose edges split a chroma sample of a subsampled format.
    #[error("region x={} y={} {}x{} is not aligned to {format}'s {hsub}x{vsub} chroma subsampling", region.x, region.y, region.width, region.height)]
    RegionNotAligned {
        /// The region that was asked for.
        region: Region,
        /// The tensor's pixel format.
        format: PixelFormat,
        /// Horizontal subsampling factor.
        hsub: usize,
        /// Vertical subsampling factor.
        vsub: usize,
    },

    /// A region view of a tensor with fewer than two dimensions.
    #[error("a region needs a tensor of at least 2 dimensions, this one has shape {shape:?}")]
    NotTwoDimensional {
        /// The tensor's shape.
        shape: Vec<usize>,
    },

    /// `batch(n)` with `n` not below the batch size.
    #[error("batch index {index} is out of bounds for batch size {batch}")]
    BatchIndexOutOfBounds {
        /// The index that was asked for.
        index: usize,
        /// The batch size (leading dimension).
        batch: usize,
    },

    /// An image whose dimensions do not suit its pixel format.
    #[error("{format} image {width}x{height} is invalid: {reason}")]
    BadImageSize {
        /// The pixel format.
        format: PixelFormat,
        /// Requested width in pixels.
        width: usize,
        /// Requested height in pixels.
        height: usize,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A row stride smaller than a packed row, or not a whole number of elements.
    #[error("row stride {stride} bytes is invalid for rows of {row_bytes} bytes of {elem_size}-byte elements")]
    BadStride {
        /// The stride that was asked for.
        stride: usize,
        /// Bytes of one packed row.
        row_bytes: usize,
        /// Bytes per element.
        elem_size: usize,
    },

    /// A plane offset that overlaps the previous plane or is misaligned.
    #[error("plane offset {offset} is invalid: the previous plane ends at byte {min}")]
    BadPlaneOffset {
        /// The offset that was asked for.
        offset: usize,
        /// The smallest valid offset.
        min: usize,
    },

    /// A buffer (fd or allocation) smaller than the tensor laid on it.
    #[error("buffer of {available} bytes is too small: the tensor needs {needed} bytes")]
    BufferTooSmall {
        /// Bytes the tensor needs, offset included.
        needed: usize,
        /// Bytes the buffer has.
        available: usize,
    },

    /// External memory ([`Tensor::from_external`](crate::Tensor::from_external))
    /// not aligned for the element type.
    #[error("external memory at {address:#x} is not aligned to {alignment} bytes (the element's)")]
    Misaligned {
        /// The memory's address.
        address: usize,
        /// The alignment the element type needs.
        alignment: usize,
    },

    /// Two planes that do not form the requested multi-plane image.
    #[error("{format} planes do not match: {reason}")]
    PlaneMismatch {
        /// The requested format.
        format: PixelFormat,
        /// What does not match, with the values.
        reason: String,
    },

    /// A pixel format that an operation does not support.
    #[error("pixel format {format} is not supported by {operation}")]
    UnsupportedFormat {
        /// The format.
        format: PixelFormat,
        /// The operation that refused it.
        operation: &'static str,
    },

    /// A plane index the tensor does not have.
    #[error("plane {index} does not exist: the tensor has {planes} plane(s)")]
    NoSuchPlane {
        /// The index asked for.
        index: usize,
        /// Planes present.
        planes: usize,
    },

    /// A tensor of another element type than the one asked for.
    #[error("tensor holds {actual} elements, not {expected}")]
    DTypeMismatch {
        /// The element type asked for.
        expected: DType,
        /// The element type held.
        actual: DType,
    },

    /// A file descriptor that could not be inspected (closed, or `O_PATH`).
    #[error("fd {fd} cannot be inspected ({op}): {errno}")]
    BadFd {
        /// The raw fd number (for the message only).
        fd: i32,
        /// The call that failed.
        op: &'static str,
        /// The errno it returned.
        errno: Errno,
    },

    /// A file descriptor that cannot be memory-mapped: a pipe, socket, device
    /// node or directory (`ENODEV`, as `mmap` gives), or a file `mmap` refused.
    #[error("fd {fd} is {kind}, which cannot be memory-mapped: {errno}")]
    NotMappable {
        /// The raw fd number (for the message only).
        fd: i32,
        /// What the fd is.
        kind: FdKind,
        /// `ENODEV` for a kind that has no mappable bytes, else the errno
        /// `mmap` returned.
        errno: Errno,
    },

    /// A file whose size can shrink while it is mapped, refused by the safe
    /// imports (`from_fd`, `import_planes`): touching a page past a truncated
    /// end would kill the process with `SIGBUS`.
    #[error(
        "fd {fd} is {kind}: its size can shrink while it is mapped, and an access past a \
         truncated end would kill the process with SIGBUS, so it is not imported; pass a \
         dma-buf or a memfd sealed with F_SEAL_SHRINK (a memfd made with MFD_ALLOW_SEALING \
         is sealed on import), or, if nothing truncates the file while the tensor lives, \
         the unsafe from_fd_unchecked"
    )]
    ShrinkableFile {
        /// The raw fd number (for the message only).
        fd: i32,
        /// What the file is.
        kind: FdKind,
    },

    /// An fd from another process that is not memory the kernel holds for
    /// it, refused by the peer imports ([`Tensor::from_peer_fd`](crate::Tensor::from_peer_fd),
    /// [`check_peer_fd`](crate::check_peer_fd)) before any `fstat`,
    /// `fstatfs` or `mmap` could run the file's filesystem code: a FUSE file
    /// whose server never answers would hang the caller unkillably, and a
    /// hugetlbfs file's pages can be punched out (`SIGBUS`).
    #[error(
        "fd {fd} is {what}: from another process only a dma-buf or a shmem memfd \
         sealed with F_SEAL_SHRINK is imported"
    )]
    NotPeerMemory {
        /// The raw fd number (for the message only).
        fd: i32,
        /// What the fd is, as far as could be told without asking its
        /// filesystem (what `/proc/self/fd/N` links to).
        what: String,
    },

    /// A memfd that allows sealing, passed without write access: adding
    /// `F_SEAL_SHRINK` needs a writable fd (`EPERM`).
    #[error(
        "fd {fd} is a memfd without F_SEAL_SHRINK that is open read-only, and sealing it \
         needs write access ({errno}): pass a writable fd, or add F_SEAL_SHRINK before \
         passing it read-only"
    )]
    CannotSeal {
        /// The raw fd number (for the message only).
        fd: i32,
        /// The errno of `fcntl(F_ADD_SEALS)`.
        errno: Errno,
    },

    /// An operation that needs an fd on a tensor without one (heap memory).
    #[error("{memory} tensors have no file descriptor")]
    NoFd {
        /// The tensor's memory kind.
        memory: crate::TensorMemory,
    },

    /// Duplicating a file descriptor failed.
    #[error("duplicating fd {fd} failed: {errno}")]
    DupFailed {
        /// The raw fd number (for the message only).
        fd: i32,
        /// The errno.
        errno: Errno,
    },

    /// A DMA heap that does not exist.
    #[error("DMA heap {name:?} not found in /dev/dma_heap (available: {available:?})")]
    UnknownHeap {
        /// The heap name asked for.
        name: String,
        /// The heaps that exist.
        available: Vec<String>,
    },

    /// No DMA heap could be opened at all.
    #[error("no DMA heap is available: {reason}")]
    DmaUnavailable {
        /// Why, with the path tried.
        reason: String,
    },

    /// A DMA heap refused an allocation.
    #[error("allocating {len} bytes from DMA heap {heap} failed: {source}")]
    DmaAlloc {
        /// Requested size.
        len: usize,
        /// The heap's path.
        heap: PathBuf,
        /// The error from the heap.
        source: std::io::Error,
    },

    /// Creating shared memory failed.
    #[error("creating {len} bytes of shared memory failed ({op}): {errno}")]
    ShmAlloc {
        /// Requested size.
        len: usize,
        /// The call that failed.
        op: &'static str,
        /// The errno.
        errno: Errno,
    },

    /// The heap allocator refused an allocation.
    #[error("allocating {len} bytes of heap memory failed")]
    HeapAlloc {
        /// Requested size.
        len: usize,
    },

    /// `DMA_BUF_IOCTL_SYNC` failed.
    #[error("DMA_BUF_IOCTL_SYNC {flags:#x} on fd {fd} failed: {errno}")]
    DmaBufSync {
        /// The raw fd number (for the message only).
        fd: i32,
        /// The sync flags.
        flags: u64,
        /// The errno.
        errno: Errno,
    },

    /// A second map that would alias a writable map of the same bytes.
    #[error("bytes {start}..{end} are already mapped {held}; a {requested} map would alias them")]
    MapConflict {
        /// First byte of the requested map.
        start: usize,
        /// End of the requested map.
        end: usize,
        /// The access of the map already held.
        held: crate::Access,
        /// The access requested.
        requested: crate::Access,
    },

    /// A writable map of memory that is mapped read-only.
    #[error(
        "the buffer is read-only (its fd was opened without write access); {requested} map refused"
    )]
    ReadOnly {
        /// The access requested.
        requested: crate::Access,
    },

    /// A map of a tensor whose planes live in separate buffers.
    #[error("the tensor's planes live in {buffers} separate buffers; map each with plane(i)")]
    MultiBuffer {
        /// Buffers behind the tensor.
        buffers: usize,
    },

    /// A memory kind that cannot be allocated by `Tensor::new`.
    #[error("{memory} tensors cannot be allocated here: {reason}")]
    UnsupportedMemory {
        /// The memory kind asked for.
        memory: crate::TensorMemory,
        /// Why not.
        reason: &'static str,
    },

    /// A PBO tensor's map or unmap failed: a GL call failed (`reason` is the
    /// GL side's error), or a CPU access asked for more than the mapping it
    /// would share (a write while the PBO is mapped for reading). A GL thread
    /// that has gone away gives [`Error::PboDisconnected`] instead.
    #[error("PBO {buffer}: {reason}")]
    Pbo {
        /// The GL buffer name.
        buffer: u32,
        /// What failed.
        reason: String,
    },

    /// The GL thread that owns a PBO has exited; the PBO went with its context.
    #[error("PBO {buffer}: its GL thread has exited (the buffer was freed with its context)")]
    PboDisconnected {
        /// The GL buffer name.
        buffer: u32,
    },

    /// An ndarray view of a layout ndarray cannot express.
    #[cfg(feature = "ndarray")]
    #[error("the mapped layout (shape {shape:?}) has no uniform strides; view it plane by plane")]
    NotStrided {
        /// The tensor's shape.
        shape: Vec<usize>,
    },
}
