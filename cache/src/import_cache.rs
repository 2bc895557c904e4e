//! [`ImportCache`]: a camera buffer's planes imported once, keyed on
//! [`DmaBufKey`], with each lookup's image layout laid on per lookup.

use std::num::NonZeroUsize;

use lru::LruCache;
use zerocam_tensor::{FdIdentity, ImageLayout, Tensor};

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

/// One cached plane: the tensor as imported, and the image last laid on it
/// (reused while the layout asked for is the same, so a hit allocates nothing).
#[derive(Debug)]
struct Entry {
    raw: Tensor<u8>,
    image: Option<(ImageLayout, Tensor<u8>)>,
}

impl Entry {
    fn new(raw: Tensor<u8>) -> Entry {
        Entry { raw, image: None }
    }

    /// The raw plane laid out as `layout`: the last image when its layout is
    /// `layout`, otherwise a new one (same memory and identity), kept.
    fn image(&mut self, layout: ImageLayout) -> zerocam_tensor::Result<Tensor<u8>> {
        if let Some((was, image)) = &self.image {
            if *was == layout {
                return Ok(image.clone());
            }
        }
        let image = self.raw.clone().with_image(layout)?;
        self.image = Some((layout, image.clone()));
        Ok(image)
    }
}

/// An LRU-bounded map from [`DmaBufKey`] to the tensor imported for it.
///
/// Its one lookup is [`get_image`](Self::get_image): an entry holds the plane
/// as imported and a lookup lays the asked layout on it, so no entry can hold
/// a layout that a later lookup would get stale (a driver that changes format
/// keeps its buffers and their inodes).
#[derive(Debug)]
pub struct ImportCache {
    entries: LruCache<DmaBufKey, Entry>,
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

    /// The plane `key` laid out as `layout`: the raw import cached for `key`
    /// (or `import()`'s result, cached when `layout` fits it), with the image
    /// laid on for this lookup only.
    ///
    /// The entry holds the plane as imported, never a layout, so a lookup
    /// cannot return a stale one: after a format change the same buffers give
    /// images of the new layout without an [`invalidate`](Self::invalidate),
    /// with the same [`BufferIdentity`](zerocam_tensor::BufferIdentity) (the
    /// GPU cache keys on it and on the layout). A hit with the layout of the
    /// entry's previous lookup costs no allocation and no syscall; a new
    /// layout lays a new image on (no syscall).
    ///
    /// ```
    /// use zerocam_cache::{DmaBufKey, ImportCache};
    /// use zerocam_tensor::{ImageLayout, PixelFormat, Tensor, TensorMemory};
    ///
    /// let buffer = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None)?;
    /// let key = DmaBufKey::of(&buffer).expect("shm has an fd");
    /// let mut cache = ImportCache::new(2);
    /// let import = || Tensor::from_fd(buffer.clone_fd()?, &[64], None);
    /// let a = cache.get_image(key, ImageLayout::new(8, 8, PixelFormat::Grey), import)?;
    /// let b = cache.get_image(key, ImageLayout::new(4, 4, PixelFormat::Grey), import)?;
    /// assert_eq!((a.shape(), b.shape()), (&[8, 8, 1][..], &[4, 4, 1][..]));
    /// assert_eq!(a.buffer_identity(), b.buffer_identity());
    /// assert_eq!((cache.stats().misses, cache.stats().hits), (1, 1));
    /// # Ok::<(), zerocam_tensor::Error>(())
    /// ```
    ///
    /// A hit whose import is too small for `layout` imports again: the key
    /// is the file and the offset, not the file's length, and a file that
    /// grew since (the same memfd lent again, longer, for a larger format)
    /// must not keep giving the shorter import. When the new import fits it
    /// replaces the entry (counted as a miss); when it does not either, the
    /// entry stays.
    ///
    /// # Errors
    /// Whatever `import` returns; [`Tensor::with_image`]'s errors when
    /// `layout` does not fit the plane, or the import is already an image or
    /// a view. A miss caches nothing then; a hit keeps its entry.
    pub fn get_image<E: From<zerocam_tensor::Error>>(
        &mut self,
        key: DmaBufKey,
        layout: ImageLayout,
        import: impl FnOnce() -> Result<Tensor<u8>, E>,
    ) -> Result<Tensor<u8>, E> {
        if let Some(e) = self.entries.get_mut(&key) {
            let too_small = match e.image(layout) {
                Err(err @ zerocam_tensor::Error::BufferTooSmall { .. }) => err,
                other => {
                    self.stats.hits += 1;
                    return Ok(other?);
                }
            };
            // The key names the file, not its length: the file may have grown
            // since this entry's import (a publisher lending it again, longer,
            // for a larger format). A new import that fits replaces the entry.
            let mut fresh = Entry::new(import()?);
            return match fresh.image(layout) {
                Ok(image) => {
                    self.stats.misses += 1;
                    *e = fresh;
                    Ok(image)
                }
                Err(_) => {
                    self.stats.hits += 1;
                    Err(too_small.into())
                }
            };
        }
        let mut entry = Entry::new(import()?);
        let image = entry.image(layout)?;
        self.stats.misses += 1;
        if self.entries.push(key, entry).is_some() {
            self.stats.evictions += 1;
        }
        Ok(image)
    }

