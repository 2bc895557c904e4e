//! The socket receiver both sides read with: a byte stream written in
//! fuzzed chunks (some with fds) into a socket pair must give the messages
//! the stream holds, whatever the splits, and leave no fd open.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = zerocam_capture::fuzzing::check_receiver(data);
});
