//! [`GpuImageCache`]: GPU-side imports (EGLImages, render targets) of tensors,
//! keyed on the tensor's [`BufferIdentity`](zerocam_tensor::BufferIdentity) id
//! plus the geometry of the import.
//!
//! The cache holds no GPU API: it stores any value `V` and hands back the
//! values it drops (evicted, swept, cleared) so the owner — the GL thread —
//! destroys them in its own context. Each value leaves the cache exactly once:
//! handed back, or dropped with the cache itself (when its owner unwinds from
//! a panic, say), so a value that frees a resource in its `Drop` is freed once
//! whichever way it goes. `live` is the number of entries, not a running
//! count. An entry does not keep its tensor alive:
//! it holds the identity's `weak()` and [`sweep`](GpuImageCache::sweep) drops
//! entries whose tensors are all gone.

use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::Weak;

use lru::LruCache;
use zerocam_tensor::{Element, RootLayout, Tensor};

/// The key of one GPU import: which buffer, imported how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageKey<G> {
    /// [`BufferIdentity::id`](zerocam_tensor::BufferIdentity::id) of the buffer.
    pub buffer: u64,
    /// What the import depends on besides the buffer (size, format, strides, offsets).
    pub geometry: G,
}

impl ImageKey<RootLayout> {
    /// The key of the root image `tensor` was cut from: every view and batch
    /// element of one image has the same key. `None` for array tensors.
    ///
    /// ```
    /// use zerocam_cache::ImageKey;
    /// use zerocam_tensor::{PixelFormat, Region, Tensor, TensorMemory};
    /// let img = Tensor::<u8>::image(64, 32, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
    /// let crop = img.view(Region::new(8, 8, 16, 16))?;
    /// assert_eq!(ImageKey::of_root(&img), ImageKey::of_root(&crop));
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    pub fn of_root<T: Element>(tensor: &Tensor<T>) -> Option<ImageKey<RootLayout>> {
        Some(ImageKey {
            buffer: tensor.buffer_identity().id(),
            geometry: tensor.placement()?.root,
        })
    }
}

/// The counters of a [`GpuImageCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuCacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Values inserted (= imports made).
    pub imports: u64,
    /// Entries dropped to make room (LRU order).
    pub evictions: u64,
    /// Entries dropped because their tensors were all gone.
    pub swept: u64,
    /// Entries alive now.
    pub live: usize,
}

#[derive(Debug)]
struct Entry<V> {
    alive: Weak<()>,
    value: V,
}

/// An LRU-bounded map from [`ImageKey`] to a GPU import, swept of entries whose
/// tensors have died.
///
/// ```
/// use zerocam_cache::{GpuImageCache, ImageKey};
/// use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};
/// let frame = Tensor::<u8>::image(64, 32, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
/// let key = ImageKey::of_root(&frame).unwrap();
/// let mut cache = GpuImageCache::new(4);
/// let mut destroy = Vec::new();
/// for _ in 0..10 {
///     let image = cache.get_or_insert_with(key, frame.buffer_identity().weak(),
///         || Ok::<_, std::io::Error>("an EGLImage"), &mut destroy)?;
///     assert_eq!(*image, "an EGLImage");
/// }
/// assert_eq!((cache.stats().imports, cache.stats().hits), (1, 9));
/// drop(frame);
/// assert_eq!(cache.sweep(), vec!["an EGLImage"]); // the owner destroys it
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct GpuImageCache<G: Hash + Eq, V> {
    entries: LruCache<ImageKey<G>, Entry<V>>,
    stats: GpuCacheStats,
}