    /// Whether `key` is cached (does not count as a lookup or touch the LRU order).
    pub fn contains(&self, key: &DmaBufKey) -> bool {
        self.entries.contains(key)
    }

    /// Drops every entry: on stream stop and device close, when the buffers go
    /// away. A format change on the same buffers needs none with
    /// [`get_image`](Self::get_image).
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

    /// The layout the tests that are not about layouts ask for.
    fn square() -> ImageLayout {
        grey(8, 8)
    }

    #[test]
    fn b_buffers_over_f_frames_import_b_times() {
        let buffers: Vec<_> = (0..4).map(|_| shm()).collect();
        let mut cache = ImportCache::new(8);
        let mut ids = std::collections::HashMap::new();
        for frame in 0..100 {
            let b = &buffers[frame % 4];
            let t = cache
                .get_image(DmaBufKey::of(b).unwrap(), square(), || import(b))
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
        cache.get_image(k0, square(), || import(&b)).unwrap();
        cache.get_image(k1, square(), || import(&b)).unwrap();
        assert_eq!(cache.stats().misses, 2);
    }

    #[test]
    fn a_small_cache_evicts_least_recently_used() {
        let buffers: Vec<_> = (0..3).map(|_| shm()).collect();
        let mut cache = ImportCache::new(2);
        for b in buffers.iter().chain(buffers.iter()) {
            cache
                .get_image(DmaBufKey::of(b).unwrap(), square(), || import(b))
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
        let first = cache.get_image(key, square(), || import(&b)).unwrap();
        cache.invalidate();
        assert!(!cache.contains(&key));
        let second = cache.get_image(key, square(), || import(&b)).unwrap();
        assert_ne!(first.buffer_identity(), second.buffer_identity());
        let s = cache.stats();
        assert_eq!((s.misses, s.invalidated, s.live), (2, 1, 1));
    }

    #[test]
    fn a_failed_import_caches_nothing() {
        let b = shm();
        let key = DmaBufKey::of(&b).unwrap();
        let mut cache = ImportCache::new(4);
        let r = cache.get_image(key, square(), || {
            Err(zerocam_tensor::Error::NoFd {
                memory: TensorMemory::Dma,
            })
        });
        assert!(matches!(r, Err(zerocam_tensor::Error::NoFd { .. })));
        assert_eq!(cache.stats(), CacheStats::default());
    }

    fn grey(w: usize, h: usize) -> ImageLayout {
        ImageLayout::new(w, h, zerocam_tensor::PixelFormat::Grey)
    }

    #[test]
    fn a_layout_change_without_invalidate_gives_the_new_layout() {
        let b = shm();
        let key = DmaBufKey::of(&b).unwrap();
        let mut cache = ImportCache::new(4);
        let square = cache.get_image(key, grey(8, 8), || import(&b)).unwrap();
        let strip = cache.get_image(key, grey(16, 2), || import(&b)).unwrap();
        let rgb = cache
            .get_image(
                key,
                ImageLayout::new(4, 2, zerocam_tensor::PixelFormat::Rgb),
                || import(&b),
            )
            .unwrap();
        assert_eq!(square.shape(), &[8, 8, 1]);
        assert_eq!(strip.shape(), &[2, 16, 1], "the new size, no invalidate");
        assert_eq!(rgb.shape(), &[2, 4, 3], "the new format, no invalidate");
        assert_eq!(square.buffer_identity(), strip.buffer_identity());
        assert_eq!(square.buffer_identity(), rgb.buffer_identity());
        let s = cache.stats();
        assert_eq!((s.misses, s.hits, s.live), (1, 2, 1), "one import");
    }

    #[test]
    fn a_layout_that_does_not_fit_is_an_error_and_a_miss_caches_nothing() {
        let b = shm();
        let key = DmaBufKey::of(&b).unwrap();
        let mut cache = ImportCache::new(4);
        let err = cache.get_image(key, grey(16, 16), || import(&b));
        assert!(matches!(
            err,
            Err(zerocam_tensor::Error::BufferTooSmall { .. })
        ));
        assert_eq!(cache.stats(), CacheStats::default());
        cache.get_image(key, grey(8, 8), || import(&b)).unwrap();
        let err = cache.get_image(key, grey(16, 16), || import(&b));
        assert!(matches!(
            err,
            Err(zerocam_tensor::Error::BufferTooSmall { .. })
        ));
        assert!(cache.contains(&key), "a hit keeps its entry");
    }

    #[test]
    fn a_hit_too_short_for_the_layout_is_imported_again_when_the_file_grew() {
        // the same file imported short (a span of it), then asked for more
        let b = Tensor::<u8>::new(&[256], Some(TensorMemory::Shm), None).unwrap();
        let key = DmaBufKey::of(&b).unwrap();
        let mut cache = ImportCache::new(4);
        let span = |len: usize| Tensor::from_peer_fd(b.clone_fd()?, &[len], None);
        let short = cache.get_image(key, grey(8, 8), || span(64)).unwrap();
        let long = cache.get_image(key, grey(16, 16), || span(256)).unwrap();
        assert_eq!(long.shape(), &[16, 16, 1]);
        assert_ne!(short.buffer_identity(), long.buffer_identity());
        let again = cache.get_image(key, grey(16, 16), || span(256)).unwrap();
        assert_eq!(again.buffer_identity(), long.buffer_identity(), "kept");
        let s = cache.stats();
        assert_eq!((s.misses, s.hits, s.live), (2, 1, 1));
        let err = cache.get_image(key, grey(32, 32), || span(256));
        assert!(matches!(
            err,
            Err(zerocam_tensor::Error::BufferTooSmall { needed: 1024, .. })
        ));
        let third = cache.get_image(key, grey(16, 16), || span(256)).unwrap();
        assert_eq!(third.buffer_identity(), long.buffer_identity(), "still");
    }

    #[test]
    fn an_import_that_is_already_an_image_is_refused() {
        let b = shm();
        let key = DmaBufKey::of(&b).unwrap();
        let mut cache = ImportCache::new(4);
        let err = cache.get_image(key, grey(8, 8), || import(&b)?.with_image(grey(8, 8)));
        assert!(matches!(
            err,
            Err(zerocam_tensor::Error::UnsupportedFormat { .. })
        ));
        assert!(!cache.contains(&key), "no layout is ever cached");
    }

    #[test]
    fn the_entry_keeps_the_file_alive() {
        let b = shm();
        let key = DmaBufKey::of(&b).unwrap();
        let weak = b.buffer_identity().weak();
        let mut cache = ImportCache::new(4);
        cache
            .get_image(key, square(), || Ok::<_, zerocam_tensor::Error>(b.clone()))
            .unwrap();
        drop(b);
        assert!(
            weak.upgrade().is_some(),
            "the cached tensor holds the buffer"
        );
        cache.invalidate();
        assert!(weak.upgrade().is_none());
    }
}
