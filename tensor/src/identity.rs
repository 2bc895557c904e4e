//! Identities: [`BufferIdentity`] for in-process caches, [`FdIdentity`] for
//! caches of kernel buffers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// The identity of one allocation or import, shared by the tensor, its clones,
/// views, batches and planes.
///
/// `id()` never repeats within a process, so a GPU-side cache can key on it (plus
/// the import geometry); `weak()` goes dead when the last tensor sharing the
/// identity drops, so a cache can tell a stale entry without keeping it alive.
/// Every allocation and every import (`from_fd`, `from_planes`) gets a fresh one:
/// importing the same dma-buf twice gives two identities — key kernel buffers on
/// [`FdIdentity`] instead.
///
/// ```
/// use zerocam_tensor::{Region, Tensor, TensorMemory};
/// let t = Tensor::<u8>::new(&[4, 4], Some(TensorMemory::Mem), None)?;
/// let v = t.view(Region::new(0, 0, 2, 2))?;
/// assert_eq!(t.buffer_identity().id(), v.buffer_identity().id());
/// let weak = t.buffer_identity().weak();
/// drop((t, v));
/// assert!(weak.upgrade().is_none());
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct BufferIdentity {
    id: u64,
    alive: Arc<()>,
}

impl BufferIdentity {
    pub(crate) fn fresh() -> BufferIdentity {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        BufferIdentity {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            alive: Arc::new(()),
        }
    }

    /// The process-unique id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A liveness guard: upgrades while any tensor with this identity lives.
    pub fn weak(&self) -> Weak<()> {
        Arc::downgrade(&self.alive)
    }
}

impl PartialEq for BufferIdentity {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for BufferIdentity {}

impl std::hash::Hash for BufferIdentity {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

/// The kernel identity of the file behind an fd: `(st_dev, st_ino)` from `fstat`.
///
/// Stable for as long as any fd or mapping of the file lives, and the same for
/// every fd of it (dups, fds passed between processes) — unlike fd numbers, which
/// the kernel recycles. A dma-buf exported twice (two `VIDIOC_EXPBUF` calls) is
/// two files with two identities. Import caches key on this plus the plane offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FdIdentity {
    /// `st_dev`: the device of the filesystem holding the inode.
    pub dev: u64,
    /// `st_ino`: the inode number.
    pub ino: u64,
}

impl FdIdentity {
    /// `fstat(fd)`'s `(st_dev, st_ino)`: the identity of the file behind any
    /// fd (a dma-buf a driver exported, a libcamera plane), without importing it.
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use zerocam_tensor::{FdIdentity, Tensor, TensorMemory};
    /// let t = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None)?;
    /// let fd = t.clone_fd()?;
    /// assert_eq!(FdIdentity::of(fd.as_fd()).ok(), t.fd_identity());
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// `fstat`'s errno (`EBADF` for a closed fd).
    pub fn of(fd: std::os::fd::BorrowedFd<'_>) -> Result<FdIdentity, nix::errno::Errno> {
        let st = nix::sys::stat::fstat(fd)?;
        Ok(FdIdentity {
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }
}
