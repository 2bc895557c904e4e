//! Path (a), host registration, against the test double of the CUDA driver
//! (`tests/double/`, compiled by the tests): registered once per buffer,
//! unregistered before the memory goes in every drop order, evicted
//! registrations unregistered, driver errors typed. No GPU needed; the
//! double checks at every unregister that the range is still mapped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::double::{double, library, serial};
use zerocam_cuda::{Cuda, CudaError, CudaPath};
use zerocam_tensor::{Access, Error, PixelFormat, Region, Tensor, TensorMemory};

fn cuda() -> Cuda {
    Cuda::with_library(library(), 0).unwrap()
}

fn shm(len: usize) -> Tensor<u8> {
    Tensor::<u8>::new(&[len], Some(TensorMemory::Shm), None).unwrap()
}

/// What must hold at the end of every test: nothing registered, nothing
/// unregistered after its memory went.
fn assert_clean() {
    let d = double();
    assert_eq!(d.violations(), Vec::<String>::new());
    assert_eq!(d.live_host_registrations(), 0, "{:?}", d.events());
}

#[test]
fn the_double_catches_an_unregister_after_munmap() {
    // The check every other test relies on can fail: register a mapping,
    // unmap it, then unregister it, straight through the double's C API.
    use std::ffi::c_void;
    use std::num::NonZeroUsize;
    type Ctx = *mut c_void;
    let _serial = serial();
    let d = double();
    // SAFETY: loading the double runs no initialiser of note.
    let lib = unsafe { libloading::Library::new(library()) }.unwrap();
    // SAFETY: the symbols have these C signatures (cuda.h); the mapping is
    // ours, unmapped before the unregister on purpose.
    unsafe {
        let init: libloading::Symbol<unsafe extern "C" fn(u32) -> i32> =
            lib.get(b"cuInit\0").unwrap();
        let retain: libloading::Symbol<unsafe extern "C" fn(*mut Ctx, i32) -> i32> =
            lib.get(b"cuDevicePrimaryCtxRetain\0").unwrap();
        let push: libloading::Symbol<unsafe extern "C" fn(Ctx) -> i32> =
            lib.get(b"cuCtxPushCurrent_v2\0").unwrap();
        let register: libloading::Symbol<unsafe extern "C" fn(*mut c_void, usize, u32) -> i32> =
            lib.get(b"cuMemHostRegister_v2\0").unwrap();
        let unregister: libloading::Symbol<unsafe extern "C" fn(*mut c_void) -> i32> =
            lib.get(b"cuMemHostUnregister\0").unwrap();
        let mut ctx = std::ptr::null_mut();
        assert_eq!(init(0), 0);
        assert_eq!(retain(&mut ctx, 0), 0);
        assert_eq!(push(ctx), 0);
        let len = NonZeroUsize::new(1 << 16).unwrap();
        let prot = nix::sys::mman::ProtFlags::PROT_READ | nix::sys::mman::ProtFlags::PROT_WRITE;
        let flags = nix::sys::mman::MapFlags::MAP_PRIVATE;
        let p = nix::sys::mman::mmap_anonymous(None, len, prot, flags).unwrap();
        assert_eq!(register(p.as_ptr(), len.get(), 2), 0);
        assert_eq!(register(p.as_ptr(), len.get(), 2), 712, "overlap refused");
        nix::sys::mman::munmap(p, len.get()).unwrap();
        assert_eq!(unregister(p.as_ptr()), 0);
    }
    let v = d.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("unregister after unmap"), "{v:?}");
    d.reset();
}

#[test]
fn four_buffers_over_1000_frames_register_four_times() {
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let buffers: Vec<Tensor<u8>> = (0..4).map(|_| shm(640 * 480 * 3 / 2)).collect();
    let mut first_ptr = [0u64; 4];
    for f in 0..1000 {
        let b = f % 4;
        let map = cuda.map(&buffers[b], Access::Read).unwrap();
        assert_eq!(map.path(), CudaPath::HostRegistered);
        if f < 4 {
            first_ptr[b] = map.device_ptr();
        }
        assert_eq!(
            map.device_ptr(),
            first_ptr[b],
            "a buffer keeps its device address"
        );
    }
    assert_eq!(d.count("cuMemHostRegister_v2"), 4);
    assert_eq!(d.count("cuMemHostUnregister"), 0);
    let s = cuda.stats();
    assert_eq!(
        (s.maps, s.host.imports, s.host.hits, s.host.live),
        (1000, 4, 996, 4)
    );
    drop(buffers);
    let s = cuda.stats(); // sweeps: the identities died
    assert_eq!((s.host.swept, s.host_unregistered), (4, 4));
    assert_eq!(d.count("cuMemHostUnregister"), 4);
    assert_clean();
}

