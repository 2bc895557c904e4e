//! Without a CUDA driver (this binary points `ZEROCAM_CUDA_LIBRARY` at a file
//! that does not exist before anything loads it): every entry point says
//! CUDA is unavailable and names the library; a library that is not a CUDA
//! driver is refused naming the first entry point it lacks.
#![allow(clippy::unwrap_used)]

use zerocam_cuda::{is_cuda_available, Cuda, CudaError, Driver, LIBRARY_ENV};

const MISSING: &str = "/nonexistent/libcuda.so.1";

#[test]
fn without_a_driver_every_entry_point_names_the_missing_library() {
    std::env::set_var(LIBRARY_ENV, MISSING);
    assert!(!is_cuda_available());
    for attempt in [Cuda::new().map(drop), Driver::shared().map(drop)] {
        match attempt {
            Err(CudaError::Unavailable(u)) => {
                assert_eq!(u.library, MISSING);
                assert!(u.reason.contains(MISSING), "{u}");
                assert!(u.to_string().starts_with("CUDA is unavailable: "), "{u}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Not a CUDA driver at all: libc has none of the entry points.
    match Cuda::with_library("libc.so.6", 0) {
        Err(CudaError::Unavailable(u)) => {
            assert!(u.reason.contains("lacks the entry point cuInit"), "{u}");
        }
        other => panic!("{other:?}"),
    }
}
