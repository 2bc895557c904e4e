//! The tensors under test as the test knows them ([`Item`]: a tensor and its
//! buffers), and the checks every tensor made passes: its elements inside its
//! buffers, reached by a CPU map, and its bytes its parent's.

use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use zerocam_tensor::{Element, Error, Tensor, TensorDyn, TensorMapTrait, TensorMemory};

use super::oracle;

/// An element type under test: one-, two-, four- and eight-byte samples, so
/// stride and offset alignment are exercised.
pub(crate) trait Sample: Element + From<u8> {
    /// The same tensor as a [`TensorDyn`].
    fn to_dyn(t: Tensor<Self>) -> TensorDyn;
}

macro_rules! sample {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            fn to_dyn(t: Tensor<$t>) -> TensorDyn {
                TensorDyn::from(t)
            }
        }
    )*};
}
sample!(u8, u16, f32, f64);

/// One buffer (allocation or import) a tensor lives in, as the test knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Buf {
    /// The memory: the file's inode for shared memory, a fresh number per heap
    /// allocation. Two imports of one file share it.
    pub(crate) memory: u64,
    /// This allocation or import: two imports of one file differ.
    pub(crate) instance: u64,
    /// Its length in bytes, as allocated.
    pub(crate) len: usize,
}

/// A tensor and the buffers its placement indexes (0, and 1 for split chroma).
#[derive(Debug, Clone)]
pub(crate) struct Item<T: Element> {
    pub(crate) t: Tensor<T>,
    pub(crate) bufs: Vec<Buf>,
}

/// A number never handed out before in this process.
pub(crate) fn fresh() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

pub(crate) fn fail(msg: impl Into<String>) -> TestCaseError {
    TestCaseError::fail(msg.into())
}

impl<T: Sample> Item<T> {
    /// A tensor just allocated or imported, `len` bytes.
    pub(crate) fn root(t: Tensor<T>, len: usize) -> Item<T> {
        // Heap memory has no inode; mark its numbers apart from inodes.
        let memory = t.fd_identity().map_or(fresh() | 1 << 63, |f| f.ino);
        let bufs = vec![Buf {
            memory,
            instance: fresh(),
            len,
        }];
        Item { t, bufs }
    }

    /// A zeroed one-dimensional buffer of `count` elements.
    pub(crate) fn alloc(count: usize, memory: TensorMemory) -> Item<T> {
        let t = Tensor::<T>::new(&[count], Some(memory), None).unwrap();
        Item::root(t, count * size_of::<T>())
    }

    /// The same buffer again, imported from a dup of its fd as `[count]`.
    pub(crate) fn reimport(&self, count: usize) -> Item<T> {
        let t = Tensor::<T>::from_fd(self.t.clone_fd().unwrap(), &[count], None).unwrap();
        let mut item = Item::root(t, self.bufs[0].len);
        item.bufs[0].memory = self.bufs[0].memory;
        item
    }
}

/// Every element of `item` as `(memory, byte offset)`, after checking that
/// each lies inside its buffer, aligned, and that a CPU map reaches the first
/// and the last.
pub(crate) fn check<T: Sample>(item: &Item<T>) -> Result<Vec<(u64, usize)>, TestCaseError> {
    let t = &item.t;
    let e = size_of::<T>();
    let places = oracle::places(t).map_err(fail)?;
    let buffers = t.placement().map_or(1, |p| p.root.buffer_count());
    prop_assert_eq!(buffers, item.bufs.len(), "buffers of {:?}", t);
    for &(b, at) in &places {
        let len = item.bufs[b].len;
        prop_assert!(
            at % e == 0 && at.checked_add(e).is_some_and(|end| end <= len),
            "element at byte {} of buffer {} ({} bytes) of {:?} placed {:?}",
            at,
            b,
            len,
            t,
            t.placement()
        );
    }
    if let Some(placement) = t.placement() {
        // Each plane, an array with its own offset and strides, is the plane
        // the placement describes.
        for i in 0..t.plane_count() {
            let plane = t
                .plane(i)
                .map_err(|err| fail(format!("plane {i} of {t:?}: {err}")))?;
            let strides = plane
                .strides()
                .ok_or_else(|| fail("a plane without strides"))?;
            let buffer = placement.root.planes()[i].buffer;
            let mut got: Vec<oracle::Place> =
                oracle::strided_places(plane.plane_offset(), plane.shape(), &strides)
                    .map_err(fail)?
                    .into_iter()
                    .map(|(_, at)| (buffer, at))
                    .collect();
            let mut want = oracle::image_plane_places(&placement, i, e).map_err(fail)?;
            got.sort_unstable();
            want.sort_unstable();
            prop_assert!(
                got == want,
                "plane {} of {:?} is not where {:?} puts it",
                i,
                t,
                placement
            );
        }
    }
    if let Some(fd) = t.fd() {
        let st = nix::sys::stat::fstat(fd).unwrap();
        prop_assert_eq!(st.st_size as usize, item.bufs[0].len, "the file's length");
    }
    check_map(item, &places)?;
    Ok(places
        .iter()
        .map(|&(b, at)| (item.bufs[b].memory, at))
        .collect())
}

