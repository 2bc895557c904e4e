//! Unit tests of the JPEG encoder: strides, odd sizes, every format, the
//! colour transform, bad input as typed errors.

use zerocam_tensor::{ColorSpec, ImageLayout, PixelFormat, Tensor, TensorMemory};

use super::color::reference;
use super::{
    check_quality, decode_rgb, encode_tensor, psnr, Chroma, JpegEncoder, JpegError, Upsampling,
    YuvPlanes,
};

/// A smooth test picture with colour in it: RGB of pixel (x, y).
fn rgb_at(x: usize, y: usize, w: usize, h: usize) -> [u8; 3] {
    let r = (x * 255 / w.max(1)) as u8;
    let g = (y * 255 / h.max(1)) as u8;
    let b = (((x + y) * 127) / (w + h).max(1) + 64) as u8;
    [r, g, b]
}

/// RGB → Y, Cb, Cr of `spec` (the inverse of `ColorSpec::to_rgb`).
fn ycbcr(spec: ColorSpec, [r, g, b]: [u8; 3]) -> [u8; 3] {
    let (kr, kb) = match spec.matrix {
        zerocam_tensor::Matrix::Bt601 => (0.299, 0.114),
        zerocam_tensor::Matrix::Bt709 => (0.2126, 0.0722),
    };
    let (r, g, b) = (
        f32::from(r) / 255.0,
        f32::from(g) / 255.0,
        f32::from(b) / 255.0,
    );
    let y = kr * r + (1.0 - kr - kb) * g + kb * b;
    let (cb, cr) = ((b - y) / (2.0 * (1.0 - kb)), (r - y) / (2.0 * (1.0 - kr)));
    let (ys, yo, cs) = match spec.range {
        zerocam_tensor::Range::Limited => (219.0, 16.0, 224.0),
        zerocam_tensor::Range::Full => (255.0, 0.0, 255.0),
    };
    [y * ys + yo, cb * cs + 128.0, cr * cs + 128.0].map(|v| v.round().clamp(0.0, 255.0) as u8)
}

/// The `w`x`h` picture as NV12 (or NV16) of `spec`, rows `stride` apart.
fn semi_planar(
    format: PixelFormat,
    w: usize,
    h: usize,
    stride: usize,
    spec: ColorSpec,
) -> Tensor<u8> {
    let layout = ImageLayout::new(w, h, format).with_row_stride(stride);
    let t = Tensor::<u8>::builder_image(layout)
        .build()
        .expect("an image");
    let vsub = if format == PixelFormat::Nv12 { 2 } else { 1 };
    {
        let mut m = t.plane(0).expect("luma").map_write().expect("map");
        for y in 0..h {
            for x in 0..w {
                m[y * stride + x] = ycbcr(spec, rgb_at(x, y, w, h))[0];
            }
        }
    }
    let mut m = t.plane(1).expect("chroma").map_write().expect("map");
    for cy in 0..h / vsub {
        for cx in 0..w / 2 {
            let [_, cb, cr] = ycbcr(spec, rgb_at(cx * 2, cy * vsub, w, h));
            m[cy * stride + 2 * cx] = cb;
            m[cy * stride + 2 * cx + 1] = cr;
        }
    }
    drop(m);
    t
}

/// Decodes `jpeg` to packed RGB: (width, height, pixels).
fn decode(jpeg: &[u8]) -> (usize, usize, Vec<u8>) {
    let img = decode_rgb(jpeg, Upsampling::Smooth).expect("a JPEG that decodes");
    (img.width, img.height, img.pixels)
}

/// PSNR of the decoded `jpeg` against the test picture, in dB.
fn psnr_vs_picture(jpeg: &[u8], w: usize, h: usize) -> f64 {
    let (dw, dh, rgb) = decode(jpeg);
    assert_eq!((dw, dh), (w, h));
    let want: Vec<u8> = (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| rgb_at(x, y, w, h)))
        .collect();
    psnr(&rgb, &want).expect("same sizes")
}

