//! Property test of `ImportCache` (issues 12 and 14.5): random sequences of
//! `get_image` lookups (hits, imports, failed imports, in one of two layouts),
//! invalidations and dropped tensors over real shared-memory buffers, checked
//! step by step against a plain LRU model written here: the counters, which
//! keys are present, that a hit is the tensor imported for its key (same
//! `BufferIdentity`, import not called) in the layout asked for now, that a
//! failed import caches nothing, that an entry keeps its tensor alive and an
//! evicted one does not, and that no fd is left behind.
#![allow(clippy::unwrap_used)] // tests may panic

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Weak;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use zerocam_cache::{CacheStats, DmaBufKey, ImportCache};
use zerocam_tensor::{Error, ImageLayout, PixelFormat, Tensor, TensorMemory};

/// Bytes of each buffer: two planes of `PLANE` bytes.
const PLANE: usize = 32;

/// Number of open fds of this process (the only test in this binary).
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// One step of a sequence.
#[derive(Debug, Clone)]
enum Op {
    /// `get_image` of key `key` (an index into the case's keys) in layout
    /// `wide` (see [`layout`]); the import fails when `fails`; the tensor is
    /// held by the test when `hold`.
    Lookup {
        key: usize,
        wide: bool,
        fails: bool,
        hold: bool,
    },
    /// `contains` of key `key`: must not count or touch the LRU order.
    Contains { key: usize },
    /// `invalidate`.
    Invalidate,
    /// Drop the held tensor `index` (modulo the number held).
    Drop { index: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0usize..16, any::<bool>(), prop::bool::weighted(0.1), prop::bool::weighted(0.3))
            .prop_map(|(key, wide, fails, hold)| Op::Lookup { key, wide, fails, hold }),
        2 => (0usize..16).prop_map(|key| Op::Contains { key }),
        1 => Just(Op::Invalidate),
        2 => any::<usize>().prop_map(|index| Op::Drop { index }),
    ]
}

/// The cache as it should be: entries least recently used first, and the counters.
#[derive(Debug, Default)]
struct Model {
    capacity: usize,
    /// `(key, BufferIdentity id)` of each entry, least recently used first.
    entries: VecDeque<(DmaBufKey, u64)>,
    stats: CacheStats,
}

impl Model {
    fn position(&self, key: DmaBufKey) -> Option<usize> {
        self.entries.iter().position(|(k, _)| *k == key)
    }

    /// A lookup that hit: the entry becomes the most recently used.
    fn hit(&mut self, at: usize) -> u64 {
        let entry = self.entries.remove(at).unwrap();
        self.entries.push_back(entry);
        self.stats.hits += 1;
        entry.1
    }

    /// A successful import: the least recently used entry goes when full.
    fn insert(&mut self, key: DmaBufKey, id: u64) {
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
            self.stats.evictions += 1;
        }
        self.entries.push_back((key, id));
        self.stats.misses += 1;
    }

    fn invalidate(&mut self) {
        self.stats.invalidated += self.entries.len() as u64;
        self.entries.clear();
    }

    fn stats(&self) -> CacheStats {
        CacheStats {
            live: self.entries.len(),
            ..self.stats
        }
    }
}

/// The import of `buffer` as a driver's buffer is imported: a new import of
/// its fd, whole.
fn import(buffer: &Tensor<u8>) -> Result<Tensor<u8>, Error> {
    Tensor::<u8>::from_fd(buffer.clone_fd()?, &[2 * PLANE], None)
}

/// One of two layouts of a plane (a format change on the same buffers),
/// starting at the key's offset: `PLANE` × 1 or `PLANE / 2` × 2 grey.
fn layout(key: DmaBufKey, wide: bool) -> ImageLayout {
    let (w, h) = if wide { (PLANE, 1) } else { (PLANE / 2, 2) };
    ImageLayout::new(w, h, PixelFormat::Grey).with_start_offset(key.plane_offset)
}

