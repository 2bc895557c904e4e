//! What this crate's tests share: the CUDA driver double (zerocam-test-support).
pub use zerocam_test_support::cuda_double as double;
