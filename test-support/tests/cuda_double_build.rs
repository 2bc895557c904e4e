//! Builds the CUDA driver doubles on the host: `tests/lab/test-all` runs
//! this before it boots the lab, whose guest runs `lab_cuda` without a
//! toolchain to build them (they are found in `target/<profile>/cuda-double`).
#![cfg(feature = "cuda-double")]

#[test]
fn the_cuda_doubles_build() {
    use zerocam_test_support::cuda_double::{library, library_cuda10};
    assert!(library().is_file(), "{}", library().display());
    assert!(library_cuda10().is_file(), "{}", library_cuda10().display());
}
