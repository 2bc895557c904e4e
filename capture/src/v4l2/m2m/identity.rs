//! [`IdentityIndex`]: which OUTPUT buffer index a physical capture buffer
//! (a [`BufferIdentity`](zerocam_tensor::BufferIdentity) id) is queued at.
//! A buffer keeps its index for the whole stream, so the driver imports its
//! dma-bufs once (vb2 keeps the attachment while the same fds come back on
//! the same index); only when more buffers than indices come is the least
//! recently used free index given to the newcomer (an import, counted).

use std::collections::HashMap;

/// Identity → index, with the imports counted.
#[derive(Debug)]
pub(crate) struct IdentityIndex {
    map: HashMap<u64, u32>,
    /// The identity at each index, and when it was last used.
    slots: Vec<Option<(u64, u64)>>,
    tick: u64,
    /// Buffers bound to an index (each an import of its planes).
    pub binds: u64,
    /// Binds that took an index from another buffer.
    pub evictions: u64,
}

/// Where a buffer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    /// The OUTPUT index.
    pub index: u32,
    /// Whether the buffer was just bound (imported) there.
    pub new: bool,
}

impl IdentityIndex {
    /// `count` indices, none bound.
    pub fn new(count: u32) -> IdentityIndex {
        IdentityIndex {
            map: HashMap::with_capacity(count as usize),
            slots: vec![None; count as usize],
            tick: 0,
            binds: 0,
            evictions: 0,
        }
    }

    /// The index of buffer `id`: its own, else an unbound one, else the least
    /// recently used one that `busy` says is not with the driver. `None` when
    /// every index is busy.
    pub fn slot(&mut self, id: u64, busy: impl Fn(u32) -> bool) -> Option<Slot> {
        self.tick += 1;
        if let Some(&index) = self.map.get(&id) {
            if let Some(s) = self.slots.get_mut(index as usize) {
                *s = Some((id, self.tick));
            }
            return Some(Slot { index, new: false });
        }
        let index = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                let (i, old) = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !busy(*i as u32))
                    .filter_map(|(i, s)| s.map(|(old, used)| (i, old, used)))
                    .min_by_key(|(_, _, used)| *used)
                    .map(|(i, old, _)| (i, old))?;
                self.map.remove(&old);
                self.evictions += 1;
                i
            }
        };
        self.slots[index] = Some((id, self.tick));
        self.map.insert(id, index as u32);
        self.binds += 1;
        Some(Slot {
            index: index as u32,
            new: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_keeps_its_index_and_is_bound_once() {
        let mut m = IdentityIndex::new(4);
        let ids = [10, 11, 12, 10, 11, 12, 10];
        let got: Vec<_> = ids
            .iter()
            .map(|&id| m.slot(id, |_| false).unwrap())
            .collect();
        assert_eq!(
            got.iter().map(|s| s.index).collect::<Vec<_>>(),
            [0, 1, 2, 0, 1, 2, 0]
        );
        assert_eq!(got.iter().filter(|s| s.new).count(), 3);
        assert_eq!((m.binds, m.evictions), (3, 0));
    }

    #[test]
    fn more_buffers_than_indices_evict_the_least_recently_used_free_one() {
        let mut m = IdentityIndex::new(2);
        m.slot(1, |_| false);
        m.slot(2, |_| false);
        m.slot(1, |_| false);
        // 2 is least recently used, but busy: 1's index goes.
        let s = m.slot(3, |i| i == 1).unwrap();
        assert_eq!(
            s,
            Slot {
                index: 0,
                new: true
            }
        );
        assert_eq!(m.evictions, 1);
        assert!(m.slot(4, |_| true).is_none(), "every index busy");
        assert_eq!(
            m.slot(2, |_| true).unwrap(),
            Slot {
                index: 1,
                new: false
            }
        );
    }
}
