//! Allocation from the Linux DMA-BUF heaps in `/dev/dma_heap` (the `dma-heap`
//! crate). Opened heaps are kept for the process's life: one fd per heap, so an
//! allocation is one ioctl, not an open + ioctl + close.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use dma_heap::{Heap, HeapKind};

use super::fd::FdStorage;
use crate::{Error, Result};

/// Where the kernel puts the heap devices.
pub(crate) const HEAP_DIR: &str = "/dev/dma_heap";

/// Heaps tried, in order, when none is named and `ZEROCAM_DMA_HEAP` is unset:
/// physically contiguous CMA first (what i.MX ISI / G2D / VPU need), then a
/// board's reserved pool, then the scatter-gather system heap.
pub const DEFAULT_HEAPS: [&str; 3] = ["linux,cma", "reserved", "system"];

/// Environment variable naming the heap to use by default.
pub const HEAP_ENV: &str = "ZEROCAM_DMA_HEAP";

fn opened() -> &'static Mutex<HashMap<String, Arc<Heap>>> {
    static HEAPS: OnceLock<Mutex<HashMap<String, Arc<Heap>>>> = OnceLock::new();
    HEAPS.get_or_init(Default::default)
}

/// Names of the heaps present in `/dev/dma_heap`, sorted.
pub fn available_heaps() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(HEAP_DIR)
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn open(name: &str) -> Result<Arc<Heap>> {
    let mut heaps = opened().lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(h) = heaps.get(name) {
        return Ok(h.clone());
    }
    let path = Path::new(HEAP_DIR).join(name);
    if !path.exists() {
        return Err(Error::UnknownHeap {
            name: name.to_owned(),
            available: available_heaps(),
        });
    }
    let heap = Heap::new(HeapKind::Custom(path.clone())).map_err(|e| Error::DmaUnavailable {
        reason: format!("opening {}: {e}", path.display()),
    })?;
    let heap = Arc::new(heap);
    heaps.insert(name.to_owned(), heap.clone());
    Ok(heap)
}

/// The heap used when none is named: `ZEROCAM_DMA_HEAP`, else the first of
/// [`DEFAULT_HEAPS`] that opens.
pub(crate) fn default_heap() -> Result<(String, Arc<Heap>)> {
    if let Ok(name) = std::env::var(HEAP_ENV) {
        return open(&name).map(|h| (name, h));
    }
    let mut last = None;
    for name in DEFAULT_HEAPS {
        match open(name) {
            Ok(h) => return Ok((name.to_owned(), h)),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(Error::UnknownHeap { .. }) | None => Error::DmaUnavailable {
            reason: format!(
                "none of {DEFAULT_HEAPS:?} exists in {HEAP_DIR} (present: {:?})",
                available_heaps()
            ),
        },
        Some(e) => e,
    })
}

/// Allocates `len` bytes from heap `name` (or the default heap, as
/// [`Tensor::new`](crate::Tensor::new) picks it) as a **read-only** dma-buf:
/// its file is opened `O_RDONLY`, so every holder of the fd, in this process
/// or another one it is sent to, maps it `PROT_READ` only (a writable map is
/// [`Error::ReadOnly`]); a device still writes it by DMA. What a capture pool
/// shared with other processes is made of.
///
/// # Errors
/// [`Error::DmaUnavailable`] / [`Error::UnknownHeap`] as for a DMA tensor,
/// [`Error::DmaAlloc`] when the heap refuses the allocation.
pub fn allocate_read_only(len: usize, name: Option<&str>) -> Result<std::os::fd::OwnedFd> {
    let name = match name {
        Some(n) => {
            open(n)?;
            n.to_owned()
        }
        None => default_heap()?.0,
    };
    let path = PathBuf::from(HEAP_DIR).join(&name);
    let failed = |source: std::io::Error| Error::DmaAlloc {
        len,
        heap: path.clone(),
        source,
    };
    let heap = std::fs::File::open(&path).map_err(failed)?;
    crate::sys::dmabuf::heap_alloc_read_only(std::os::fd::AsFd::as_fd(&heap), len)
        .map_err(|e| failed(e.into()))
}

/// Allocates `len` bytes from heap `name` (or the default heap) and maps it.
pub(crate) fn allocate(len: usize, name: Option<&str>) -> Result<FdStorage> {
    let (name, heap) = match name {
        Some(n) => (n.to_owned(), open(n)?),
        None => default_heap()?,
    };
    let fd = heap.allocate(len).map_err(|source| Error::DmaAlloc {
        len,
        heap: PathBuf::from(HEAP_DIR).join(&name),
        source,
    })?;
    FdStorage::import(fd)
}
