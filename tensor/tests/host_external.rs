//! `Tensor::from_external`: memory another owner keeps (a GStreamer buffer, a
//! decoder's frame) as a read-only tensor without a copy; the owner lives as
//! long as any tensor, view, map or pin of it, and drops once.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use zerocam_tensor::{
    Error, ExternalMemory, ExternalMemoryMut, PixelFormat, Region, Tensor, TensorMemory,
};

/// Bytes in a Vec, counting its drops; `skip` bytes of it left out at the start.
struct Owned {
    bytes: Vec<u8>,
    skip: usize,
    drops: Arc<AtomicUsize>,
}

// SAFETY: the Vec is never touched after construction: the same bytes,
// unchanged, at the same heap address, while the value lives.
unsafe impl ExternalMemory for Owned {
    fn bytes(&self) -> &[u8] {
        &self.bytes[self.skip..]
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn owned(len: usize, skip: usize) -> (Owned, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let bytes = (0..len + skip).map(|i| (i % 251) as u8).collect();
    let o = Owned {
        bytes,
        skip,
        drops: Arc::clone(&drops),
    };
    (o, drops)
}

#[test]
fn external_bytes_are_read_in_place_and_refuse_writes() {
    let (o, _) = owned(64 * 48 * 3 / 2, 0);
    let want: Vec<u8> = o.bytes().to_vec();
    let address = o.bytes().as_ptr();
    let t = Tensor::<u8>::from_external(o, &[64 * 48 * 3 / 2], Some("decoded"))
        .unwrap()
        .with_image(zerocam_tensor::ImageLayout::new(64, 48, PixelFormat::Nv12))
        .unwrap();
    assert!(t.is_external());
    assert_eq!(t.memory(), TensorMemory::Mem);
    assert_eq!(t.map_read().unwrap().as_ptr(), address, "no copy");
    assert_eq!(*t.map_read().unwrap(), want[..]);
    assert!(matches!(t.map_write(), Err(Error::ReadOnly { .. })));
    assert!(matches!(t.map(), Err(Error::ReadOnly { .. })));
    assert!(matches!(t.clone_fd(), Err(Error::NoFd { .. })));
    let chroma = t.plane(1).unwrap();
    assert_eq!(chroma.map_read().unwrap()[0], want[64 * 48]);
    let crop = t.view(Region::new(8, 8, 16, 16)).unwrap();
    assert_eq!(crop.buffer_identity().id(), t.buffer_identity().id());
    assert_eq!(t.pin_host().unwrap().ptr().as_ptr().cast_const(), address);
}

#[test]
fn the_owner_lives_until_the_last_tensor_view_map_and_pin_and_drops_once() {
    let (o, drops) = owned(256, 0);
    let t = Tensor::<u8>::from_external(o, &[16, 16], None).unwrap();
    let view = t.view(Region::new(0, 0, 4, 4)).unwrap();
    let map = t.map_read().unwrap();
    let pin = t.pin_host().unwrap();
    let hold = t.memory_hold();
    drop((t, view));
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    assert_eq!(map[255], 255 % 251);
    drop((map, pin));
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "a memory hold keeps it too"
    );
    // Dropped on another thread: the owner is Send.
    std::thread::spawn(move || drop(hold)).join().unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn too_few_bytes_no_bytes_and_misaligned_bytes_are_typed_errors() {
    let (o, drops) = owned(100, 0);
    assert!(matches!(
        Tensor::<u8>::from_external(o, &[101], None),
        Err(Error::BufferTooSmall {
            needed: 101,
            available: 100
        })
    ));
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "a refused owner is dropped"
    );
    let (o, _) = owned(0, 0);
    assert!(matches!(
        Tensor::<u8>::from_external(o, &[1], None),
        Err(Error::BufferTooSmall { .. })
    ));
    // One byte in: not aligned for f32 (a Vec's buffer is).
    let (o, _) = owned(64, 1);
    assert!(matches!(
        Tensor::<f32>::from_external(o, &[4], None),
        Err(Error::Misaligned { alignment: 4, .. })
    ));
    let (o, _) = owned(64, 0);
    let f = Tensor::<f32>::from_external(o, &[16], None).unwrap();
    assert_eq!(f.map_read().unwrap().len(), 16);
}

/// Bytes a caller lends for writing, where it can still see them.
struct Lent {
    bytes: Box<[u8]>,
    drops: Arc<AtomicUsize>,
}

// SAFETY: the box is never reallocated or touched by anyone else while the
// value lives; the test reads it only through the address it recorded after
// every tensor is gone.
unsafe impl ExternalMemoryMut for Lent {
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        // What the tensor wrote is in the owner's own bytes.
        assert_eq!(self.bytes[5], 42);
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn lent_memory_is_written_in_place_and_its_owner_drops_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let bytes = vec![0u8; 24].into_boxed_slice();
    let address = bytes.as_ptr() as usize;
    let lent = Lent {
        bytes,
        drops: Arc::clone(&drops),
    };
    let t = Tensor::<u8>::from_external_mut(lent, &[2, 3, 4], None).unwrap();
    assert!(t.is_external());
    {
        let mut map = t.map_write().unwrap();
        assert_eq!(
            map.as_ptr() as usize,
            address,
            "the owner's memory, not a copy"
        );
        map[5] = 42;
    }
    let view = t.clone();
    drop(t);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "a handle still holds it");
    assert_eq!(view.map_read().unwrap()[5], 42);
    drop(view);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // Too small: a typed error, and the owner dropped.
    let lent = Lent {
        bytes: vec![0u8; 8].into_boxed_slice(),
        drops: Arc::clone(&drops),
    };
    let mut lent = lent;
    lent.bytes[5] = 42; // its drop checks this byte
    assert!(matches!(
        Tensor::<f32>::from_external_mut(lent, &[4], None),
        Err(Error::BufferTooSmall {
            needed: 16,
            available: 8
        })
    ));
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}
