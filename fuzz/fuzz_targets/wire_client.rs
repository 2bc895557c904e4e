//! The publisher's decoder of client messages (Hello, Release): header, then
//! body; an accepted message round-trips, a refused one says why truly.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = zerocam_capture::fuzzing::check_client_message(data);
});