#[test]
fn the_device_reads_what_the_cpu_wrote() {
    let _serial = serial();
    let cuda = cuda();
    let t = shm(4096);
    for (i, b) in t.map().unwrap().iter_mut().enumerate() {
        *b = (i * 7 % 251) as u8;
    }
    let map = cuda.map(&t, Access::Read).unwrap();
    let mut back = vec![0u8; 4096];
    map.copy_to_host(0, &mut back).unwrap();
    assert_eq!(back, *t.map_read().unwrap());
    assert!(matches!(
        map.copy_to_host(1, &mut back),
        Err(CudaError::Mismatch { .. })
    ));
    drop((map, t, cuda));
    assert_clean();
}

#[test]
fn views_share_their_buffers_registration() {
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let img = Tensor::<u8>::image(64, 32, PixelFormat::Rgb, Some(TensorMemory::Shm)).unwrap();
    let whole = cuda.map(&img, Access::Read).unwrap();
    let crop = img.view(Region::new(8, 4, 16, 8)).unwrap();
    let part = cuda.map(&crop, Access::Read).unwrap();
    assert_eq!(d.count("cuMemHostRegister_v2"), 1);
    assert_eq!(
        part.device_ptr() - whole.device_ptr(),
        (4 * 64 * 3 + 8 * 3) as u64
    );
    assert_eq!(part.pitch(), 64 * 3);
    assert_eq!(part.shape(), [8, 16, 3]);
    drop((whole, part, crop, img, cuda));
    assert_clean();
}

#[test]
fn an_nv12_image_maps_as_two_planes() {
    let _serial = serial();
    let cuda = cuda();
    let img = Tensor::<u8>::image(64, 32, PixelFormat::Nv12, Some(TensorMemory::Shm)).unwrap();
    let map = cuda.map(&img, Access::Read).unwrap();
    let planes = map.planes();
    assert_eq!(planes.len(), 2);
    assert_eq!(planes[0].device_ptr, map.device_ptr());
    assert_eq!(planes[1].device_ptr - planes[0].device_ptr, 64 * 32);
    assert_eq!((planes[0].pitch, planes[1].pitch), (64, 64));
    assert_eq!(
        double().count("cuMemHostRegister_v2"),
        1,
        "one buffer, one registration"
    );
    drop((map, img, cuda));
    assert_clean();
}

/// Drops the three parties in `order` (0 tensor, 1 map, 2 Cuda handle).
fn drop_in_order(order: [usize; 3], memory: TensorMemory) {
    let d = double();
    d.reset();
    let cuda = cuda();
    let t = Tensor::<u8>::new(&[1 << 20], Some(memory), None).unwrap();
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    let (mut t, mut map, mut cuda) = (Some(t), Some(map), Some(cuda));
    for who in order {
        match who {
            0 => drop(t.take()),
            1 => drop(map.take()),
            _ => drop(cuda.take()),
        }
        if let Some(c) = &cuda {
            c.sweep();
        }
    }
    assert_eq!(
        d.count("cuMemHostUnregister"),
        1,
        "{order:?}: {:?}",
        d.events()
    );
    assert_clean();
}

#[test]
fn unregister_comes_before_the_memory_goes_in_every_drop_order() {
    let _serial = serial();
    for memory in [TensorMemory::Shm, TensorMemory::Mem] {
        for order in [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ] {
            drop_in_order(order, memory);
        }
    }
}

#[test]
fn eviction_unregisters_the_least_recently_used() {
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let tensors: Vec<Tensor<u8>> = (0..40).map(|_| shm(4096)).collect();
    for t in &tensors {
        drop(cuda.map(t, Access::Read).unwrap());
    }
    let s = cuda.stats();
    assert_eq!((s.host.imports, s.host.evictions, s.host.live), (40, 8, 32));
    assert_eq!(d.count("cuMemHostUnregister"), 8);
    assert_eq!(d.live_host_registrations(), 32);
    // An evicted buffer still mapped stays registered until its map drops.
    let held = cuda.map(&tensors[8], Access::Read).unwrap(); // the LRU now
    for t in (0..8).map(|_| shm(4096)) {
        drop(cuda.map(&t, Access::Read).unwrap());
    }
    let mut back = [0u8; 16];
    held.copy_to_host(0, &mut back).unwrap();
    drop((held, tensors, cuda));
    assert_clean();
}

