//! The fuzz targets' checks on real values — the seed corpus, which
//! `ZEROCAM_FUZZ_SEEDS=fuzz/corpus cargo test -p zerocam-capture fuzzing`
//! writes — and every crash the fuzzers found, as regular tests
//! (docs/testing.md, "Fuzzing").

use super::*;
use crate::share::{FrameMessage, GoodbyeReason, PlaneSpan, WireFormat};
use crate::{FrameSource, PatternConfig, PatternSource, Synthesized, CAPTURE_FORMATS};

/// The stream formats the pattern source makes, one per capture format, at
/// small sizes (what a publisher of it puts in its Welcome).
fn real_formats() -> Vec<StreamFormat> {
    CAPTURE_FORMATS
        .iter()
        .flat_map(|&f| [(16, 8), (64, 48)].map(move |(w, h)| (f, w, h)))
        .map(|(f, w, h)| {
            let source = PatternSource::new(PatternConfig::new(f, w, h)).expect("a pattern source");
            source.stream_format().clone()
        })
        .collect()
}

fn frame_of(format: &StreamFormat, buffer: u32, first: bool, chroma: Option<u32>) -> FrameMessage {
    let wire = WireFormat::of(format).expect("a format on the wire");
    let mut spans = [PlaneSpan::default(); 2];
    for (s, p) in spans.iter_mut().zip(&format.planes) {
        s.length = u64::from(p.size);
    }
    FrameMessage {
        frame_id: 1000 + u64::from(buffer),
        buffer,
        sequence: 7,
        timestamp_ns: 123_456_789,
        bytes_used: format.planes.iter().map(|p| u64::from(p.size)).sum(),
        synthesized: Synthesized {
            sequence: false,
            timestamp: true,
            bytes_used: false,
        },
        format: wire,
        chroma_offset: chroma,
        spans,
        carries_fds: first,
    }
}

/// Real messages of each side, encoded.
fn server_messages() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for f in real_formats() {
        let wire = WireFormat::of(&f).expect("a format on the wire");
        let welcome = ServerMessage::Welcome {
            lease_ms: 500,
            max_leases: 2,
            buffers: 4,
            format: wire,
        };
        out.push(welcome.encode().as_bytes().to_vec());
        out.push(
            ServerMessage::Frame(frame_of(&f, 1, true, None))
                .encode()
                .as_bytes()
                .to_vec(),
        );
        let chroma = (f.planes.len() == 1 && f.format.pixel.plane_count() == 2)
            .then_some(f.planes[0].bytes_per_line * f.height);
        out.push(
            ServerMessage::Frame(frame_of(&f, 3, false, chroma))
                .encode()
                .as_bytes()
                .to_vec(),
        );
    }
    for reason in [
        GoodbyeReason::Stopping,
        GoodbyeReason::SourceGone,
        GoodbyeReason::NotAllowed,
        GoodbyeReason::ProtocolViolation,
        GoodbyeReason::Full,
    ] {
        out.push(ServerMessage::Goodbye(reason).encode().as_bytes().to_vec());
    }
    out
}

fn client_messages() -> Vec<Vec<u8>> {
    [
        ClientMessage::Hello { max_leases: 2 },
        ClientMessage::Hello {
            max_leases: u16::MAX,
        },
        ClientMessage::Release { frame_id: 0 },
        ClientMessage::Release { frame_id: 1001 },
        ClientMessage::Release { frame_id: u64::MAX },
    ]
    .iter()
    .map(|m| m.encode().as_bytes().to_vec())
    .collect()
}

/// A receiver input: chunk specs, then the stream.
fn receiver_input(specs: &[u8], stream: &[u8]) -> Vec<u8> {
    let mut v = vec![(specs.len() - 1) as u8];
    v.extend_from_slice(specs);
    v.extend_from_slice(stream);
    v
}