/// Runs `ops` on a cache of `capacity` over `buffers` shared-memory buffers,
/// comparing it with the model after every step.
fn run(capacity: usize, buffers: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let pool: Vec<Tensor<u8>> = (0..buffers)
        .map(|_| Tensor::<u8>::new(&[2 * PLANE], Some(TensorMemory::Shm), None).unwrap())
        .collect();
    // Each buffer's two planes: the key space.
    let keys: Vec<(usize, DmaBufKey)> = pool
        .iter()
        .enumerate()
        .flat_map(|(b, t)| {
            let file = t.fd_identity().unwrap();
            [0, PLANE].map(|offset| (b, DmaBufKey::new(file, offset)))
        })
        .collect();
    let fds = open_fds();
    let mut cache = ImportCache::new(capacity);
    let mut model = Model {
        capacity: capacity.max(1),
        ..Model::default()
    };
    prop_assert_eq!(cache.capacity(), model.capacity);
    let mut held: Vec<Tensor<u8>> = Vec::new();
    // Every tensor ever imported: its id and a liveness guard.
    let mut imported: Vec<(u64, Weak<()>)> = Vec::new();
    for op in ops {
        match *op {
            Op::Lookup {
                key,
                wide,
                fails,
                hold,
            } => {
                let (b, key) = keys[key % keys.len()];
                let layout = layout(key, wide);
                let called = Cell::new(false);
                let got = cache.get_image(key, layout, || {
                    called.set(true);
                    if fails {
                        return Err(Error::NoFd {
                            memory: TensorMemory::Dma,
                        });
                    }
                    import(&pool[b])
                });
                if let Ok(t) = &got {
                    prop_assert_eq!(
                        (t.width(), t.height()),
                        (Some(layout.width), Some(layout.height)),
                        "{:?}: the layout asked for now",
                        key
                    );
                }
                match (model.position(key), got) {
                    (Some(at), Ok(t)) => {
                        prop_assert!(!called.get(), "a hit of {:?} imported", key);
                        prop_assert_eq!(
                            t.buffer_identity().id(),
                            model.hit(at),
                            "a hit is the cached tensor"
                        );
                        if hold {
                            held.push(t);
                        }
                    }
                    (Some(_), Err(err)) => {
                        prop_assert!(false, "a hit of {:?} failed: {}", key, err)
                    }
                    (None, Ok(t)) => {
                        prop_assert!(called.get() && !fails, "a miss of {:?} did not import", key);
                        prop_assert_eq!(DmaBufKey::of(&t), Some(key), "the import of the key");
                        model.insert(key, t.buffer_identity().id());
                        imported.push((t.buffer_identity().id(), t.buffer_identity().weak()));
                        if hold {
                            held.push(t);
                        }
                    }
                    (None, Err(err)) => {
                        prop_assert!(called.get() && fails, "{:?}: {}", key, err);
                        prop_assert!(
                            matches!(err, Error::NoFd { .. }),
                            "the import's own error: {}",
                            err
                        );
                    }
                }
            }
            Op::Contains { key } => {
                let key = keys[key % keys.len()].1;
                prop_assert_eq!(cache.contains(&key), model.position(key).is_some());
            }
            Op::Invalidate => {
                cache.invalidate();
                model.invalidate();
            }
            Op::Drop { index } => {
                if !held.is_empty() {
                    held.swap_remove(index % held.len());
                }
            }
        }
        prop_assert_eq!(cache.stats(), model.stats(), "after {:?}", op);
        for &(_, key) in &keys {
            prop_assert_eq!(
                cache.contains(&key),
                model.position(key).is_some(),
                "{:?} after {:?}",
                key,
                op
            );
        }
        // An entry keeps its tensor (and its fd) alive; nothing else does but the test.
        for (id, weak) in &imported {
            let cached = model.entries.iter().any(|(_, i)| i == id);
            let in_hand = held.iter().any(|t| t.buffer_identity().id() == *id);
            prop_assert_eq!(
                weak.strong_count() > 0,
                cached || in_hand,
                "tensor {} after {:?}",
                id,
                op
            );
        }
    }
    // Imports hold one fd each while alive; none outlives the cache and the test's tensors.
    let live = imported
        .iter()
        .filter(|(_, w)| w.strong_count() > 0)
        .count();
    prop_assert_eq!(open_fds(), fds + live);
    drop((cache, held));
    prop_assert_eq!(open_fds(), fds, "fds left behind");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // A second at most in CI; PROPTEST_CASES for a deeper search.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        // Each bug found has its own regression test in the crate.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Capacity 0 (taken as 1) to 5 over 1 to 6 buffers of two planes each:
    /// the key space is up to 12, so capacity pressure is the common case.
    #[test]
    fn import_cache_behaves_as_an_lru_model(
        capacity in 0usize..=5,
        buffers in 1usize..=6,
        ops in prop::collection::vec(op(), 0..=60),
    ) {
        run(capacity, buffers, &ops)?;
    }
}