/// Maps `item` and reads its first and last element through the slice and,
/// with uniform strides, through the ndarray view at the same addresses.
fn check_map<T: Sample>(item: &Item<T>, places: &[oracle::Place]) -> Result<(), TestCaseError> {
    let t = &item.t;
    if item.bufs.len() > 1 {
        let refused = matches!(t.map_read(), Err(Error::MultiBuffer { buffers: 2 }));
        prop_assert!(refused, "a map of two buffers: {:?}", t);
        let refused = matches!(t.clone_fd(), Err(Error::MultiBuffer { buffers: 2 }));
        prop_assert!(refused, "an fd of two buffers: {:?}", t);
        return Ok(());
    }
    let e = size_of::<T>();
    let base = t.plane_offset();
    let lo = places.iter().map(|p| p.1).min().unwrap();
    let hi = places.iter().map(|p| p.1).max().unwrap();
    let m = t
        .map_read()
        .map_err(|err| fail(format!("map_read of {t:?}: {err}")))?;
    prop_assert!(
        lo == base && (hi - base) / e < m.len(),
        "elements at bytes {}..={} outside the map of {} elements at {}: {:?}",
        lo,
        hi,
        m.len(),
        base,
        t
    );
    std::hint::black_box((m[0], m[(hi - base) / e]));
    if let Some(strides) = t.strides() {
        let v = m
            .view()
            .map_err(|err| fail(format!("ndarray view of {t:?}: {err}")))?;
        let first = vec![0; t.shape().len()];
        let last: Vec<usize> = t.shape().iter().map(|d| d - 1).collect();
        let last_at: usize = last.iter().zip(&strides).map(|(i, s)| i * s).sum();
        prop_assert!(std::ptr::eq(&v[&first[..]], &m[0]));
        prop_assert!(std::ptr::eq(&v[&last[..]], &m[last_at / e]));
    }
    Ok(())
}

/// Writes through `child` at its first and last element and reads the marks
/// through `parent` at the same bytes, then clears them.
pub(crate) fn write_through<T: Sample>(
    child: &Item<T>,
    parent: &Item<T>,
    elements: &[(u64, usize)],
) -> Result<(), TestCaseError> {
    if child.bufs.len() != 1 || parent.bufs.len() != 1 || child.bufs[0] != parent.bufs[0] {
        return Ok(());
    }
    let e = size_of::<T>();
    let lo = elements.iter().map(|p| p.1).min().unwrap();
    let hi = elements.iter().map(|p| p.1).max().unwrap();
    let (base, parent_base) = (child.t.plane_offset(), parent.t.plane_offset());
    let mark = |first: u8, last: u8| {
        let mut m = child.t.map().unwrap();
        m[(lo - base) / e] = T::from(first);
        m[(hi - base) / e] = T::from(last);
    };
    mark(7, 8);
    let seen = {
        let m = parent.t.map_read().unwrap();
        (m[(lo - parent_base) / e], m[(hi - parent_base) / e])
    };
    mark(0, 0);
    let first = if lo == hi { 8 } else { 7 };
    prop_assert_eq!(
        seen,
        (T::from(first), T::from(8)),
        "{:?} of {:?}",
        child.t,
        parent.t
    );
    Ok(())
}
