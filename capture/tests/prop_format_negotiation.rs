//! Property tests of V4L2 format negotiation against a fake driver whose
//! `VIDIOC_S_FMT` / `G_FMT` replies are random: honest (aligned strides,
//! padded sizes), honest with one field made hostile, or hostile throughout
//! (zero, huge and overflow-prone sizes, `bytesperline` inconsistent with the
//! width, `sizeimage` too small, wrong plane counts and fields, another
//! fourcc than asked).
//!
//! Each reply either becomes a typed `CaptureError` naming the device and the
//! driver's values, or a `StreamFormat` whose every plane fits its buffer —
//! checked here in `u128` arithmetic, by a model written independently of the
//! code under test, and by laying the image on a buffer of `sizeimage` bytes
//! with the tensor crate. The model also says which replies are usable: the
//! decision must agree with it both ways (nothing usable refused).
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

use std::path::Path;

use proptest::prelude::*;
use zerocam_capture::v4l2::FormatReply;
use zerocam_capture::{
    CaptureError, CaptureFormat, Colorimetry, FourCc, PlaneLayout, StreamFormat, CAPTURE_FORMATS,
};
use zerocam_tensor::{ImageLayout, PixelFormat, Tensor, TensorMemory};

const PATH: &str = "/dev/fake-video";
const MAX_PLANES: usize = 8;
/// A plane entry past `num_planes`, as drivers leave it.
const UNUSED_PLANE: PlaneLayout = PlaneLayout {
    bytes_per_line: 0,
    size: 0,
};

/// Bytes per pixel in the first image plane, rows of each image plane, and
/// the subsampling the width and height must respect — the model, from the
/// V4L2 pixel format definitions.
struct Model {
    bytes_per_pixel: u128,
    /// `(numerator, denominator)` of the chroma plane's rows per luma row; None
    /// for packed formats.
    chroma_rows: Option<(u128, u128)>,
    subsampling: (u32, u32),
}

fn model(f: CaptureFormat) -> Model {
    // (bytes_per_pixel, chroma_rows, subsampling)
    let (bytes_per_pixel, chroma_rows, subsampling) = match f.name {
        "NV12" | "NV12M" => (1, Some((1, 2)), (2, 2)),
        "NV16" | "NV16M" => (1, Some((1, 1)), (2, 1)),
        "YUYV" | "UYVY" => (2, None, (2, 1)),
        "RGB24" | "BGR24" => (3, None, (1, 1)),
        "GREY" => (1, None, (1, 1)),
        other => panic!("no model for {other}"),
    };
    Model {
        bytes_per_pixel,
        chroma_rows,
        subsampling,
    }
}

/// `(offset, stride, rows, row bytes)` of every image plane in memory plane
/// `i`, for a stride `bpl`.
fn image_planes(
    f: CaptureFormat,
    w: u128,
    h: u128,
    i: usize,
    bpl: u128,
) -> Vec<(u128, u128, u128, u128)> {
    let m = model(f);
    let luma = (0, bpl, h, w * m.bytes_per_pixel);
    let chroma = |offset| {
        let (n, d) = m.chroma_rows.unwrap();
        (offset, bpl, h * n / d, w)
    };
    match (f.memory_planes, m.chroma_rows, i) {
        (1, None, _) => vec![luma],
        (1, Some(_), _) => vec![luma, chroma(bpl * h)],
        (_, _, 0) => vec![luma],
        _ => vec![chroma(0)],
    }
}

