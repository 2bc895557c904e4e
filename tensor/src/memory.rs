//! [`TensorMemory`], the availability probes, and the allocation policy.

use std::ffi::CString;
use std::fmt;
use std::sync::OnceLock;

use crate::buffer::Buffer;
use crate::storage::{dma_heap, fd::FdStorage, heap::HeapStorage};
use crate::sys::fd::memfd;
use crate::{Error, Result};

/// Environment variable that, set to `1`, makes allocations without an explicit
/// memory kind use the heap ([`TensorMemory::Mem`]).
pub const FORCE_MEM_ENV: &str = "ZEROCAM_TENSOR_FORCE_MEM";

/// The memory a tensor lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TensorMemory {
    /// Process heap: fastest for CPU-only work; no fd, cannot be shared.
    Mem,
    /// Shared memory (a memfd): its fd can be passed to another process.
    Shm,
    /// A DMA-BUF: from a `/dev/dma_heap` heap, or imported from a driver.
    /// Devices (camera, GPU, NPU) read and write it without a copy.
    Dma,
    /// An OpenGL pixel buffer object, made by the GL backend.
    Pbo,
}

impl fmt::Display for TensorMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TensorMemory::Mem => "mem",
            TensorMemory::Shm => "shm",
            TensorMemory::Dma => "dma",
            TensorMemory::Pbo => "pbo",
        })
    }
}

/// Whether a DMA-BUF heap can be opened: `ZEROCAM_DMA_HEAP`, else one of
/// `linux,cma`, `reserved` or `system` in `/dev/dma_heap`.
pub fn is_dma_available() -> bool {
    dma_heap::default_heap().is_ok()
}

/// Whether shared memory can be created (memfd). Probed once per process.
pub fn is_shm_available() -> bool {
    static SHM: OnceLock<bool> = OnceLock::new();
    *SHM.get_or_init(|| {
        CString::new("zerocam-probe")
            .ok()
            .is_some_and(|name| memfd(&name, 4096).is_ok())
    })
}

/// Whether the platform's GPU-shareable memory ([`TensorMemory::Dma`] on Linux)
/// can be allocated.
pub fn is_gpu_buffer_available() -> bool {
    is_dma_available()
}

/// Names of the DMA heaps present in `/dev/dma_heap`.
pub fn dma_heaps() -> Vec<String> {
    dma_heap::available_heaps()
}

fn force_mem() -> bool {
    std::env::var_os(FORCE_MEM_ENV).is_some_and(|v| v == "1")
}

fn shm(len: usize, name: Option<&str>) -> Result<Buffer> {
    let label = CString::new(format!("zerocam:{}", name.unwrap_or("tensor")).replace('\0', ""))
        .unwrap_or_default();
    let fd = memfd(&label, len).map_err(|(op, errno)| Error::ShmAlloc { len, op, errno })?;
    Ok(Buffer::new(FdStorage::import(fd)?))
}

/// Allocates `len` bytes of `memory`; with `None`, DMA → SHM → MEM, each tried
/// when the one before fails, unless `ZEROCAM_TENSOR_FORCE_MEM=1` picks MEM.
pub(crate) fn allocate(
    len: usize,
    memory: Option<TensorMemory>,
    heap: Option<&str>,
    name: Option<&str>,
) -> Result<Buffer> {
    match memory {
        Some(TensorMemory::Mem) => Ok(Buffer::new(HeapStorage::new(len)?)),
        Some(TensorMemory::Shm) => shm(len, name),
        Some(TensorMemory::Dma) => Ok(Buffer::new(dma_heap::allocate(len, heap)?)),
        Some(TensorMemory::Pbo) => Err(Error::UnsupportedMemory {
            memory: TensorMemory::Pbo,
            reason: "PBOs are made by the GL backend; wrap one with Tensor::from_pbo",
        }),
        None if force_mem() => allocate(len, Some(TensorMemory::Mem), heap, name),
        None => dma_heap::allocate(len, heap)
            .map(Buffer::new)
            .or_else(|_| shm(len, name))
            .or_else(|_| allocate(len, Some(TensorMemory::Mem), heap, name)),
    }
}