#[test]
fn nv12_with_padded_rows_encodes_the_same_picture_as_packed_rows() {
    let spec = ColorSpec::BT601_LIMITED;
    let packed = semi_planar(PixelFormat::Nv12, 64, 48, 64, spec);
    let padded = semi_planar(PixelFormat::Nv12, 64, 48, 96, spec);
    let a = encode_tensor(&packed, Some(spec), 90).expect("jpeg");
    let b = encode_tensor(&padded, Some(spec), 90).expect("jpeg");
    assert_eq!(a, b, "the padding is not part of the picture");
    let p = psnr_vs_picture(&a, 64, 48);
    assert!(p >= 30.0, "PSNR {p:.1} dB");
}

#[test]
fn every_colour_spec_decodes_to_the_same_picture() {
    for spec in [
        ColorSpec::BT601_LIMITED,
        ColorSpec::BT601_FULL,
        ColorSpec::BT709_LIMITED,
        ColorSpec::BT709_FULL,
    ] {
        let t = semi_planar(PixelFormat::Nv12, 64, 32, 64, spec);
        let jpeg = encode_tensor(&t, Some(spec), 95).expect("jpeg");
        let p = psnr_vs_picture(&jpeg, 64, 32);
        assert!(p >= 32.0, "{spec}: PSNR {p:.1} dB");
    }
    // Read with the wrong spec, the picture is another one.
    let t = semi_planar(PixelFormat::Nv12, 64, 32, 64, ColorSpec::BT601_LIMITED);
    let wrong = encode_tensor(&t, Some(ColorSpec::BT601_FULL), 95).expect("jpeg");
    assert!(psnr_vs_picture(&wrong, 64, 32) < 30.0);
}

#[test]
fn nv16_and_yuyv_are_4_2_2() {
    let spec = ColorSpec::BT601_LIMITED;
    let (w, h) = (32, 15);
    let nv16 = semi_planar(PixelFormat::Nv16, w, h, 48, spec);
    let jpeg = encode_tensor(&nv16, Some(spec), 90).expect("jpeg");
    let header = turbojpeg::read_header(&jpeg).expect("header");
    assert_eq!(header.subsamp, turbojpeg::Subsamp::Sub2x1);
    assert!(psnr_vs_picture(&jpeg, w, h) >= 30.0);
    for (format, order) in [
        (PixelFormat::Yuyv, [0, 1, 2, 3]),
        (PixelFormat::Uyvy, [1, 0, 3, 2]),
    ] {
        let stride = 2 * w + 16;
        let layout = ImageLayout::new(w, h, format).with_row_stride(stride);
        let t = Tensor::<u8>::builder_image(layout).build().expect("image");
        {
            let mut m = t.map_write().expect("map");
            for y in 0..h {
                for x in (0..w).step_by(2) {
                    let [y0, cb, cr] = ycbcr(spec, rgb_at(x, y, w, h));
                    let y1 = ycbcr(spec, rgb_at(x + 1, y, w, h))[0];
                    let g = y * stride + 2 * x;
                    for (o, v) in order.iter().zip([y0, cb, y1, cr]) {
                        m[g + o] = v;
                    }
                }
            }
        }
        let jpeg = encode_tensor(&t, Some(spec), 90).expect("jpeg");
        let p = psnr_vs_picture(&jpeg, w, h);
        assert!(p >= 30.0, "{format}: PSNR {p:.1} dB");
    }
}

/// `w`x`h` I420 planes of the picture, rows `pad` bytes longer than needed.
fn i420(w: usize, h: usize, pad: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>, [usize; 3]) {
    let spec = ColorSpec::BT601_LIMITED;
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let strides = [w + pad, cw + pad, cw + pad];
    // Exactly as long as the rows need: no byte past the last row.
    let mut y = vec![0; (h - 1) * strides[0] + w];
    let mut cb = vec![0; (ch - 1) * strides[1] + cw];
    let mut cr = cb.clone();
    for r in 0..h {
        for x in 0..w {
            y[r * strides[0] + x] = ycbcr(spec, rgb_at(x, r, w, h))[0];
        }
    }
    for r in 0..ch {
        for x in 0..cw {
            let [_, b, c] = ycbcr(spec, rgb_at(2 * x, 2 * r, w, h));
            cb[r * strides[1] + x] = b;
            cr[r * strides[2] + x] = c;
        }
    }
    (y, cb, cr, strides)
}

