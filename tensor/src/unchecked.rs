//! The unchecked import: [`Tensor::from_fd_unchecked`] and
//! [`TensorDyn::from_fd_unchecked`] take any mappable file without the check
//! that it cannot shrink. What keeps that sound — nobody truncates the file
//! while it is mapped — cannot be checked here, so it is the caller's promise:
//! these are `unsafe fn`s, and this module, which holds all of the unchecked
//! import and nothing else, is an `unsafe` edge module for that reason.
//! It has no `unsafe` block of its own besides passing the
//! promise on.

use std::os::fd::{AsFd, OwnedFd};

use half::f16;

use crate::geometry::ArrayGeom;
use crate::storage::fd::FdStorage;
use crate::sys::fd::{classify, Policy};
use crate::tensor_dyn::by_dtype;
use crate::{DType, Element, Result, Tensor, TensorDyn};

impl FdStorage {
    /// Takes any mappable `fd` (regular and shared-memory files too), leaving
    /// the file as it is, and maps it whole.
    ///
    /// # Safety
    /// Nobody truncates the file while the storage lives (a later access would
    /// die of `SIGBUS`).
    pub(crate) unsafe fn import_unchecked(fd: OwnedFd) -> Result<FdStorage> {
        let info = classify(fd.as_fd(), Policy::AnyMappable)?;
        Self::map(fd, info)
    }
}

impl<T: Element> Tensor<T> {
    /// [`from_fd`](Tensor::from_fd) without the check that the file cannot
    /// shrink: any mappable file is taken as it is (a regular file, a tmpfs or
    /// POSIX shared-memory file, a memfd with or without seals; a sealable
    /// memfd is not sealed). Pipes, sockets, devices and directories are still
    /// refused, and the shape is still checked against the file's size now.
    ///
    /// ```
    /// use std::io::Write;
    /// use zerocam_tensor::{Tensor, TensorMemory};
    /// let path = std::env::temp_dir().join(format!("zerocam-unchecked-{}", std::process::id()));
    /// std::fs::File::create(&path).and_then(|mut f| f.write_all(&[7u8; 64])).expect("a file");
    /// let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).expect("the file");
    /// std::fs::remove_file(&path).expect("removed");
    /// // SAFETY: this file is private to this example and never truncated.
    /// let t = unsafe { Tensor::<u8>::from_fd_unchecked(file.into(), &[64], None) }?;
    /// assert_eq!(t.memory(), TensorMemory::Shm);
    /// assert_eq!(t.map_read()?[63], 7);
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    ///
    /// # Safety
    /// The caller guarantees that nobody — this process or another — truncates
    /// the file below the size it has now while any tensor imported from it,
    /// any view, batch or plane of one, or any map of those lives. Otherwise
    /// an access to the lost pages (a map, a view's slice, a numpy array over
    /// it) kills the process with `SIGBUS`.
    ///
    /// # Errors
    /// As [`from_fd`](Tensor::from_fd), less [`Error::ShrinkableFile`](crate::Error::ShrinkableFile)
    /// and [`Error::CannotSeal`](crate::Error::CannotSeal).
    pub unsafe fn from_fd_unchecked(
        fd: OwnedFd,
        shape: &[usize],
        name: Option<&str>,
    ) -> Result<Self> {
        let geom = ArrayGeom::contiguous(shape, T::DTYPE.size(), 0)?;
        // SAFETY: the caller promises, as this function's contract, that the
        // file is not truncated while the storage lives.
        let storage = unsafe { FdStorage::import_unchecked(fd) }?;
        Self::over_storage(storage, geom, name)
    }
}

impl TensorDyn {
    /// [`Tensor::from_fd_unchecked`] with the element type as a value: any
    /// mappable file, without the check that it cannot shrink.
    ///
    /// # Safety
    /// As [`Tensor::from_fd_unchecked`]: nobody truncates the file below its
    /// present size while any tensor, view or map of it lives, else an access
    /// kills the process with `SIGBUS`.
    ///
    /// # Errors
    /// As [`Tensor::from_fd_unchecked`].
    pub unsafe fn from_fd_unchecked(
        fd: OwnedFd,
        shape: &[usize],
        dtype: DType,
        name: Option<&str>,
    ) -> Result<TensorDyn> {
        // SAFETY: this function's contract is the callee's, passed on.
        by_dtype!(dtype, |T| unsafe {
            Tensor::<T>::from_fd_unchecked(fd, shape, name)
        })
    }
}