#[test]
fn driver_errors_are_typed_and_leave_nothing_registered() {
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let t = shm(4096);
    d.fail_next("cuMemHostRegister_v2", 2);
    match cuda.map(&t, Access::Read) {
        Err(CudaError::Driver { call, code, name }) => {
            assert_eq!((call, code), ("cuMemHostRegister_v2", 2));
            assert_eq!(name, "CUDA_ERROR_OUT_OF_MEMORY");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(cuda.stats().host.live, 0);
    d.fail_next("cuMemHostGetDevicePointer_v2", 1);
    let e = cuda.map(&t, Access::Read).unwrap_err();
    assert_eq!(e.driver_code(), Some(1));
    assert!(e.to_string().contains("CUDA_ERROR_INVALID_VALUE"), "{e}");
    assert_eq!(
        d.live_host_registrations(),
        0,
        "the half-made registration was undone"
    );
    let map = cuda.map(&t, Access::Read).unwrap(); // and then it works
    assert_eq!(d.count("cuMemHostRegister_v2"), 3);
    drop((map, t, cuda));
    assert_clean();
}

#[test]
fn a_device_map_conflicts_with_cpu_writes_and_read_only_memory_refuses_writes() {
    let _serial = serial();
    let cuda = cuda();
    let t = shm(4096);
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    assert!(matches!(t.map_read(), Err(Error::MapConflict { .. })));
    drop(map);
    let reading = cuda.map(&t, Access::Read).unwrap();
    assert!(t.map_read().is_ok());
    assert!(matches!(t.map_write(), Err(Error::MapConflict { .. })));
    drop(reading);
    drop((t, cuda));
    assert_clean();
}

#[test]
fn no_device_and_a_failed_init_are_typed() {
    let _serial = serial();
    let d = double();
    d.set_device_count(0);
    match Cuda::with_library(library(), 0) {
        Err(CudaError::NoDevice {
            ordinal: 0,
            count: 0,
        }) => {}
        other => panic!("{other:?}"),
    }
    d.reset();
    d.fail_next("cuInit", 100);
    match Cuda::with_library(library(), 0) {
        Err(CudaError::Driver {
            call: "cuInit",
            name,
            ..
        }) => {
            assert_eq!(name, "CUDA_ERROR_NO_DEVICE");
        }
        other => panic!("{other:?}"),
    }
    let cuda = cuda();
    let info = cuda.info();
    assert_eq!(info.name, "zerocam test double");
    assert!(info.integrated && info.host_pointer_is_device_pointer);
    assert_eq!(cuda.driver().version(), 12080);
    drop(cuda);
    assert_eq!(d.live_streams(), 0, "the stream was destroyed");
}

#[test]
fn a_heap_tensor_registers_too() {
    let _serial = serial();
    let cuda = cuda();
    let t = Tensor::<f32>::new(&[3, 224, 224], Some(TensorMemory::Mem), None).unwrap();
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    assert_eq!(map.len(), 3 * 224 * 224 * 4);
    assert_eq!(map.strides(), Some(&[224 * 224 * 4, 224 * 4, 4][..]));
    drop((map, t, cuda));
    assert_clean();
}

#[test]
#[cfg(feature = "capture")]
fn pattern_frames_register_once_per_buffer_over_1000_frames() {
    use zerocam_capture::{FrameSource, PatternConfig, PatternSource, CAPTURE_FORMATS};
    use zerocam_cuda::CudaFrameExt;
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let nv12 = CAPTURE_FORMATS
        .into_iter()
        .find(|f| f.name == "NV12")
        .unwrap();
    let mut source = PatternSource::new(PatternConfig::new(nv12, 320, 240)).unwrap();
    let wait = std::time::Duration::from_secs(1);
    for _ in 0..1000 {
        let frame = source.next_frame(wait).unwrap();
        let c = frame.cuda(&cuda).unwrap();
        assert_eq!(c.path(), CudaPath::HostRegistered);
        assert_eq!(c.planes().len(), 2);
        assert_eq!(c.planes()[1].shape[0], 120, "the chroma plane's rows");
        assert_eq!(c.sequence(), frame.sequence());
        assert_eq!(
            c.host_ptr(),
            Some(c.device_ptr()),
            "the double maps host addresses 1:1"
        );
    }
    let buffers = source.stats().buffers as u64;
    assert_eq!(d.count("cuMemHostRegister_v2"), buffers);
    assert_eq!(cuda.stats().host.hits, 1000 - buffers);
    drop(source);
    cuda.sweep();
    assert_clean();
}
