//! `FormatReply::stream_format` on raw driver replies: a format it accepts
//! lays a frame on buffers of its planes' sizeimage.
#![no_main]
use libfuzzer_sys::fuzz_target;
use zerocam_capture::fuzzing::{check_format_reply, format_reply_from_bytes};

fuzz_target!(|data: &[u8]| {
    let _ = check_format_reply(&format_reply_from_bytes(data));
});
