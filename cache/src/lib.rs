//! # zerocam-cache
//!
//! The import cache between a camera's buffers and the tensors handed to the
//! user. A V4L2 driver cycles a handful of buffers; every frame names one of
//! them by fd. Importing it anew every frame (a new tensor, a new mapping, a new
//! [`BufferIdentity`](zerocam_tensor::BufferIdentity)) defeats every cache
//! downstream, so [`ImportCache`] imports each `(st_dev, st_ino, plane_offset)`
//! once, keeps the tensor — and with it the fd, so the inode cannot be recycled
//! under the entry — and hands out clones of it. Never keyed on an fd number:
//! the kernel reuses those.
//!
//! ```
//! use zerocam_cache::{DmaBufKey, ImportCache};
//! use zerocam_tensor::{Tensor, TensorMemory};
//!
//! let buffer = Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None)?;
//! let key = DmaBufKey::of(&buffer).expect("shm has an fd");
//! let mut cache = ImportCache::new(8);
//! for _ in 0..10 {
//!     let t = cache.get_or_import(key, || Tensor::from_fd(buffer.clone_fd()?, &[4096], None))?;
//!     assert_eq!(t.fd_identity(), buffer.fd_identity());
//! }
//! let stats = cache.stats();
//! assert_eq!((stats.misses, stats.hits, stats.live), (1, 9, 1));
//! # Ok::<(), zerocam_tensor::Error>(())
//! ```

#![forbid(unsafe_code)]

mod gpu;

pub use gpu::{GpuCacheStats, GpuImageCache, ImageKey};

use std::num::NonZeroUsize;

use lru::LruCache;
use zerocam_tensor::{FdIdentity, Tensor};

/// The key of one imported plane: the dma-buf's file and the plane's offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DmaBufKey {
    /// `(st_dev, st_ino)` of the buffer's file.
    pub file: FdIdentity,
    /// Byte offset of the plane (V4L2's `data_offset`, a chroma plane's offset).
    pub plane_offset: usize,
}

impl DmaBufKey {
    /// The key of `tensor`'s fd and plane offset; `None` for memory without an fd.
    pub fn of(tensor: &Tensor<u8>) -> Option<DmaBufKey> {
        Some(DmaBufKey {
            file: tensor.fd_identity()?,
            plane_offset: tensor.plane_offset(),
        })
    }

    /// The key of plane `plane_offset` of the file `file`.
    pub fn new(file: FdIdentity, plane_offset: usize) -> DmaBufKey {
        DmaBufKey { file, plane_offset }
    }
}

/// The cache's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that imported (= imports).
    pub misses: u64,
    /// Entries dropped to make room (LRU order).
    pub evictions: u64,
    /// Entries dropped by [`ImportCache::invalidate`].
    pub invalidated: u64,
    /// Entries alive now.
    pub live: usize,
}

/// An LRU-bounded map from [`DmaBufKey`] to the tensor imported for it.
#[derive(Debug)]
pub struct ImportCache {
    entries: LruCache<DmaBufKey, Tensor<u8>>,
    stats: CacheStats,
}

/// Capacity used when 0 is asked for.
const MIN_CAPACITY: NonZeroUsize = NonZeroUsize::MIN;

impl ImportCache {
    /// A cache of at most `capacity` entries (at least 1). Size it at least
    /// buffers × planes of the stream, or it evicts and re-imports every cycle.
    pub fn new(capacity: usize) -> ImportCache {
        ImportCache {
            entries: LruCache::new(NonZeroUsize::new(capacity).unwrap_or(MIN_CAPACITY)),
            stats: CacheStats::default(),
        }
    }

    /// The tensor for `key`: a clone of the cached one (same
    /// [`BufferIdentity`](zerocam_tensor::BufferIdentity)), or `import()`'s result,
    /// cached, when there is none.
    ///
    /// # Errors
    /// Whatever `import` returns; nothing is cached then.
    pub fn get_or_import<E>(
        &mut self,
        key: DmaBufKey,
        import: impl FnOnce() -> Result<Tensor<u8>, E>,
    ) -> Result<Tensor<u8>, E> {
        if let Some(t) = self.entries.get(&key) {
            self.stats.hits += 1;
            return Ok(t.clone());
        }
        let t = import()?;
        self.stats.misses += 1;
        if self.entries.push(key, t.clone()).is_some() {
            self.stats.evictions += 1;
        }
        Ok(t)
    }