/// Whether a reply is usable for the model: known format, a whole-frame
/// field (any, none, interlaced), the format's plane count, a non-empty size
/// the subsampling divides, and every memory plane's rows (a 0 `bytesperline` meaning packed rows,
/// which must fit `bytesperline`'s 32 bits) inside `sizeimage`.
fn usable(r: &FormatReply) -> bool {
    let Some(f) = CaptureFormat::from_fourcc(r.fourcc) else {
        return false;
    };
    let m = model(f);
    let (w, h) = (u128::from(r.width), u128::from(r.height));
    let planes = usize::from(r.num_planes);
    [0, 1, 4, 8, 9].contains(&r.field)
        && planes == f.memory_planes
        && planes <= r.planes.len()
        && w > 0
        && h > 0
        && r.width.is_multiple_of(m.subsampling.0)
        && r.height.is_multiple_of(m.subsampling.1)
        && r.planes[..planes].iter().enumerate().all(|(i, p)| {
            let packed = image_planes(f, w, h, i, 0)[0].3;
            let bpl = match p.bytes_per_line {
                0 => packed,
                b => u128::from(b),
            };
            bpl <= u128::from(u32::MAX)
                && image_planes(f, w, h, i, bpl)
                    .iter()
                    .all(|&(offset, stride, rows, row)| {
                        stride >= row && offset + stride * rows <= u128::from(p.size)
                    })
        })
}

/// The fake driver: how it answers `VIDIOC_S_FMT` for `asked`.
#[derive(Debug, Clone)]
enum Driver {
    /// Aligns rows to `1 << align` bytes and pads the size by `extra`; with a
    /// mutation, one field is then replaced.
    Honest {
        align: u32,
        extra: u32,
        mutation: Option<Mutation>,
    },
    /// Whatever it likes.
    Hostile(FormatReply),
}

#[derive(Debug, Clone)]
enum Mutation {
    Fourcc(u32),
    Width(u32),
    Height(u32),
    Field(u32),
    NumPlanes(u8),
    BytesPerLine(usize, u32),
    SizeImage(usize, u32),
    /// `bytesperline` a little short (or not).
    ShrinkStride(usize, u32),
    /// `sizeimage` a little short (or not): the boundary.
    ShrinkSize(usize, u32),
}

impl Driver {
    fn s_fmt(&self, asked: CaptureFormat, w: u32, h: u32) -> FormatReply {
        let (align, extra, mutation) = match self {
            Driver::Honest {
                align,
                extra,
                mutation,
            } => (*align, *extra, mutation.clone()),
            Driver::Hostile(r) => return r.clone(),
        };
        let mut planes = vec![UNUSED_PLANE; MAX_PLANES];
        for (i, p) in planes.iter_mut().take(asked.memory_planes).enumerate() {
            let packed = image_planes(asked, w.into(), h.into(), i, 0)[0].3;
            let a = 1u128 << align;
            let bpl = packed.div_ceil(a) * a;
            let need: u128 = image_planes(asked, w.into(), h.into(), i, bpl)
                .iter()
                .map(|&(_, stride, rows, _)| stride * rows)
                .sum();
            *p = PlaneLayout {
                bytes_per_line: u32::try_from(bpl).unwrap_or(u32::MAX),
                size: u32::try_from(need + u128::from(extra)).unwrap_or(u32::MAX),
            };
        }
        let mut r = FormatReply {
            fourcc: asked.fourcc,
            width: w,
            height: h,
            field: 1,
            num_planes: asked.memory_planes as u8,
            planes,
            colorimetry: Colorimetry {
                colorspace: 3, // REC709
                ycbcr_enc: 0,
                quantization: 0,
            },
        };
        match mutation {
            None => {}
            Some(Mutation::Fourcc(v)) => r.fourcc = FourCc::from_u32(v),
            Some(Mutation::Width(v)) => r.width = v,
            Some(Mutation::Height(v)) => r.height = v,
            Some(Mutation::Field(v)) => r.field = v,
            Some(Mutation::NumPlanes(v)) => r.num_planes = v,
            Some(Mutation::BytesPerLine(i, v)) => r.planes[i].bytes_per_line = v,
            Some(Mutation::SizeImage(i, v)) => r.planes[i].size = v,
            Some(Mutation::ShrinkStride(i, k)) => {
                r.planes[i].bytes_per_line = r.planes[i].bytes_per_line.saturating_sub(k);
            }
            Some(Mutation::ShrinkSize(i, k)) => {
                r.planes[i].size = r.planes[i].size.saturating_sub(k);
            }
        }
        r
    }
}

