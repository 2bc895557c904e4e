use super::*;

fn nv12m() -> WireFormat {
    let layout = |bytes_per_line, size| crate::PlaneLayout {
        bytes_per_line,
        size,
    };
    WireFormat {
        fourcc: FourCc(*b"NM12"),
        width: 640,
        height: 480,
        color: ColorSpec::BT601_LIMITED,
        plane_count: 2,
        planes: [layout(640, 307_200), layout(640, 153_600)],
    }
}

fn frame() -> FrameMessage {
    FrameMessage {
        frame_id: 7,
        buffer: 3,
        sequence: 41,
        timestamp_ns: 123_456_789,
        bytes_used: 460_800,
        synthesized: Synthesized {
            sequence: false,
            timestamp: true,
            bytes_used: false,
        },
        format: nv12m(),
        chroma_offset: None,
        spans: [
            PlaneSpan {
                length: 307_200,
                offset: 0,
            },
            PlaneSpan {
                length: 155_648,
                offset: 16,
            },
        ],
        carries_fds: true,
    }
}

fn split(e: &Encoded) -> (u16, &[u8]) {
    let bytes = e.as_bytes();
    let mut h = [0; HEADER_LEN];
    h.copy_from_slice(&bytes[..HEADER_LEN]);
    let (kind, len) = decode_header(&h).unwrap();
    assert_eq!(len, bytes.len() - HEADER_LEN);
    (kind, &bytes[HEADER_LEN..])
}

#[test]
fn every_message_survives_its_bytes() {
    let f = frame();
    for m in [
        ServerMessage::Frame(f),
        ServerMessage::Frame(FrameMessage {
            chroma_offset: Some(40),
            carries_fds: false,
            format: WireFormat {
                fourcc: FourCc(*b"NV12"),
                plane_count: 1,
                ..nv12m()
            },
            ..f
        }),
        ServerMessage::Welcome {
            lease_ms: 500,
            max_leases: 2,
            buffers: 4,
            format: nv12m(),
        },
        ServerMessage::Goodbye(GoodbyeReason::SourceGone),
    ] {
        let e = m.encode();
        let (kind, body) = split(&e);
        assert_eq!(ServerMessage::decode(kind, body), Ok(m));
    }
    for m in [
        ClientMessage::Hello { max_leases: 3 },
        ClientMessage::Release { frame_id: u64::MAX },
    ] {
        let e = m.encode();
        let (kind, body) = split(&e);
        assert_eq!(ClientMessage::decode(kind, body), Ok(m));
    }
    let format = frame().format.stream_format().unwrap();
    assert_eq!(format.planes[1].size, 153_600, "the frame's format");
    assert_eq!(WireFormat::of(&format), Some(nv12m()));
}

#[test]
fn bad_headers_and_bodies_are_typed_errors() {
    let e = ClientMessage::Release { frame_id: 1 }.encode();
    let mut h = [0; HEADER_LEN];
    h.copy_from_slice(&e.as_bytes()[..HEADER_LEN]);
    let mut bad = h;
    bad[0] = b'X';
    assert!(matches!(
        decode_header(&bad),
        Err(WireError::BadMagic { .. })
    ));
    let mut bad = h;
    bad[4] = 9;
    assert_eq!(decode_header(&bad), Err(WireError::Version { found: 9 }));
    let mut bad = h;
    bad[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        decode_header(&bad),
        Err(WireError::TooLong { .. })
    ));
    let (kind, body) = split(&e);
    assert!(matches!(
        ClientMessage::decode(kind, &body[..4]),
        Err(WireError::Length {
            expected: 8,
            found: 4,
            ..
        })
    ));
    assert_eq!(
        ClientMessage::decode(0x102, body),
        Err(WireError::UnknownKind { kind: 0x102 }),
        "a client never sends a frame"
    );
    let f = ServerMessage::Frame(frame()).encode();
    let (kind, body) = split(&f);
    for (at, value, name) in [
        (36, 0xF0, "synthesized"),
        (37, 4, "flags"),
        (52, 9, "matrix"),
        (54, 3, "plane count"),
    ] {
        let mut b = body.to_vec();
        b[at] = value;
        assert!(
            matches!(ServerMessage::decode(kind, &b), Err(WireError::Field { field, .. }) if field == name),
            "{name}"
        );
    }
    let unknown = WireFormat {
        fourcc: FourCc(*b"ABCD"),
        ..nv12m()
    };
    assert!(matches!(
        unknown.stream_format(),
        Err(WireError::Field {
            field: "fourcc",
            ..
        })
    ));
    let one_plane_nv12m = WireFormat {
        plane_count: 1,
        ..nv12m()
    };
    assert!(one_plane_nv12m.stream_format().is_err());
}