/// Streams as a subscriber sees them: a Welcome, frames, a Goodbye — split
/// in one piece, byte by byte, at 12 and at odd sizes, with fds on some
/// chunks; and the client side's Hello and releases.
fn receiver_inputs() -> Vec<Vec<u8>> {
    let formats = real_formats();
    let server = server_messages();
    let mut out = Vec::new();
    for (i, f) in formats.iter().enumerate().step_by(3) {
        let wire = WireFormat::of(f).expect("wire");
        let mut stream = ServerMessage::Welcome {
            lease_ms: 500,
            max_leases: 2,
            buffers: 4,
            format: wire,
        }
        .encode()
        .as_bytes()
        .to_vec();
        for b in 0..3 {
            stream.extend_from_slice(
                ServerMessage::Frame(frame_of(f, b, true, None))
                    .encode()
                    .as_bytes(),
            );
        }
        stream.extend_from_slice(
            ServerMessage::Goodbye(GoodbyeReason::Stopping)
                .encode()
                .as_bytes(),
        );
        let specs: &[&[u8]] = &[
            &[63],
            &[0],
            &[11],
            &[5, 17, 63, 2],
            &[63 | 64, 63],
            &[0x80 | 11, 40],
        ];
        out.push(receiver_input(specs[i % specs.len()], &stream));
    }
    // An impatient reader (bit 4): deadlines of now, timeouts retried.
    let mut impatient = out[0].clone();
    impatient[0] |= 16;
    out.push(impatient);
    let mut impatient = out[3].clone();
    impatient[0] |= 16;
    out.push(impatient);
    let client: Vec<u8> = client_messages().concat();
    out.push(receiver_input(&[3, 7], &client));
    out.push(receiver_input(&[63], &server[0][..20])); // cut in its body
    out
}

/// Driver replies: each capture format's real stream format, at sizes the
/// check lays a frame on, padded rows, and vivid's 640x480 NV12.
fn reply_inputs() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut push =
        |fourcc: u32, w: u32, h: u32, field: u32, planes: &[(u32, u32)], entries: usize| {
            let mut v = Vec::new();
            for x in [fourcc, w, h, field] {
                v.extend_from_slice(&x.to_le_bytes());
            }
            v.push(planes.len() as u8);
            v.push(entries as u8);
            for i in 0..entries {
                let (bpl, size) = planes.get(i).copied().unwrap_or((0, 0));
                v.extend_from_slice(&bpl.to_le_bytes());
                v.extend_from_slice(&size.to_le_bytes());
            }
            for x in [1u32, 1, 2] {
                v.extend_from_slice(&x.to_le_bytes());
            }
            out.push(v);
        };
    for f in real_formats() {
        let planes: Vec<(u32, u32)> = f
            .planes
            .iter()
            .map(|p| (p.bytes_per_line, p.size))
            .collect();
        let multi = if f.format.memory_planes == 2 { 8 } else { 1 };
        push(
            f.format.fourcc.to_u32(),
            f.width,
            f.height,
            1,
            &planes,
            multi,
        );
        let padded: Vec<(u32, u32)> = planes
            .iter()
            .map(|&(b, s)| (b + 64, s / b * (b + 64)))
            .collect();
        push(
            f.format.fourcc.to_u32(),
            f.width,
            f.height,
            1,
            &padded,
            multi,
        );
    }
    push(
        u32::from_le_bytes(*b"NV12"),
        640,
        480,
        1,
        &[(640, 460_800)],
        1,
    );
    out
}

