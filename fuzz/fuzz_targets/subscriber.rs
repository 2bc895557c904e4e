//! A whole `Subscriber` against a hostile publisher: a stream (Welcome,
//! frames, ...) written in fuzzed chunks with memfds of fuzzed sizes and
//! seals attached. A typed error or frames whose bytes lie inside the
//! publisher's files; no fd left open.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = zerocam_capture::fuzzing::check_subscriber(data);
});