/// Sizes a driver might write: small, odd, page-ish, huge, near overflow.
fn size_value() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(2),
        Just(u32::MAX),
        Just(u32::MAX - 1),
        Just(u32::MAX / 2 + 1),
        Just(1 << 16),
        Just(4096),
        1u32..4096,
        any::<u32>(),
    ]
}

fn fourcc_value() -> impl Strategy<Value = u32> {
    prop_oneof![
        (0..CAPTURE_FORMATS.len()).prop_map(|i| CAPTURE_FORMATS[i].fourcc.to_u32()),
        Just(u32::from_le_bytes(*b"MJPG")),
        any::<u32>(),
    ]
}

fn field_value() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..12, any::<u32>()]
}

fn plane_value() -> impl Strategy<Value = PlaneLayout> {
    (size_value(), size_value()).prop_map(|(bytes_per_line, size)| PlaneLayout {
        bytes_per_line,
        size,
    })
}

/// Colour fields: the defined values (0..=12, 0..=8, 0..=2) and beyond, or anything.
fn colorimetry_value() -> impl Strategy<Value = Colorimetry> {
    let field = |defined: u32| prop_oneof![0..defined + 2, any::<u32>()];
    (field(12), field(8), field(2)).prop_map(|(colorspace, ycbcr_enc, quantization)| Colorimetry {
        colorspace,
        ycbcr_enc,
        quantization,
    })
}

fn hostile_reply() -> impl Strategy<Value = FormatReply> {
    (
        fourcc_value(),
        size_value(),
        size_value(),
        field_value(),
        any::<u8>(),
        prop_oneof![Just(1usize), Just(MAX_PLANES)],
        prop::collection::vec(plane_value(), MAX_PLANES),
        colorimetry_value(),
    )
        .prop_map(
            |(fourcc, width, height, field, num_planes, entries, mut planes, colorimetry)| {
                planes.truncate(entries);
                FormatReply {
                    fourcc: FourCc::from_u32(fourcc),
                    width,
                    height,
                    field,
                    num_planes: if entries == 1 { 1 } else { num_planes },
                    planes,
                    colorimetry,
                }
            },
        )
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        fourcc_value().prop_map(Mutation::Fourcc),
        size_value().prop_map(Mutation::Width),
        size_value().prop_map(Mutation::Height),
        field_value().prop_map(Mutation::Field),
        any::<u8>().prop_map(Mutation::NumPlanes),
        (0..MAX_PLANES, size_value()).prop_map(|(i, v)| Mutation::BytesPerLine(i, v)),
        (0..MAX_PLANES, size_value()).prop_map(|(i, v)| Mutation::SizeImage(i, v)),
        (0..2usize, 0u32..8).prop_map(|(i, k)| Mutation::ShrinkStride(i, k)),
        (0..2usize, 0u32..256).prop_map(|(i, k)| Mutation::ShrinkSize(i, k)),
    ]
}

/// Bytes an honest driver adds to `sizeimage`: none or a few, often.
fn extra() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), 0u32..16, 0u32..8192]
}

fn driver() -> impl Strategy<Value = Driver> {
    prop_oneof![
        // Honest, mutated and hostile a third of the time each.
        2 => (0u32..8, extra(), prop::option::of(mutation())).prop_map(
            |(align, extra, mutation)| Driver::Honest {
                align,
                extra,
                mutation,
            }
        ),
        1 => hostile_reply().prop_map(Driver::Hostile),
    ]
}

/// A request as the CLI makes it: a zerocam format at a plausible size.
fn request() -> impl Strategy<Value = (CaptureFormat, u32, u32)> {
    (0..CAPTURE_FORMATS.len(), 1u32..=960, 1u32..=540)
        .prop_map(|(i, w, h)| (CAPTURE_FORMATS[i], w * 2, h * 2))
}

