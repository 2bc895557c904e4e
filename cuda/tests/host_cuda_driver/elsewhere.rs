//! Host memory another library of the process registered first
//! (`torch.pin_memory`, a GStreamer CUDA buffer pool): our
//! `cuMemHostRegister` gets HOST_MEMORY_ALREADY_REGISTERED, and the existing
//! registration is used when it covers the buffer, never unregistered by us.

use zerocam_cuda::{CudaError, HostRegisterError};
use zerocam_tensor::Access;

use crate::common::double::{double, serial};
use crate::{assert_clean, buffer_of, cuda, shm};

#[test]
fn memory_registered_elsewhere_is_used_and_left_to_its_owner() {
    let _serial = serial();
    let d = double();
    let c = double();
    let t = shm(1 << 16, 0x5a);
    let (base, len) = buffer_of(&t);
    assert_eq!(c.register_elsewhere(base, len), 0);
    let cuda = cuda();
    let map = cuda.map(&t, Access::Read).unwrap();
    assert_eq!(
        map.device_ptr(),
        base as u64,
        "the other registration's address"
    );
    let mut back = vec![0u8; 256];
    map.copy_to_host(0, &mut back).unwrap();
    assert!(back.iter().all(|&b| b == 0x5a));
    assert_eq!(d.count("cuMemHostRegister_v2"), 1, "tried once: 712");
    assert!(d.count("cuPointerGetAttribute") >= 3);
    drop(map);
    let again = cuda.map(&t, Access::Read).unwrap();
    assert_eq!(again.device_ptr(), base as u64);
    assert_eq!(d.count("cuMemHostRegister_v2"), 1, "found in the cache");
    drop(again);
    drop(cuda); // drops the cached registration: theirs stays
    assert_eq!(d.count("cuMemHostUnregister"), 0);
    assert_eq!(
        d.live_host_registrations(),
        1,
        "still registered by its owner"
    );
    assert_eq!(d.violations(), Vec::<String>::new());
    assert_eq!(c.unregister_elsewhere(base), 0);
    drop(t);
    assert_clean();
}

#[test]
fn memory_registered_elsewhere_in_part_is_a_typed_error() {
    let _serial = serial();
    let d = double();
    let c = double();
    let t = shm(1 << 16, 0);
    let (base, len) = buffer_of(&t);
    let cuda = cuda();

    // Their registration covers the first half only.
    assert_eq!(c.register_elsewhere(base, len / 2), 0);
    match cuda.map(&t, Access::Read) {
        Err(CudaError::HostRegister(e)) => {
            let expected = HostRegisterError::PartlyRegisteredElsewhere {
                base,
                len,
                start: base as u64,
                size: (len / 2) as u64,
            };
            assert_eq!(e, expected);
            assert!(
                e.to_string().contains("HOST_MEMORY_ALREADY_REGISTERED"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.unregister_elsewhere(base), 0);

    // The second half only: the driver knows nothing at the buffer's start.
    let half = base + len / 2;
    assert_eq!(c.register_elsewhere(half, len / 2), 0);
    match cuda.map(&t, Access::Read) {
        Err(CudaError::HostRegister(e)) => {
            let expected = HostRegisterError::RegisteredElsewhereUnknown {
                base,
                len,
                attribute: "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR",
                error: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            };
            assert_eq!(e, expected);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.unregister_elsewhere(half), 0);

    // Nothing was left registered: now it registers as ours.
    let map = cuda.map(&t, Access::Read).unwrap();
    assert_eq!(d.count("cuMemHostRegister_v2"), 3);
    drop((map, cuda));
    assert_eq!(d.count("cuMemHostUnregister"), 1);
    drop(t);
    assert_clean();
}

/// The driver registers whole pages, so two ranges in one page collide
/// (HOST_MEMORY_ALREADY_REGISTERED, which the double answers by the page):
/// heap tensors take whole pages of their own, so small ones each register,
/// read-write, without meeting another's registration.
#[test]
fn small_heap_tensors_register_each_in_pages_of_their_own() {
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let tensors: Vec<_> = (0..8)
        .map(|i| {
            let t = zerocam_tensor::Tensor::<u8>::new(
                &[64],
                Some(zerocam_tensor::TensorMemory::Mem),
                None,
            )
            .unwrap();
            t.map().unwrap().fill(i);
            t
        })
        .collect();
    let maps: Vec<_> = tensors
        .iter()
        .map(|t| cuda.map(t, Access::ReadWrite).unwrap())
        .collect();
    for (i, m) in maps.iter().enumerate() {
        let mut back = [0u8; 64];
        m.copy_to_host(0, &mut back).unwrap();
        assert_eq!(back, [i as u8; 64]);
    }
    assert_eq!(d.count("cuMemHostRegister_v2"), 8);
    drop(maps);
    cuda.clear();
    drop(tensors);
    assert_clean();
}
