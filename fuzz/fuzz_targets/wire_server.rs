//! The subscriber's decoder of publisher messages (Welcome, Frame,
//! Goodbye): header, then body; an accepted message round-trips and keeps
//! every byte that is not reserved.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = zerocam_capture::fuzzing::check_server_message(data);
});
