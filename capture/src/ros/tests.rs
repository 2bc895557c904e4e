#![allow(clippy::unwrap_used)]

use super::*;

fn header() -> Header<'static> {
    Header {
        stamp: Time { sec: 1, nanosec: 5 },
        frame_id: "cam",
    }
}

#[test]
fn compressed_image_is_laid_out_as_ros_2_lays_it_out() {
    let msg = CompressedImage {
        header: header(),
        format: "jpeg",
        data: &[1, 2, 3],
    };
    #[rustfmt::skip]
    let expected: &[u8] = &[
        0, 1, 0, 0, // little-endian plain CDR
        1, 0, 0, 0, 5, 0, 0, 0, // stamp
        4, 0, 0, 0, b'c', b'a', b'm', 0, // frame_id with its NUL
        5, 0, 0, 0, b'j', b'p', b'e', b'g', 0, // format
        0, 0, 0, // padding: the count is 4-aligned
        3, 0, 0, 0, 1, 2, 3, // data
    ];
    assert_eq!(msg.encode(), expected);
    assert_eq!(CompressedImage::decode(expected).unwrap(), msg);
}

#[test]
fn every_message_round_trips() {
    let jpeg = [0xffu8, 0xd8, 7, 0xff, 0xd9];
    let img = CompressedImage {
        header: header(),
        format: "jpeg",
        data: &jpeg,
    };
    assert_eq!(CompressedImage::decode(&img.encode()).unwrap(), img);
    let video = CompressedVideo {
        timestamp: Time { sec: 9, nanosec: 1 },
        frame_id: "camera_optical",
        data: &jpeg,
        format: "h264",
    };
    assert_eq!(CompressedVideo::decode(&video.encode()).unwrap(), video);
    let raw = Image {
        header: header(),
        height: 2,
        width: 3,
        encoding: "rgb8",
        is_bigendian: false,
        step: 9,
        data: &[9; 18],
    };
    assert_eq!(Image::decode(&raw.encode()).unwrap(), raw);
    let mut info = CameraInfo::uncalibrated(header(), 1280, 720);
    info.distortion_model = "plumb_bob";
    info.d = vec![0.1, -0.2, 0.0, 0.0, 0.05];
    info.k[0] = 900.0;
    info.roi.do_rectify = true;
    let bytes = info.encode();
    // The `d` values start 8-aligned after the model's 10-byte string.
    assert_eq!(CameraInfo::decode(&bytes).unwrap(), info);
}

#[test]
fn every_truncation_is_a_typed_error() {
    let info = CameraInfo::uncalibrated(header(), 640, 480).encode();
    for n in 0..info.len() {
        let e = CameraInfo::decode(&info[..n]).unwrap_err();
        assert!(
            matches!(e, CdrError::Truncated { .. } | CdrError::Header { .. }),
            "{n}: {e}"
        );
    }
    let img = CompressedImage {
        header: header(),
        format: "jpeg",
        data: &[0; 100],
    }
    .encode();
    for n in 0..img.len() {
        assert!(CompressedImage::decode(&img[..n]).is_err(), "{n}");
    }
}

#[test]
fn hostile_lengths_are_refused_before_any_allocation() {
    let mut buf = Vec::new();
    let mut w = cdr::CdrWriter::new(&mut buf);
    w.i32(0);
    w.u32(0);
    w.u32(u32::MAX); // frame_id "length"
    let e = CompressedImage::decode(&buf).unwrap_err();
    assert_eq!(
        e,
        CdrError::TooLong {
            field: "header.frame_id",
            len: u32::MAX as usize,
            max: cdr::MAX_STRING
        }
    );
    // A data count past the end.
    let mut bytes = CompressedImage {
        header: header(),
        format: "jpeg",
        data: &[1, 2, 3],
    }
    .encode();
    let at = bytes.len() - 7;
    bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = CompressedImage::decode(&bytes).unwrap_err();
    assert!(
        matches!(e, CdrError::Truncated { field: "data", .. }),
        "{e}"
    );
    // A distortion vector of a billion values.
    let mut info = CameraInfo::uncalibrated(header(), 4, 4).encode();
    let d = 4 + 8 + 8 + 4 + 4 + 4 + 4; // header, stamp, frame_id, size, model ""
    assert_eq!(&info[d..d + 4], &[0; 4], "d's count");
    info[d..d + 4].copy_from_slice(&1_000_000_000u32.to_le_bytes());
    let e = CameraInfo::decode(&info).unwrap_err();
    assert!(matches!(e, CdrError::TooLong { field: "d", .. }), "{e}");
}

#[test]
fn bad_strings_headers_and_trailing_bytes_are_named() {
    let good = CompressedImage {
        header: header(),
        format: "jpeg",
        data: &[],
    }
    .encode();
    let mut no_nul = good.clone();
    no_nul[19] = b'x'; // frame_id's NUL (after the 4-byte header)
    assert_eq!(
        CompressedImage::decode(&no_nul).unwrap_err(),
        CdrError::NoNul {
            field: "header.frame_id"
        }
    );
    let mut not_utf8 = good.clone();
    not_utf8[16] = 0xff;
    assert_eq!(
        CompressedImage::decode(&not_utf8).unwrap_err(),
        CdrError::NotUtf8 {
            field: "header.frame_id"
        }
    );
    let mut big_endian = good.clone();
    big_endian[1] = 0;
    assert!(matches!(
        CompressedImage::decode(&big_endian).unwrap_err(),
        CdrError::Header { .. }
    ));
    let mut trailing = good.clone();
    trailing.extend_from_slice(&[0; 8]);
    assert!(matches!(
        CompressedImage::decode(&trailing).unwrap_err(),
        CdrError::Trailing { extra: 8, .. }
    ));
    let mut padded = good;
    padded.extend_from_slice(&[0; 3]); // what some RMWs append
    assert!(CompressedImage::decode(&padded).is_ok());
}

#[test]
fn stamps_convert_both_ways_and_refuse_nonsense() {
    let d = std::time::Duration::new(1_700_000_000, 123);
    assert_eq!(Time::from_duration(d).to_duration(), Some(d));
    assert_eq!(
        Time {
            sec: -1,
            nanosec: 0
        }
        .to_duration(),
        None
    );
    assert_eq!(
        Time {
            sec: 1,
            nanosec: 1_000_000_000
        }
        .to_duration(),
        None
    );
}