/// Tensor cases: a shm plane imported as the pattern source's formats, a
/// padded NV12 with a view and a batch, split NV12 planes, and arrays.
fn tensor_inputs() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let size = |v: &mut Vec<u8>, x: usize| v.extend_from_slice(&(x as u64).to_le_bytes());
    let opt = |v: &mut Vec<u8>, x: Option<usize>| {
        v.push(u8::from(x.is_some()));
        v.extend_from_slice(&(x.unwrap_or(0) as u64).to_le_bytes());
    };
    let index = |f: PixelFormat| {
        PixelFormat::ALL
            .iter()
            .position(|&g| g == f)
            .expect("a format") as u8
    };
    // Arrays.
    for (seal, len, wide, shape) in [
        (0u8, 4096u32, 0u8, vec![64usize, 64]),
        (2, 4096, 1, vec![2, 8, 8, 16]),
        (3, 4096, 0, vec![4096]),
        (1, 100, 0, vec![101]),
    ] {
        let mut v = vec![0, seal];
        v.extend_from_slice(&len.to_le_bytes());
        v.push(wide);
        v.push(shape.len() as u8);
        for d in shape {
            size(&mut v, d);
        }
        out.push(v);
    }
    // Images: each pattern format, packed; NV12 padded and offset, viewed and batched.
    for f in real_formats()
        .iter()
        .filter(|f| f.format.memory_planes == 1 && f.width == 16)
    {
        let mut v = vec![1, 0];
        v.extend_from_slice(&f.planes[0].size.to_le_bytes());
        v.push(index(f.format.pixel));
        size(&mut v, f.width as usize);
        size(&mut v, f.height as usize);
        opt(&mut v, Some(f.planes[0].bytes_per_line as usize));
        opt(&mut v, None);
        size(&mut v, 1);
        size(&mut v, 0);
        opt(&mut v, Some(2));
        size(&mut v, 2);
        size(&mut v, 8);
        size(&mut v, 4);
        opt(&mut v, None);
        out.push(v);
    }
    let mut v = vec![1, 2];
    v.extend_from_slice(&4096u32.to_le_bytes());
    v.push(index(PixelFormat::Nv12));
    size(&mut v, 16);
    size(&mut v, 16);
    opt(&mut v, Some(32));
    opt(&mut v, Some(32 * 20));
    size(&mut v, 2);
    size(&mut v, 64);
    opt(&mut v, Some(4));
    size(&mut v, 2);
    size(&mut v, 8);
    size(&mut v, 8);
    opt(&mut v, Some(1));
    out.push(v);
    // Two planes: one file at two offsets, and two files.
    for second in [false, true] {
        let mut v = vec![2, 0];
        v.extend_from_slice(&4096u32.to_le_bytes());
        v.push(index(PixelFormat::Nv12));
        size(&mut v, 32);
        size(&mut v, 16);
        opt(&mut v, Some(32));
        size(&mut v, 0);
        opt(&mut v, None);
        size(&mut v, if second { 0 } else { 1024 });
        v.push(u8::from(second));
        if second {
            v.push(0);
            v.extend_from_slice(&256u32.to_le_bytes());
        }
        out.push(v);
    }
    out
}

/// Writes each target's seeds under `$ZEROCAM_FUZZ_SEEDS/<target>/` when
/// the variable is set (how fuzz/corpus was made), after checking them.
fn seeds(target: &str, inputs: &[Vec<u8>]) {
    let Ok(dir) = std::env::var("ZEROCAM_FUZZ_SEEDS") else {
        return;
    };
    let dir = Path::new(&dir).join(target);
    std::fs::create_dir_all(&dir).expect("the corpus folder");
    for (i, input) in inputs.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:03}")), input).expect("a seed");
    }
}

#[test]
fn real_messages_of_both_sides_decode_and_round_trip() {
    let server = server_messages();
    for m in &server {
        let r = check_server_message(m).expect("a whole message");
        assert!(r.is_ok(), "{r:?}");
        let r = check_client_message(m).expect("a whole message");
        assert!(matches!(r, Err(WireError::UnknownKind { .. })), "{r:?}");
    }
    let client = client_messages();
    for m in &client {
        assert!(check_client_message(m).expect("whole").is_ok());
        assert!(matches!(
            check_server_message(m),
            Some(Err(WireError::UnknownKind { .. }))
        ));
    }
    seeds("wire_server", &server);
    seeds("wire_client", &client);
}

