//! The ring of destinations a [`Preprocessor`](super::Preprocessor) hands its
//! results out of: allocated as needed up to its depth, a destination reused
//! only when nothing outside the ring holds it.

use zerocam_tensor::TensorDyn;

use super::PreprocessError;

/// Up to `depth` destination tensors, reused round-robin.
#[derive(Debug)]
pub(super) struct Ring {
    slots: Vec<TensorDyn>,
    depth: usize,
    /// Where the next search for a free destination starts.
    next: usize,
}

impl Ring {
    /// An empty ring of `depth` destinations (at least 1).
    pub fn new(depth: usize) -> Result<Ring, PreprocessError> {
        if depth == 0 {
            return Err(PreprocessError::ZeroRingDepth { depth });
        }
        Ok(Ring {
            // Grown with the slots (lazily, never past `depth`): a huge depth
            // costs nothing up front.
            slots: Vec::new(),
            depth,
            next: 0,
        })
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Destinations allocated so far (never more than `depth`): the slots,
    /// which only grow.
    pub fn allocated(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Results held outside the ring now.
    pub fn held(&self) -> usize {
        self.slots.iter().filter(|t| t.handle_count() > 1).count()
    }

    /// The index of a destination nothing outside the ring holds: the first
    /// free one from where the last search ended, else a new one from `make`
    /// while the ring is not full, else [`PreprocessError::RingFull`].
    pub fn acquire(
        &mut self,
        make: impl FnOnce() -> Result<TensorDyn, PreprocessError>,
    ) -> Result<usize, PreprocessError> {
        let n = self.slots.len();
        let free = (0..n)
            .map(|k| (self.next + k) % n)
            .find(|&i| self.slots[i].handle_count() == 1);
        let index = match free {
            Some(i) => i,
            None if n < self.depth => {
                self.slots.push(make()?);
                n
            }
            None => return Err(PreprocessError::RingFull { depth: self.depth }),
        };
        self.next = index + 1;
        Ok(index)
    }

    /// Destination `index` (from [`acquire`](Ring::acquire)).
    pub fn get(&self, index: usize) -> Option<&TensorDyn> {
        self.slots.get(index)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use zerocam_tensor::{DType, TensorMemory};

    fn make() -> Result<TensorDyn, PreprocessError> {
        Ok(TensorDyn::new(
            &[1, 3, 2, 2],
            DType::F32,
            Some(TensorMemory::Mem),
            None,
        )?)
    }

    #[test]
    fn a_free_destination_is_reused_before_a_new_one_is_made() {
        let mut ring = Ring::new(3).unwrap();
        let a = ring.acquire(make).unwrap();
        assert_eq!(ring.acquire(make).unwrap(), a, "nothing holds it");
        let held = ring.get(a).unwrap().clone();
        let b = ring.acquire(make).unwrap();
        assert_ne!(a, b);
        assert_eq!((ring.allocated(), ring.held()), (2, 1));
        drop(held);
        assert_eq!(
            ring.acquire(make).unwrap(),
            a,
            "round-robin: after b comes a"
        );
        assert_eq!(ring.allocated(), 2);
    }

    #[test]
    fn a_full_ring_names_its_depth_and_overwrites_nothing() {
        let mut ring = Ring::new(2).unwrap();
        let held: Vec<_> = (0..2)
            .map(|_| {
                let i = ring.acquire(make).unwrap();
                ring.get(i).unwrap().clone()
            })
            .collect();
        let e = ring.acquire(make).unwrap_err();
        assert!(matches!(e, PreprocessError::RingFull { depth: 2 }), "{e}");
        assert!(e.to_string().contains("all 2 results"), "{e}");
        assert_eq!(ring.allocated(), 2, "never more than the depth");
        drop(held);
        assert!(ring.acquire(make).is_ok());
        assert!(matches!(
            Ring::new(0),
            Err(PreprocessError::ZeroRingDepth { depth: 0 })
        ));
    }
}
