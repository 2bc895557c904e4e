//! The staged path: a buffer the driver will not register (a discrete GPU's
//! driver refusing pages it cannot pin) is copied into a device buffer kept
//! for it, counted, read-only; `HostPath::Auto` falls back to it once per
//! buffer, `Register` does not, `Staged` always copies.

use zerocam_cuda::{CudaError, CudaPath, HostPath};
use zerocam_tensor::Access;

use crate::common::double::{double, serial};
use crate::{assert_clean, cuda, shm};

#[test]
fn a_refused_buffer_is_copied_once_a_map_into_a_device_buffer_kept_for_it() {
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let (a, b) = (shm(4096, 3), shm(4096, 4));
    // The driver refuses each buffer's registration once (INVALID_VALUE, as
    // NVIDIA's does for VM_PFNMAP pages); Auto copies it instead and does
    // not ask again for that buffer.
    d.fail_next("cuMemHostRegister_v2", 1);
    d.fail_next("cuMemHostRegister_v2", 1);
    for i in 0..10 {
        let (t, fill) = if i % 2 == 0 { (&a, 3) } else { (&b, 4) };
        let map = cuda.map(t, Access::Read).unwrap();
        assert_eq!(map.path(), CudaPath::Staged);
        assert_eq!(map.host_ptr(), None);
        let mut back = [0u8; 32];
        map.copy_to_host(4000, &mut back).unwrap();
        assert_eq!(back, [fill; 32], "map {i}");
    }
    assert_eq!(d.count("cuMemHostRegister_v2"), 2, "asked once a buffer");
    let s = cuda.stats();
    assert_eq!((s.staged.imports, s.staged.hits), (2, 8));
    assert_eq!((s.staged_copies, s.staged_bytes), (10, 10 * 4096));
    assert_eq!(d.live_device_allocations(), 2);
    // What the CPU writes next is what the next map's copy carries.
    a.map().unwrap().fill(9);
    let map = cuda.map(&a, Access::Read).unwrap();
    let mut back = [0u8; 8];
    map.copy_to_host(0, &mut back).unwrap();
    assert_eq!(back, [9; 8]);
    drop(map);
    // Read-write cannot be a copy: refused, naming why.
    cuda.set_host_path(HostPath::Staged);
    match cuda.map(&a, Access::ReadWrite) {
        Err(CudaError::UnsupportedMemory { path, reason, .. }) => {
            assert_eq!(path, "a staged copy");
            assert!(reason.contains("Access::Read"), "{reason}");
        }
        other => panic!("{:?}", other.map(|m| m.path())),
    }
    drop((a, b));
    cuda.sweep();
    assert_eq!(d.live_device_allocations(), 0, "freed with their buffers");
    drop(cuda);
    assert_clean();
}

#[test]
fn register_never_copies_and_staged_always_does() {
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let t = shm(4096, 5);
    cuda.set_host_path(HostPath::Register);
    d.fail_next("cuMemHostRegister_v2", 1);
    match cuda.map(&t, Access::Read) {
        Err(CudaError::Driver { call, code, .. }) => {
            assert_eq!((call, code), ("cuMemHostRegister_v2", 1));
        }
        other => panic!("{:?}", other.map(|m| m.path())),
    }
    assert_eq!(cuda.stats().staged_copies, 0);
    cuda.set_host_path(HostPath::Staged);
    let map = cuda.map(&t, Access::Read).unwrap();
    assert_eq!(map.path(), CudaPath::Staged);
    assert_eq!(d.count("cuMemHostRegister_v2"), 1, "not asked");
    drop(map);
    cuda.set_host_path(HostPath::Auto);
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    assert_eq!(map.path(), CudaPath::HostRegistered, "writes register");
    drop(map);
    cuda.clear();
    drop(t);
    assert_eq!(d.live_device_allocations(), 0);
    drop(cuda);
    assert_clean();
}