#[test]
fn reserved_bytes_are_the_only_ones_a_decoder_ignores() {
    // A Frame with every reserved byte set and no chroma offset flag: taken,
    // and encoded back with zeros there.
    let f = real_formats().remove(0);
    let mut m = ServerMessage::Frame(frame_of(&f, 0, true, None))
        .encode()
        .as_bytes()
        .to_vec();
    for i in [32, 33, 38, 39, 55, 59, 88, 104] {
        m[HEADER_LEN + i] = 0xa5;
    }
    assert!(check_server_message(&m).expect("whole").is_ok());
    // A Hello's reserved u16 is checked.
    let mut hello = ClientMessage::Hello { max_leases: 1 }
        .encode()
        .as_bytes()
        .to_vec();
    hello[HEADER_LEN + 2] = 1;
    assert!(matches!(
        check_client_message(&hello),
        Some(Err(WireError::Field { .. }))
    ));
}

#[test]
fn split_streams_give_the_same_messages() {
    let inputs = receiver_inputs();
    for input in &inputs {
        let outcome = check_receiver(input).expect("an input");
        assert!(
            outcome.end == "Closed" || outcome.end.starts_with("TooManyFds"),
            "{outcome:?}"
        );
    }
    // One byte at a time, no fds: every message of the stream comes whole.
    let outcome = check_receiver(&inputs[0][..]).expect("an input");
    assert!(outcome.messages.len() >= 5, "{outcome:?}");
    seeds("receiver", &inputs);
}

#[test]
fn real_format_replies_fit_their_buffers() {
    let inputs = reply_inputs();
    for input in &inputs {
        let reply = format_reply_from_bytes(input);
        let r = check_format_reply(&reply);
        assert!(r.is_ok(), "{reply:?}: {r:?}");
    }
    seeds("format_reply", &inputs);
}

#[test]
fn tensor_cases_map_inside_their_files() {
    let inputs = tensor_inputs();
    let mut ok = 0;
    for input in &inputs {
        let case = tensor_case_from_bytes(input);
        ok += usize::from(check_tensor(&case).is_ok());
    }
    assert!(ok >= inputs.len() - 3, "{ok} of {}", inputs.len());
    seeds("tensor_from_fd", &inputs);
}

/// Streams of a real publisher: its Welcome, a frame in buffer 0 with the
/// buffer's fds (one file per memory plane, as long as the plane), the same
/// buffer again without, and a Goodbye; each message in one or two chunks.
fn subscriber_inputs() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for f in real_formats() {
        let wire = WireFormat::of(&f).expect("wire");
        let planes = f.planes.len() as u8;
        let specs = [55u8, 59 | (planes << 6), 59, 59, 59, 15];
        let mut v = vec![(specs.len() - 1) as u8];
        v.extend_from_slice(&specs);
        for i in 0..3 {
            v.push(0); // sealed against shrinking
            let len = f.planes.get(i).map_or(64, |p| p.size);
            v.extend_from_slice(&len.to_le_bytes());
        }
        let welcome = ServerMessage::Welcome {
            lease_ms: 500,
            max_leases: 2,
            buffers: 4,
            format: wire,
        };
        v.extend_from_slice(welcome.encode().as_bytes());
        v.extend_from_slice(
            ServerMessage::Frame(frame_of(&f, 0, true, None))
                .encode()
                .as_bytes(),
        );
        v.extend_from_slice(
            ServerMessage::Frame(frame_of(&f, 0, false, None))
                .encode()
                .as_bytes(),
        );
        v.extend_from_slice(
            ServerMessage::Goodbye(GoodbyeReason::Stopping)
                .encode()
                .as_bytes(),
        );
        out.push(v);
    }
    out
}

#[test]
fn a_real_publishers_stream_gives_its_frames() {
    let inputs = subscriber_inputs();
    for input in &inputs {
        let outcome = check_subscriber(input).expect("an input");
        assert_eq!(outcome.frames.len(), 2, "{outcome:?}");
        assert!(outcome.end.contains("the publisher stopped"), "{outcome:?}");
    }
    seeds("subscriber", &inputs);
}