/// Every plane of `f` fits its `sizeimage` (model arithmetic in u128), the
/// strides are the reply's (0: packed), and the tensor crate lays the image
/// on a buffer of `sizeimage` bytes.
fn check_fits(f: &StreamFormat, reply: &FormatReply) {
    let (w, h) = (u128::from(f.width), u128::from(f.height));
    assert_eq!(f.planes.len(), f.format.memory_planes);
    assert_eq!(
        (f.format.fourcc, f.width, f.height),
        (reply.fourcc, reply.width, reply.height)
    );
    assert_eq!(f.color, reply.colorimetry.color_spec(f.format.pixel));
    for (i, p) in f.planes.iter().enumerate() {
        let r = reply.planes[i];
        assert_eq!(p.size, r.size, "plane {i}: sizeimage kept");
        if r.bytes_per_line != 0 {
            assert_eq!(p.bytes_per_line, r.bytes_per_line, "plane {i}: stride kept");
        }
        for (offset, stride, rows, row) in
            image_planes(f.format, w, h, i, u128::from(p.bytes_per_line))
        {
            assert!(stride >= row, "plane {i}: stride {stride} < row {row}");
            assert!(
                offset + stride * rows <= u128::from(p.size),
                "plane {i}: {offset} + {stride} x {rows} > sizeimage {}",
                p.size
            );
        }
        if p.size <= 1 << 20 {
            let (width, height) = (f.width as usize, f.height as usize);
            let layout = if f.format.memory_planes == 1 {
                ImageLayout::new(width, height, f.format.pixel)
            } else {
                let rows = f.format.pixel.plane_rows(i, height);
                ImageLayout::new(width, rows, PixelFormat::Grey)
            };
            let buffer =
                Tensor::<u8>::new(&[p.size as usize], Some(TensorMemory::Mem), None).unwrap();
            buffer
                .with_image(layout.with_row_stride(p.bytes_per_line as usize))
                .unwrap();
        }
    }
}

/// The error is one of the negotiation's, names the device, and names the
/// driver's values.
fn check_error(e: &CaptureError, reply: &FormatReply) {
    let msg = e.to_string();
    assert!(msg.starts_with(PATH), "{msg}");
    match e {
        CaptureError::UnsupportedFormat { .. } => {}
        CaptureError::UnsupportedSize {
            got_width,
            got_height,
            ..
        } => {
            assert_eq!((*got_width, *got_height), (reply.width, reply.height));
            assert!(msg.contains(&format!("{got_width}x{got_height}")), "{msg}");
        }
        CaptureError::BadFormat {
            fourcc,
            width,
            height,
            ..
        } => {
            assert_eq!(
                (*fourcc, *width, *height),
                (reply.fourcc, reply.width, reply.height)
            );
            assert!(
                msg.contains(&format!(
                    "{} {}x{}",
                    reply.fourcc, reply.width, reply.height
                )),
                "{msg}"
            );
        }
        other => panic!("not a negotiation error: {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// `VIDIOC_S_FMT`: the driver answers a request.
    #[test]
    fn s_fmt_replies_become_fitting_formats_or_typed_errors(
        (format, w, h) in request(),
        driver in driver(),
    ) {
        let reply = driver.s_fmt(format, w, h);
        let got = reply.stream_format_for(Path::new(PATH), format, w, h);
        match &got {
            Ok(f) => {
                check_fits(f, &reply);
                prop_assert_eq!((f.format, f.width, f.height), (format, w, h));
            }
            Err(e) => check_error(e, &reply),
        }
        let wanted = usable(&reply) && (reply.fourcc, reply.width, reply.height) == (format.fourcc, w, h);
        prop_assert_eq!(got.is_ok(), wanted, "{:?} for {:?}", got, reply);
        if matches!(driver, Driver::Honest { mutation: None, .. }) {
            prop_assert!(got.is_ok(), "an honest driver's reply is taken: {:?}", reply);
        }
    }

    /// `VIDIOC_G_FMT`: whatever the driver says the current format is.
    #[test]
    fn g_fmt_replies_become_fitting_formats_or_typed_errors(reply in hostile_reply()) {
        let got = reply.stream_format(Path::new(PATH));
        match &got {
            Ok(f) => check_fits(f, &reply),
            Err(e) => check_error(e, &reply),
        }
        prop_assert_eq!(got.is_ok(), usable(&reply), "{:?} for {:?}", got, reply);
    }
}