    /// Whether `key` is cached (does not count as a lookup or touch the LRU order).
    pub fn contains(&self, key: &DmaBufKey) -> bool {
        self.entries.contains(key)
    }

    /// Drops every entry: on stream stop, format change and device close.
    pub fn invalidate(&mut self) {
        self.stats.invalidated += self.entries.len() as u64;
        self.entries.clear();
    }

    /// The counters, `live` included.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            live: self.entries.len(),
            ..self.stats
        }
    }

    /// The most entries kept.
    pub fn capacity(&self) -> usize {
        self.entries.cap().get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocam_tensor::TensorMemory;

    fn shm() -> Tensor<u8> {
        Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None).unwrap()
    }

    fn import(t: &Tensor<u8>) -> Result<Tensor<u8>, zerocam_tensor::Error> {
        Tensor::from_fd(t.clone_fd()?, &[64], None)
    }

    #[test]
    fn b_buffers_over_f_frames_import_b_times() {
        let buffers: Vec<_> = (0..4).map(|_| shm()).collect();
        let mut cache = ImportCache::new(8);
        let mut ids = std::collections::HashMap::new();
        for frame in 0..100 {
            let b = &buffers[frame % 4];
            let t = cache
                .get_or_import(DmaBufKey::of(b).unwrap(), || import(b))
                .unwrap();
            let id = *ids.entry(frame % 4).or_insert(t.buffer_identity().id());
            assert_eq!(t.buffer_identity().id(), id, "a hit is the same tensor");
        }
        let s = cache.stats();
        assert_eq!((s.misses, s.hits, s.evictions, s.live), (4, 96, 0, 4));
    }

    #[test]
    fn plane_offset_is_part_of_the_key() {
        let b = shm();
        let k0 = DmaBufKey::of(&b).unwrap();
        let k1 = DmaBufKey::new(k0.file, 32);
        let mut cache = ImportCache::new(8);
        cache.get_or_import(k0, || import(&b)).unwrap();
        cache.get_or_import(k1, || import(&b)).unwrap();
        assert_eq!(cache.stats().misses, 2);
    }

    #[test]
    fn a_small_cache_evicts_least_recently_used() {
        let buffers: Vec<_> = (0..3).map(|_| shm()).collect();
        let mut cache = ImportCache::new(2);
        for b in buffers.iter().chain(buffers.iter()) {
            cache
                .get_or_import(DmaBufKey::of(b).unwrap(), || import(b))
                .unwrap();
        }
        let s = cache.stats();
        assert_eq!((s.misses, s.hits, s.evictions, s.live), (6, 0, 4, 2));
    }

    #[test]
    fn invalidate_drops_every_entry_and_the_next_lookup_imports() {
        let b = shm();
        let key = DmaBufKey::of(&b).unwrap();
        let mut cache = ImportCache::new(4);
        let first = cache.get_or_import(key, || import(&b)).unwrap();
        cache.invalidate();
        assert!(!cache.contains(&key));
        let second = cache.get_or_import(key, || import(&b)).unwrap();
        assert_ne!(first.buffer_identity(), second.buffer_identity());
        let s = cache.stats();
        assert_eq!((s.misses, s.invalidated, s.live), (2, 1, 1));
    }

    #[test]
    fn a_failed_import_caches_nothing() {
        let b = shm();
        let key = DmaBufKey::of(&b).unwrap();
        let mut cache = ImportCache::new(4);
        let r: Result<_, &str> = cache.get_or_import(key, || Err("device gone"));
        assert_eq!(r.unwrap_err(), "device gone");
        assert_eq!(cache.stats(), CacheStats::default());
    }

    #[test]
    fn the_entry_keeps_the_file_alive() {
        let b = shm();
        let key = DmaBufKey::of(&b).unwrap();
        let weak = b.buffer_identity().weak();
        let mut cache = ImportCache::new(4);
        cache.get_or_import(key, || Ok::<_, ()>(b.clone())).unwrap();
        drop(b);
        assert!(
            weak.upgrade().is_some(),
            "the cached tensor holds the buffer"
        );
        cache.invalidate();
        assert!(weak.upgrade().is_none());
    }
}