/// A fuzz input, written as hex (whitespace ignored).
fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).expect("ascii"), 16).expect("hex"))
        .collect()
}

/// The subscriber target's first crash, a wrong invariant of the check, not
/// of the subscriber: a YUYV 16x8 frame whose span says 512 bytes of a
/// 262,138-byte memfd. `Tensor::from_peer_fd` maps only the span, so the
/// frame's buffer is a prefix of the file (the check wanted all of it).
#[test]
fn a_frame_maps_only_its_span_of_a_larger_file() {
    let input = hex(
        "05377b3b3b3b0f0200004000000000000000400000005a435348010001012c000000f401000002000400595559561000
         0000080000000101010000000000400000000002000000000000000000005a435348010002016c000000e80300000000
         0000000000000700000015cd5b0700000000000200000000000000000000020100005955595610000000080000000101
         010000000000400000000002000000000000000000000002000000000000000000000000000000000000000000000000
         0000000000005a43532e010002016c000000e803000000000000000000000700000015cd5b0700000000000200000000
         0000000000000200000059555956100000000000000000000000000000000000000000000000005a4353480000020100
         0059555956100000000800000001010100010003010400000001000000",
    );
    let outcome = check_subscriber(&input).expect("an input");
    assert_eq!(outcome.frames, [(16, 8, "YUYV")], "{outcome:?}");
}

/// Real capsules, as `__zerocam_tensor__` exports them: an NV12 image, a
/// batch of RGB images with padded rows, planar RGB with padded planes
/// (float32), a plain float64 array.
fn capsule_inputs() -> Vec<Vec<u8>> {
    use zerocam_tensor::capsule::{dl_dtype, MAX_DIMS};
    use zerocam_tensor::DType;
    let case = |dtype: DType,
                shape: &[i64],
                strides: &[i64],
                image: Option<(&str, u32, u32, u32)>,
                len: usize| {
        let mut desc = ZerocamTensorV1 {
            abi_version: 1,
            fd: -1,
            dtype: dl_dtype(dtype),
            ndim: shape.len() as u32,
            byte_offset: 0,
            shape: [0; MAX_DIMS],
            strides: [0; MAX_DIMS],
            format: [0; 16],
            width: 0,
            height: 0,
            row_stride: 0,
        };
        desc.shape[..shape.len()].copy_from_slice(shape);
        desc.strides[..strides.len()].copy_from_slice(strides);
        if let Some((name, w, h, stride)) = image {
            desc.format[..name.len()].copy_from_slice(name.as_bytes());
            (desc.width, desc.height, desc.row_stride) = (w, h, stride);
        }
        let file = FileCase {
            len,
            seal: Seal::Shrink,
        };
        capsule_case_bytes(&CapsuleCase { file, desc })
    };
    vec![
        // NV12 64x48: [72, 64] rows of 64 bytes (luma, then chroma).
        case(
            DType::U8,
            &[72, 64],
            &[64, 1],
            Some(("NV12", 64, 48, 64)),
            64 * 72,
        ),
        // 3 RGB 8x4 images, rows of 32 bytes.
        case(
            DType::U8,
            &[3, 4, 8, 3],
            &[128, 32, 3, 1],
            Some(("RGB", 8, 4, 32)),
            384,
        ),
        // PLANAR_RGB 4x2 float32, rows of 16 bytes, planes 64 apart.
        case(
            DType::F32,
            &[3, 2, 4],
            &[64, 16, 4],
            Some(("PLANAR_RGB", 4, 2, 16)),
            256,
        ),
        // A 5x6 float64 array.
        case(DType::F64, &[5, 6], &[48, 8], None, 240),
    ]
}

#[test]
fn real_capsules_import_inside_their_files() {
    let inputs = capsule_inputs();
    for input in &inputs {
        let case = capsule_case_from_bytes(input);
        assert_eq!(&capsule_case_bytes(&case), input);
        check_capsule(&case).expect("a real capsule imports");
    }
    seeds("capsule_import", &inputs);
}
