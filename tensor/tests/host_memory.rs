//! Heap and shared-memory tensors on the host: allocation, maps, element types.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

mod common;

use zerocam_tensor::{f16, Access, DType, Error, Tensor, TensorDyn, TensorMapTrait, TensorMemory};

fn round_trip<T: zerocam_tensor::Element + From<u8>>(memory: TensorMemory) {
    let t = Tensor::<T>::new(&[3, 5], Some(memory), Some("rt")).unwrap();
    assert_eq!(t.memory(), memory);
    assert_eq!(t.size(), 15 * std::mem::size_of::<T>());
    {
        let mut m = t.map().unwrap();
        assert!(
            m.iter().all(|v| *v == T::default()),
            "fresh memory is zeroed"
        );
        for (i, v) in m.iter_mut().enumerate() {
            *v = T::from(i as u8);
        }
    }
    let r = t.map_read().unwrap();
    assert_eq!(r[14], T::from(14));
    assert_eq!(r.view().unwrap()[[2, 4]], T::from(14));
}

#[test]
fn every_dtype_round_trips_on_mem_and_shm() {
    for mem in [TensorMemory::Mem, TensorMemory::Shm] {
        round_trip::<u8>(mem);
        round_trip::<u16>(mem);
        round_trip::<i16>(mem);
        round_trip::<u32>(mem);
        round_trip::<i32>(mem);
        round_trip::<f32>(mem);
        round_trip::<f64>(mem);
        round_trip::<f16>(mem);
        let t = Tensor::<i8>::new(&[4], Some(mem), None).unwrap();
        t.map().unwrap()[3] = -7;
        assert_eq!(t.map_read().unwrap()[3], -7);
    }
}

#[test]
fn heap_memory_is_64_byte_aligned() {
    let t = Tensor::<f64>::new(&[7], Some(TensorMemory::Mem), None).unwrap();
    assert_eq!(t.map_read().unwrap().as_ptr() as usize % 64, 0);
}

#[test]
fn empty_shapes_are_refused() {
    for shape in [&[][..], &[0][..], &[4, 0, 3][..]] {
        let e = Tensor::<u8>::new(shape, Some(TensorMemory::Mem), None).unwrap_err();
        assert!(matches!(e, Error::EmptyShape { .. }), "{e}");
        assert!(e.to_string().contains(&format!("{shape:?}")), "{e}");
    }
}

#[test]
fn overflowing_shape_is_an_error_not_a_panic() {
    let e = Tensor::<f64>::new(&[usize::MAX / 2, 4], Some(TensorMemory::Mem), None).unwrap_err();
    assert!(
        matches!(e, Error::ShapeOverflow { elem_size: 8, .. }),
        "{e}"
    );
}

#[test]
fn writable_maps_never_alias() {
    let t = Tensor::<u8>::new(&[16, 16], Some(TensorMemory::Mem), None).unwrap();
    let w = t.map().unwrap();
    let e = t.map_read().unwrap_err();
    assert!(
        matches!(
            e,
            Error::MapConflict {
                held: Access::ReadWrite,
                requested: Access::Read,
                ..
            }
        ),
        "{e}"
    );
    drop(w);
    let r1 = t.map_read().unwrap();
    let r2 = t.map_read().unwrap();
    assert!(matches!(t.map_write(), Err(Error::MapConflict { .. })));
    drop((r1, r2));
    assert!(t.map_write().is_ok());
}

#[test]
fn maps_of_disjoint_views_coexist() {
    use zerocam_tensor::Region;
    let t = Tensor::<u8>::new(&[8, 8], Some(TensorMemory::Shm), None).unwrap();
    let top = t.view(Region::new(0, 0, 8, 4)).unwrap();
    let bottom = t.view(Region::new(0, 4, 8, 4)).unwrap();
    let mut a = top.map().unwrap();
    let mut b = bottom.map().unwrap();
    a.fill(1);
    b.fill(2);
    drop((a, b));
    let all = t.map_read().unwrap();
    assert_eq!((all[0], all[63]), (1, 2));
}

#[test]
fn finish_reports_the_end_of_access() {
    let t = Tensor::<u8>::new(&[4], Some(TensorMemory::Shm), None).unwrap();
    let m = t.map().unwrap();
    m.finish().unwrap();
    assert!(t.map().is_ok(), "finish released the bytes");
}

#[test]
fn pbo_cannot_be_allocated_here() {
    let e = Tensor::<u8>::new(&[4], Some(TensorMemory::Pbo), None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::UnsupportedMemory {
                memory: TensorMemory::Pbo,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("from_pbo"));
}

#[test]
fn unknown_heap_names_the_heaps_present() {
    let e = Tensor::<u8>::builder(&[64])
        .memory(TensorMemory::Dma)
        .dma_heap("no-such-heap")
        .build()
        .unwrap_err();
    assert!(
        matches!(&e, Error::UnknownHeap { name, .. } if name == "no-such-heap"),
        "{e}"
    );
    assert!(e.to_string().contains("no-such-heap"), "{e}");
}

#[test]
fn clone_fd_of_heap_memory_is_a_clear_error() {
    let t = Tensor::<u8>::new(&[4], Some(TensorMemory::Mem), None).unwrap();
    let e = t.clone_fd().unwrap_err();
    assert!(
        matches!(
            e,
            Error::NoFd {
                memory: TensorMemory::Mem
            }
        ),
        "{e}"
    );
    assert_eq!(e.to_string(), "mem tensors have no file descriptor");
    assert!(t.fd().is_none() && t.fd_identity().is_none());
}

#[test]
fn tensor_dyn_dispatches_by_dtype() {
    for dtype in DType::ALL {
        let t = TensorDyn::new(&[2, 2], dtype, Some(TensorMemory::Mem), None).unwrap();
        assert_eq!((t.dtype(), t.size()), (dtype, 4 * dtype.size()));
        assert_eq!(t.batch(1).unwrap().shape(), &[2]);
    }
    let t = TensorDyn::new(&[2], DType::U16, Some(TensorMemory::Mem), None).unwrap();
    let e = Tensor::<f32>::try_from(t).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                expected: DType::F32,
                actual: DType::U16
            }
        ),
        "{e}"
    );
}

#[test]
fn clones_share_the_buffer_and_identity() {
    let t = Tensor::<u8>::new(&[4], Some(TensorMemory::Mem), None).unwrap();
    let c = t.clone();
    assert_eq!(t.buffer_identity(), c.buffer_identity());
    c.map().unwrap()[0] = 9;
    assert_eq!(t.map_read().unwrap()[0], 9);
    let other = Tensor::<u8>::new(&[4], Some(TensorMemory::Mem), None).unwrap();
    assert_ne!(other.buffer_identity().id(), t.buffer_identity().id());
}

#[test]
fn tensors_and_maps_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Tensor<f32>>();
    send_sync::<TensorDyn>();
    send_sync::<zerocam_tensor::TensorMap<u8>>();
    let t = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None).unwrap();
    let t2 = t.clone();
    std::thread::spawn(move || t2.map().unwrap().fill(3))
        .join()
        .unwrap();
    assert_eq!(t.map_read().unwrap()[63], 3);
}