impl<G: Hash + Eq + Clone, V> GpuImageCache<G, V> {
    /// A cache of at most `capacity` entries (at least 1).
    pub fn new(capacity: usize) -> Self {
        GpuImageCache {
            entries: LruCache::new(NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN)),
            stats: GpuCacheStats::default(),
        }
    }

    /// The value for `key`, or `import()`'s result inserted for it. Before an
    /// import, dead entries are swept and, when the cache is full, the least
    /// recently used entry is evicted; values dropped so (swept or evicted) are
    /// pushed to `retired` for the caller to destroy.
    ///
    /// # Errors
    /// Whatever `import` returns; nothing is inserted then (an entry evicted to
    /// make room stays evicted).
    pub fn get_or_insert_with<E>(
        &mut self,
        key: ImageKey<G>,
        alive: Weak<()>,
        import: impl FnOnce() -> Result<V, E>,
        retired: &mut Vec<V>,
    ) -> Result<&V, E> {
        let hit = self.entries.contains(&key);
        if hit {
            self.stats.hits += 1;
        } else {
            // Room is made here, not by the insert (which would drop the
            // value): the evicted value goes back to the caller.
            retired.extend(self.make_room());
        }
        let stats = &mut self.stats;
        let entry = self.entries.try_get_or_insert(key, || {
            let value = import()?;
            stats.imports += 1;
            Ok(Entry { alive, value })
        })?;
        Ok(&entry.value)
    }

    /// The value for `key`, counted as a hit, or `None`.
    pub fn get(&mut self, key: &ImageKey<G>) -> Option<&V> {
        let entry = self.entries.get(key)?;
        self.stats.hits += 1;
        Some(&entry.value)
    }

    /// Inserts `value` for `key` (an import made by the caller), after sweeping
    /// dead entries and, when full, evicting the least recently used one; the
    /// values dropped so are returned for the caller to destroy.
    pub fn insert(&mut self, key: ImageKey<G>, alive: Weak<()>, value: V) -> Vec<V> {
        let mut retired = self.make_room();
        if let Some(old) = self.entries.put(key, Entry { alive, value }) {
            retired.push(old.value); // the same key imported again
        }
        self.stats.imports += 1;
        retired
    }

    /// Sweeps, then evicts the least recently used entry when full.
    fn make_room(&mut self) -> Vec<V> {
        let mut retired = self.sweep();
        if self.entries.len() == self.entries.cap().get() {
            if let Some((_, old)) = self.entries.pop_lru() {
                self.stats.evictions += 1;
                retired.push(old.value);
            }
        }
        retired
    }

    /// Whether `key` is cached (not counted as a lookup, LRU order untouched).
    pub fn contains(&self, key: &ImageKey<G>) -> bool {
        self.entries.contains(key)
    }

    /// Drops the entries whose tensors are all gone and returns their values.
    pub fn sweep(&mut self) -> Vec<V> {
        let dead: Vec<ImageKey<G>> = self
            .entries
            .iter()
            .filter(|(_, e)| e.alive.strong_count() == 0)
            .map(|(k, _)| k.clone())
            .collect();
        self.stats.swept += dead.len() as u64;
        dead.iter()
            .filter_map(|k| self.entries.pop(k))
            .map(|e| e.value)
            .collect()
    }

    /// Drops every entry and returns the values.
    pub fn clear(&mut self) -> Vec<V> {
        let mut all = Vec::with_capacity(self.entries.len());
        while let Some((_, e)) = self.entries.pop_lru() {
            all.push(e.value);
        }
        all
    }

    /// The counters, `live` included.
    pub fn stats(&self) -> GpuCacheStats {
        GpuCacheStats {
            live: self.entries.len(),
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn key(buffer: u64) -> ImageKey<u32> {
        ImageKey {
            buffer,
            geometry: 640,
        }
    }

    #[test]
    fn b_buffers_over_f_frames_import_b_times() {
        let alive: Vec<Arc<()>> = (0..4).map(|_| Arc::new(())).collect();
        let mut cache = GpuImageCache::new(8);
        let mut retired = Vec::new();
        for f in 0..100u64 {
            let b = f % 4;
            let v = *cache
                .get_or_insert_with(
                    key(b),
                    Arc::downgrade(&alive[b as usize]),
                    || Ok::<_, ()>(b * 10),
                    &mut retired,
                )
                .unwrap();
            assert_eq!(v, b * 10);
        }
        let s = cache.stats();
        assert_eq!((s.imports, s.hits, s.evictions, s.live), (4, 96, 0, 4));
        assert!(retired.is_empty());
    }

    #[test]
    fn geometry_is_part_of_the_key() {
        let alive = Arc::new(());
        let mut cache = GpuImageCache::new(8);
        let mut retired = Vec::new();
        for g in [640, 320, 640] {
            let k = ImageKey {
                buffer: 1,
                geometry: g,
            };
            cache
                .get_or_insert_with(k, Arc::downgrade(&alive), || Ok::<_, ()>(g), &mut retired)
                .unwrap();
        }
        assert_eq!((cache.stats().imports, cache.stats().hits), (2, 1));
    }

    #[test]
    fn eviction_and_sweep_hand_values_back() {
        let alive: Vec<Arc<()>> = (0..3).map(|_| Arc::new(())).collect();
        let mut cache = GpuImageCache::new(2);
        let mut retired = Vec::new();
        for b in 0..3u64 {
            let w = Arc::downgrade(&alive[b as usize]);
            cache
                .get_or_insert_with(key(b), w, || Ok::<_, ()>(b), &mut retired)
                .unwrap();
        }
        assert_eq!(retired, [0], "the least recently used went first");
        drop(alive);
        let mut swept = cache.sweep();
        swept.sort_unstable();
        assert_eq!(swept, [1, 2]);
        let s = cache.stats();
        assert_eq!((s.evictions, s.swept, s.live), (1, 2, 0));
    }

    #[test]
    fn a_dead_entry_is_swept_before_the_next_import() {
        let first = Arc::new(());
        let second = Arc::new(());
        let mut cache = GpuImageCache::new(8);
        let mut retired = Vec::new();
        cache
            .get_or_insert_with(
                key(1),
                Arc::downgrade(&first),
                || Ok::<_, ()>(1),
                &mut retired,
            )
            .unwrap();
        drop(first);
        cache
            .get_or_insert_with(
                key(2),
                Arc::downgrade(&second),
                || Ok::<_, ()>(2),
                &mut retired,
            )
            .unwrap();
        assert_eq!(retired, [1]);
        assert_eq!(cache.stats().live, 1);
    }

    /// A value that counts its drops.
    #[derive(Debug)]
    struct Counted(Arc<std::sync::atomic::AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn every_value_leaves_once_even_when_an_import_panics() {
        use std::panic::{catch_unwind, AssertUnwindSafe};
        use std::sync::atomic::{AtomicUsize, Ordering};
        let drops = Arc::new(AtomicUsize::new(0));
        let value = || Counted(Arc::clone(&drops));
        let alive: Vec<Arc<()>> = (0..5).map(|_| Arc::new(())).collect();
        let weak = |b: u64| Arc::downgrade(&alive[b as usize]);
        let mut cache = GpuImageCache::new(2);
        let mut retired = Vec::new();
        for b in 0..2 {
            cache
                .get_or_insert_with(key(b), weak(b), || Ok::<_, ()>(value()), &mut retired)
                .unwrap();
        }
        // Full: the import of a third evicts one, then panics mid-import.
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            let _ = cache.get_or_insert_with(
                key(2),
                weak(2),
                || -> Result<Counted, ()> { panic!("import bug") },
                &mut retired,
            );
        }));
        assert!(panicked.is_err());
        assert_eq!(retired.len(), 1, "the evicted value was handed back");
        let s = cache.stats();
        assert_eq!((s.imports, s.evictions, s.live), (2, 1, 1), "{s:?}");
        drop(retired);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        // Still usable: an import, a sweep, a clear, then the cache dropped.
        cache
            .get_or_insert_with(key(3), weak(3), || Ok::<_, ()>(value()), &mut Vec::new())
            .unwrap();
        let survivor = cache.stats().live;
        assert_eq!(survivor, 2);
        drop(cache.clear());
        assert_eq!(drops.load(Ordering::SeqCst), 3);
        assert_eq!(cache.stats().live, 0);
        cache
            .get_or_insert_with(key(4), weak(4), || Ok::<_, ()>(value()), &mut Vec::new())
            .unwrap();
        drop(cache); // what is left drops with the cache, once
        assert_eq!(drops.load(Ordering::SeqCst), 4, "4 values made, 4 dropped");
    }

    #[test]
    fn a_failed_import_inserts_nothing() {
        let alive = Arc::new(());
        let mut cache: GpuImageCache<u32, u64> = GpuImageCache::new(2);
        let mut retired = Vec::new();
        let r = cache.get_or_insert_with(
            key(1),
            Arc::downgrade(&alive),
            || Err("EGL_BAD_MATCH"),
            &mut retired,
        );
        assert_eq!(r.unwrap_err(), "EGL_BAD_MATCH");
        assert_eq!(cache.stats(), GpuCacheStats::default());
        assert_eq!(cache.clear(), Vec::<u64>::new());
    }
}
