//! A hit of `ImportCache::get_image` lays the image on the cached plane
//! without allocating or opening anything: per frame, after a format change
//! too (the same buffers, laid out anew).
#![allow(clippy::unwrap_used)] // tests may panic

use zerocam_test_support::alloc as counting_alloc;
#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

use zerocam_cache::{DmaBufKey, ImportCache};
use zerocam_tensor::{ImageLayout, PixelFormat, Tensor, TensorMemory};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn a_get_image_hit_allocates_nothing_and_opens_no_fd() {
    let buffers: Vec<_> = (0..4)
        .map(|_| Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None).unwrap())
        .collect();
    let keys: Vec<_> = buffers.iter().map(|b| DmaBufKey::of(b).unwrap()).collect();
    let layouts = [
        ImageLayout::new(32, 32, PixelFormat::Nv12),
        ImageLayout::new(16, 8, PixelFormat::Yuyv).with_row_stride(64),
    ];
    let mut cache = ImportCache::new(4);
    let import = |b: &Tensor<u8>| Tensor::from_fd(b.clone_fd()?, &[4096], None);
    for (b, &key) in buffers.iter().zip(&keys) {
        cache.get_image(key, layouts[0], || import(b)).unwrap();
    }
    let fds = open_fds();
    let mut allocations = 0;
    for frame in 0..200 {
        // A format change every 50 frames, on the same buffers, no invalidate.
        let layout = layouts[(frame / 50) % 2];
        let i = frame % 4;
        let before = counting_alloc::this_thread();
        let t = cache
            .get_image(keys[i], layout, || import(&buffers[i]))
            .unwrap();
        let after = counting_alloc::this_thread();
        if frame % 50 >= 4 {
            // Each buffer's first frame after a change lays the new image on.
            allocations += after - before;
        }
        assert_eq!(t.width(), Some(layout.width));
    }
    assert_eq!(allocations, 0, "allocations on hits of an unchanged layout");
    assert_eq!(open_fds(), fds, "fds");
    let s = cache.stats();
    assert_eq!((s.misses, s.hits), (4, 200), "no re-import");
}
