//! `Tensor::from_fd`, `with_image` (views, batches, planes) and
//! `import_planes` over sealed memfds of fuzzed sizes: a typed error, or a
//! tensor whose bytes lie inside its file and read as the file's bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use zerocam_capture::fuzzing::{check_tensor, tensor_case_from_bytes};

fuzz_target!(|data: &[u8]| {
    let _ = check_tensor(&tensor_case_from_bytes(data));
});
