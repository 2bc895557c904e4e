//! `CudaMap::copy_to_host` is ordered after the work queued on the map's
//! stream (a non-blocking stream, which the legacy default stream does not
//! wait for).

use std::ffi::c_void;

use zerocam_tensor::Access;

use crate::common::double::{double, library, serial};
use crate::{assert_clean, cuda, shm};

#[test]
fn a_copy_to_host_sees_the_writes_queued_before_it_on_the_maps_stream() {
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let t = shm(4096, 0x11);
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    // A kernel writing 0x22 over the first KiB, queued on the map's stream.
    // SAFETY: the map's own range, mapped read-write while it lives; the
    // write runs at the latest when the stream is destroyed, before the
    // registration (which keeps the mapping) goes.
    let queued = unsafe { double().queue_write(map.stream(), map.device_ptr(), 0x22, 1024) };
    assert_eq!(queued, 0);
    let mut back = vec![0u8; 4096];
    map.copy_to_host(0, &mut back).unwrap();
    assert!(
        back[..1024].iter().all(|&b| b == 0x22),
        "the copy did not wait for the write queued before it (read {:#x})",
        back[0]
    );
    assert!(back[1024..].iter().all(|&b| b == 0x11));
    assert_eq!(
        d.count("cuMemcpyDtoH_v2"),
        0,
        "nothing on the legacy stream"
    );
    assert_eq!(d.count("cuMemcpyDtoHAsync_v2"), 1);
    assert!(d.count("cuStreamSynchronize") >= 1);
    drop((map, t, cuda));
    assert_clean();
}

#[test]
fn the_double_keeps_a_non_blocking_streams_work_from_the_legacy_stream() {
    // The behaviour the test above relies on, straight through the double's
    // C API: a legacy-stream copy reads older bytes than a write queued on a
    // non-blocking stream, until that stream is synchronized.
    let _serial = serial();
    let cuda = cuda();
    let t = shm(4096, 0x11);
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    // SAFETY: as in the test above.
    let queued = unsafe { double().queue_write(map.stream(), map.device_ptr(), 0x22, 4096) };
    assert_eq!(queued, 0);
    // SAFETY: loading the double runs no initialiser of note.
    let lib = unsafe { libloading::Library::new(library()) }.unwrap();
    type DtoH = unsafe extern "C" fn(*mut c_void, u64, usize) -> i32;
    // SAFETY: cuMemcpyDtoH_v2's signature (cuda.h).
    let legacy_copy = unsafe { lib.get::<DtoH>(b"cuMemcpyDtoH_v2\0") }.unwrap();
    let mut back = vec![0u8; 4096];
    let copy = |back: &mut [u8]| {
        cuda.with_current(|| {
            // SAFETY: `back` holds 4096 writable bytes; the source is the map's.
            unsafe { legacy_copy(back.as_mut_ptr().cast(), map.device_ptr(), back.len()) }
        })
        .unwrap()
    };
    assert_eq!(copy(back.as_mut_slice()), 0);
    assert!(back.iter().all(|&b| b == 0x11), "the write has not run yet");
    map.synchronize().unwrap();
    assert_eq!(copy(back.as_mut_slice()), 0);
    assert!(back.iter().all(|&b| b == 0x22), "the stream ran it");
    drop((map, t, cuda));
    assert_clean();
}
