//! The wrappers on a real GL context (the host's EGL): bytes round-trip
//! through an upload and a readback, and a slice too short for what GL would
//! touch is refused before GL is called.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::{Gpu, GpuError};

/// Runs `f` on a new `Gpu`'s GL thread.
fn on_gl<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let gpu = Gpu::new().unwrap();
    gpu.link().call("glutil test", move |_| f()).unwrap()
}

fn too_small(e: GpuError) -> (usize, usize) {
    match e {
        GpuError::Tensor(zerocam_tensor::Error::BufferTooSmall { needed, available }) => {
            (needed, available)
        }
        e => panic!("expected BufferTooSmall, got {e:?}"),
    }
}

/// A `GL_TEXTURE_2D` of 4x4 `internal` texels filled from `bytes` (rows
/// `stride` apart), and a framebuffer on it.
fn filled(internal: u32, format: u32, stride: usize, bytes: &[u8]) -> (u32, u32) {
    let texture = texture(gl::TEXTURE_2D);
    let upload = TexUpload {
        texture,
        internal,
        format,
        width: 4,
        height: 4,
        stride,
        allocate: true,
    };
    upload_texture(&upload, UploadFrom::Memory(bytes)).unwrap();
    check("upload").unwrap();
    (texture, framebuffer(texture).unwrap())
}

fn free(texture: u32, fb: u32) {
    delete_framebuffer(fb);
    delete_textures(&[texture]);
}

#[test]
fn rgba_rows_round_trip_through_upload_and_readback() {
    let bytes: Vec<u8> = (0..64).collect();
    let back = on_gl(move || {
        let (texture, fb) = filled(gl::RGBA8, gl::RGBA, 16, &bytes);
        let mut back = vec![0u8; 64];
        let readback = Readback::begin(fb, 4).unwrap();
        let rect = PixelRect {
            x: 0,
            y: 0,
            width: 4,
            height: 4,
        };
        readback.to_memory(rect, back.as_mut_slice(), 0).unwrap();
        drop(readback);
        check("readback").unwrap();
        free(texture, fb);
        back
    });
    assert_eq!(back, (0..64).collect::<Vec<u8>>());
}

#[test]
fn padded_rgb_rows_go_up_row_by_row() {
    // Rows 13 bytes apart (not a whole number of 3-byte texels): 3 * 13 + 12.
    let bytes: Vec<u8> = (0..51).collect();
    let (back, short) = on_gl(move || {
        let texture = texture(gl::TEXTURE_2D);
        let upload = TexUpload {
            texture,
            internal: gl::RGB8,
            format: gl::RGB,
            width: 4,
            height: 4,
            stride: 13,
            allocate: true,
        };
        let short = upload_texture(&upload, UploadFrom::Memory(&bytes[..50])).unwrap_err();
        upload_texture(&upload, UploadFrom::Memory(&bytes)).unwrap();
        check("upload").unwrap();
        let fb = framebuffer(texture).unwrap();
        let mut back = vec![0u8; 64];
        let readback = Readback::begin(fb, 4).unwrap();
        let rect = PixelRect {
            x: 0,
            y: 0,
            width: 4,
            height: 4,
        };
        readback.to_memory(rect, back.as_mut_slice(), 0).unwrap();
        drop(readback);
        check("readback").unwrap();
        free(texture, fb);
        (back, short)
    });
    assert_eq!(too_small(short), (51, 50));
    for (i, texel) in back.chunks(4).enumerate() {
        let at = (i / 4) * 13 + (i % 4) * 3;
        let want = [at as u8, at as u8 + 1, at as u8 + 2, 255];
        assert_eq!(texel, want, "texel {i}");
    }
}

#[test]
fn short_slices_are_refused_before_gl_is_called() {
    let (upload, read, read_at, part, format) = on_gl(|| {
        let (texture, fb) = filled(gl::RGBA8, gl::RGBA, 16, &[7; 64]);
        let upload = TexUpload {
            texture,
            internal: gl::RGBA8,
            format: gl::RGBA,
            width: 4,
            height: 4,
            stride: 16,
            allocate: false,
        };
        let upload_err = upload_texture(&upload, UploadFrom::Memory(&[0; 63])).unwrap_err();
        let bgra = TexUpload {
            format: gl::RGBA_INTEGER,
            ..upload
        };
        let format_err = upload_texture(&bgra, UploadFrom::Memory(&[0; 64])).unwrap_err();
        let readback = Readback::begin(fb, 4).unwrap();
        let rect = PixelRect {
            x: 0,
            y: 0,
            width: 4,
            height: 4,
        };
        let read = readback
            .to_memory(rect, [0u8; 63].as_mut_slice(), 0)
            .unwrap_err();
        // u32 elements are read back as their bytes: 16 of them hold 64.
        let read_at = readback
            .to_memory(rect, [0u32; 16].as_mut_slice(), 1)
            .unwrap_err();
        let part = readback
            .texel_part_to_memory((0, 0), 1..3, [0u8; 64].as_mut_slice(), 63)
            .unwrap_err();
        drop(readback);
        // Nothing reached GL: no error pending (the texture still holds 7s).
        check("nothing").unwrap();
        free(texture, fb);
        (upload_err, read, read_at, part, format_err)
    });
    assert_eq!(too_small(upload), (64, 63));
    assert_eq!(too_small(read), (64, 63));
    assert_eq!(too_small(read_at), (65, 64));
    assert_eq!(too_small(part), (65, 64));
    assert!(
        matches!(
            format,
            GpuError::Gl {
                code: gl::INVALID_ENUM,
                ..
            }
        ),
        "{format:?}"
    );
}

#[test]
fn a_texel_part_writes_only_its_bytes() {
    let gpu = Gpu::new().unwrap();
    // A zeroed PBO tensor: the GPU copy's destination, read back by a map.
    let pbo = gpu.pbo_tensor::<u8>(&[8]).unwrap();
    let target = pbo.pbo_buffer().unwrap();
    let bytes: Vec<u8> = (0..64).collect();
    let memory = gpu
        .link()
        .call("texel parts", move |_| {
            let (texture, fb) = filled(gl::RGBA8, gl::RGBA, 16, &bytes);
            let scratch = new_pack_buffer_uninit(4, gl::STREAM_COPY);
            let mut memory = [0xAAu8; 8];
            let readback = Readback::begin(fb, 4).unwrap();
            // Texel (1, 2) holds bytes 36..40; its bytes 1..3 are 37 and 38.
            readback
                .texel_part_to_memory((1, 2), 1..3, memory.as_mut_slice(), 5)
                .unwrap();
            readback
                .texel_part_to_buffer((1, 2), 1..3, scratch, target, 5)
                .unwrap();
            drop(readback);
            check("texel parts").unwrap();
            delete_buffers(&[scratch]);
            free(texture, fb);
            memory
        })
        .unwrap();
    assert_eq!(memory, [0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 37, 38, 0xAA]);
    assert_eq!(&pbo.map_read().unwrap()[..], [0, 0, 0, 0, 0, 37, 38, 0]);
}
