//! A CUDA 10.2 driver (JetPack 4 on Jetson Nano, TX2, Xavier): it lacks the
//! `_v2` entry points CUDA 11.0 added (`cuDevicePrimaryCtxRelease_v2`) and
//! attributes 99 and 113. The handle resolves the older names of the same
//! signature, opens, registers host memory and copies, and releases its
//! context through the old name.

use zerocam_cuda::Cuda;
use zerocam_tensor::Access;

use crate::common::double::{double_cuda10, library_cuda10, serial};
use crate::shm;

#[test]
fn a_cuda_10_driver_is_used_through_its_older_entry_point_names() {
    let _serial = serial();
    let d = double_cuda10();
    d.reset();
    let cuda = Cuda::with_library(library_cuda10(), 0).expect("the older names resolve");
    let info = cuda.info();
    assert_eq!(info.driver_version, 10020);
    assert_eq!(info.unknown_attributes, [99, 113]);
    let t = shm(4096, 9);
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    let mut back = [0u8; 8];
    map.copy_to_host(0, &mut back).unwrap();
    assert_eq!(back, [9; 8]);
    drop(map);
    cuda.clear();
    drop((t, cuda));
    assert!(d.count("cuCtxPushCurrent") > 0);
    assert_eq!(d.count("cuStreamDestroy"), 1);
    assert_eq!(d.count("cuDevicePrimaryCtxRelease"), 1);
    assert_eq!(d.violations(), Vec::<String>::new());
    assert_eq!(d.live_host_registrations(), 0);
}