#[test]
fn odd_sizes_keep_their_size_and_picture() {
    let mut enc = JpegEncoder::new(90).expect("encoder");
    for (w, h) in [(33, 17), (1, 1), (2, 3), (35, 20), (64, 9)] {
        for pad in [0, 5] {
            let (y, cb, cr, s) = i420(w, h, pad);
            let planes = YuvPlanes {
                y: &y,
                y_stride: s[0],
                cb: &cb,
                cb_stride: s[1],
                cr: &cr,
                cr_stride: s[2],
                width: w,
                height: h,
                chroma: Chroma::Yuv420,
            };
            let jpeg = enc
                .encode_planes(&planes, ColorSpec::BT601_LIMITED)
                .expect("jpeg")
                .to_vec();
            let (dw, dh, _) = decode(&jpeg);
            assert_eq!((dw, dh), (w, h));
            if w > 8 && h > 8 {
                let p = psnr_vs_picture(&jpeg, w, h);
                assert!(p >= 28.0, "{w}x{h} pad {pad}: PSNR {p:.1} dB");
            }
        }
    }
}

#[test]
fn odd_sized_full_range_luma_is_copied_not_read_past_its_end() {
    // BT.601 full range would compress the luma in place; an odd height
    // needs a row the plane does not have, so it is copied and padded.
    let (y, cb, cr, s) = i420(31, 17, 0);
    let planes = YuvPlanes {
        y: &y,
        y_stride: s[0],
        cb: &cb,
        cb_stride: s[1],
        cr: &cr,
        cr_stride: s[2],
        width: 31,
        height: 17,
        chroma: Chroma::Yuv420,
    };
    let mut enc = JpegEncoder::new(80).expect("encoder");
    let jpeg = enc
        .encode_planes(&planes, ColorSpec::BT601_FULL)
        .expect("jpeg");
    assert_eq!(decode(jpeg).0, 31);
}

#[test]
fn rgb_bgr_and_grey_go_through_the_ordinary_compression() {
    let (w, h) = (40, 24);
    let mut rgb = Vec::new();
    for y in 0..h {
        for x in 0..w {
            rgb.extend(rgb_at(x, y, w, h));
        }
    }
    for format in [PixelFormat::Rgb, PixelFormat::Bgr, PixelFormat::Grey] {
        let t = Tensor::<u8>::image(w, h, format, Some(TensorMemory::Mem)).expect("image");
        {
            let mut m = t.map_write().expect("map");
            for (i, px) in rgb.chunks(3).enumerate() {
                match format {
                    PixelFormat::Rgb => m[i * 3..i * 3 + 3].copy_from_slice(px),
                    PixelFormat::Bgr => m[i * 3..i * 3 + 3].copy_from_slice(&[px[2], px[1], px[0]]),
                    _ => m[i] = px[1],
                }
            }
        }
        let jpeg = encode_tensor(&t, None, 90).expect("jpeg");
        let (dw, dh, out) = decode(&jpeg);
        assert_eq!((dw, dh), (w, h));
        if format != PixelFormat::Grey {
            assert!(psnr(&out, &rgb).expect("same sizes") >= 30.0, "{format}");
        }
    }
}

#[test]
fn repeated_frames_reuse_the_encoders_buffers() {
    let spec = ColorSpec::BT601_LIMITED;
    let t = semi_planar(PixelFormat::Nv12, 64, 48, 80, spec);
    let mut enc = JpegEncoder::new(85).expect("encoder");
    let first = enc.encode_tensor(&t, spec).expect("jpeg").to_vec();
    let at = enc.encode_tensor(&t, spec).expect("jpeg").as_ptr();
    let again = enc.encode_tensor(&t, spec).expect("jpeg");
    assert_eq!(again, &first[..]);
    assert_eq!(again.as_ptr(), at, "the same output buffer");
}

