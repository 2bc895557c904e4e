//! `zerocam_tensor::capsule::import` (what `Tensor.from_zerocam` decodes)
//! of a fuzzed `ZerocamTensorV1` over a memfd of fuzzed size: a typed error,
//! or a tensor of the capsule's shape and strides whose bytes lie inside the
//! file and read as the file's bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use zerocam_capture::fuzzing::{capsule_case_from_bytes, check_capsule};

fuzz_target!(|data: &[u8]| {
    let _ = check_capsule(&capsule_case_from_bytes(data));
});