#[test]
fn bad_quality_is_a_typed_error() {
    for q in [0, 101, 255] {
        let e = JpegEncoder::new(q).expect_err("out of range");
        assert!(matches!(e, JpegError::Quality { quality } if quality == i64::from(q)));
        assert!(e.to_string().contains(&q.to_string()), "{e}");
    }
    let mut enc = JpegEncoder::new(50).expect("encoder");
    assert!(matches!(
        enc.set_quality(0),
        Err(JpegError::Quality { quality: 0 })
    ));
    assert_eq!(enc.quality(), 50, "unchanged by a refusal");
    enc.set_quality(90).expect("in range");
    assert_eq!(enc.quality(), 90);
    assert!(matches!(
        check_quality(-3),
        Err(JpegError::Quality { quality: -3 })
    ));
    assert_eq!(check_quality(100).ok(), Some(100));
    assert_eq!(check_quality(1).ok(), Some(1));
}

#[test]
fn an_unsupported_format_is_named() {
    let t =
        Tensor::<u8>::image(8, 8, PixelFormat::PlanarRgb, Some(TensorMemory::Mem)).expect("image");
    let e = encode_tensor(&t, None, 85).expect_err("planar RGB");
    assert!(matches!(
        e,
        JpegError::Format {
            format: PixelFormat::PlanarRgb
        }
    ));
    assert!(
        e.to_string().contains("PlanarRgb")
            || e.to_string().contains(PixelFormat::PlanarRgb.name())
    );
    let array = Tensor::<u8>::new(&[4, 4], Some(TensorMemory::Mem), None).expect("array");
    assert!(matches!(
        encode_tensor(&array, None, 85),
        Err(JpegError::NotImage { .. })
    ));
}

#[test]
fn short_planes_and_bad_sizes_are_errors_not_panics() {
    let y = vec![0u8; 16 * 16];
    let c = vec![128u8; 8 * 8];
    let planes = |y: &'static [u8], w, h| YuvPlanes {
        y,
        y_stride: 16,
        cb: &[],
        cb_stride: 8,
        cr: &[],
        cr_stride: 8,
        width: w,
        height: h,
        chroma: Chroma::Yuv420,
    };
    let mut enc = JpegEncoder::new(85).expect("encoder");
    let y: &'static [u8] = Box::leak(y.into_boxed_slice());
    let c: &'static [u8] = Box::leak(c.into_boxed_slice());
    let short = YuvPlanes {
        cb: c,
        cr: &c[..10],
        ..planes(y, 16, 16)
    };
    let e = enc
        .encode_planes(&short, ColorSpec::default())
        .expect_err("short Cr");
    assert!(
        matches!(
            e,
            JpegError::Plane {
                plane: "Cr",
                len: 10,
                ..
            }
        ),
        "{e}"
    );
    let tall = YuvPlanes {
        cb: c,
        cr: c,
        ..planes(y, 16, 17)
    };
    assert!(matches!(
        enc.encode_planes(&tall, ColorSpec::default()),
        Err(JpegError::Plane { plane: "Y", .. })
    ));
    let empty = YuvPlanes {
        cb: c,
        cr: c,
        ..planes(y, 0, 16)
    };
    assert!(matches!(
        enc.encode_planes(&empty, ColorSpec::default()),
        Err(JpegError::Size { width: 0, .. })
    ));
    let huge = YuvPlanes {
        cb: c,
        cr: c,
        ..planes(y, 70_000, 1)
    };
    assert!(matches!(
        enc.encode_planes(&huge, ColorSpec::default()),
        Err(JpegError::Size { width: 70_000, .. })
    ));
    // The encoder still works after refusing.
    let ok = YuvPlanes {
        cb: c,
        cr: c,
        ..planes(y, 16, 16)
    };
    assert!(enc.encode_planes(&ok, ColorSpec::default()).is_ok());
}

#[test]
fn psnr_of_unequal_lengths_is_none() {
    assert_eq!(psnr(&[1, 2], &[1]), None);
    assert_eq!(psnr(&[], &[]), None);
    assert_eq!(psnr(&[7, 7], &[7, 7]), Some(f64::INFINITY));
    assert!(decode_rgb(b"not a jpeg", Upsampling::Nearest).is_err());
}

#[test]
fn the_float_reference_is_the_identity_for_jfif_samples() {
    assert_eq!(
        reference(ColorSpec::BT601_FULL, [90, 100, 200]),
        [90, 100, 200]
    );
}
