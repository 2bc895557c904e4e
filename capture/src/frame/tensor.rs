//! How a dequeued buffer becomes a frame tensor: each memory plane looked up
//! in the import cache with the stream's layout laid on, and a two-buffer
//! format's planes composed into one tensor, kept per slot ([`Composed`]).

use zerocam_cache::{DmaBufKey, ImportCache};
use zerocam_tensor::{ImageLayout, PixelFormat, Tensor};

use crate::frame::plane_memory::PlaneMemory;
use crate::StreamFormat;

/// The composed two-buffer tensor of a buffer, and the plane tensors and
/// layouts it was composed from: reused while both planes hit the cache with
/// the same layouts, so its identity is as stable as theirs.
#[derive(Debug, Default)]
pub(crate) struct Composed {
    from: Option<[(u64, ImageLayout); 2]>,
    tensor: Option<Tensor<u8>>,
}

/// The frame tensor of a buffer whose planes are `planes`, the data starting
/// at `offsets` (V4L2 `data_offset`), through `cache`; the chroma plane of a
/// one-buffer two-plane format lies `chroma_offset` bytes after the luma plane (`None`: right after it,
/// rows `bytes_per_line` apart; libcamera may pad between them). Ignored when
/// the planes are in two buffers.
pub(crate) fn frame_tensor_at(
    cache: &mut ImportCache,
    format: &StreamFormat,
    planes: &[PlaneMemory],
    offsets: &[usize],
    chroma_offset: Option<usize>,
    composed: &mut Composed,
) -> zerocam_tensor::Result<Tensor<u8>> {
    let (w, h) = (format.width as usize, format.height as usize);
    let pixel = format.format.pixel;
    let stride = |i: usize| {
        format
            .planes
            .get(i)
            .map_or(0, |p| p.bytes_per_line as usize)
    };
    let offset = |i: usize| offsets.get(i).copied().unwrap_or(0);
    let laid = |i: usize, layout: ImageLayout| {
        let stride = stride(i).max(pixel.plane_row_samples(i, w));
        layout.with_row_stride(stride).with_start_offset(offset(i))
    };
    let mut plane = |i: usize, layout: ImageLayout| -> zerocam_tensor::Result<Tensor<u8>> {
        let p = planes.get(i).ok_or(zerocam_tensor::Error::NoFd {
            memory: zerocam_tensor::TensorMemory::Dma,
        })?;
        let key = DmaBufKey::new(p.file, offset(i));
        cache.get_image(key, layout, || p.import())
    };
    if planes.len() < 2 {
        let layout = ImageLayout::new(w, h, pixel);
        let layout = match chroma_offset {
            Some(o) => layout.with_plane_offset(o),
            None => layout,
        };
        return plane(0, laid(0, layout));
    }
    let luma_layout = laid(0, ImageLayout::new(w, h, PixelFormat::Grey));
    let chroma_rows = pixel.plane_rows(1, h);
    let chroma_layout = laid(1, ImageLayout::new(w, chroma_rows, PixelFormat::Grey));
    let luma = plane(0, luma_layout)?.plane(0)?;
    let chroma = plane(1, chroma_layout)?.plane(0)?;
    let from = [
        (luma.buffer_identity().id(), luma_layout),
        (chroma.buffer_identity().id(), chroma_layout),
    ];
    if let (Some(was), Some(t)) = (composed.from, &composed.tensor) {
        if was == from {
            return Ok(t.clone());
        }
    }
    let t = Tensor::from_planes(luma, chroma, pixel)?;
    *composed = Composed {
        from: Some(from),
        tensor: Some(t.clone()),
    };
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::plane_memory::PlaneSource;
    use zerocam_tensor::TensorMemory;

    #[test]
    fn a_one_buffer_frame_finds_its_chroma_at_the_plane_offset() {
        // NV12 4x4 with rows 8 bytes apart, starting 8 bytes in; chroma 40
        // bytes after luma (8 bytes of padding).
        let t = Tensor::<u8>::new(&[80], Some(TensorMemory::Shm), None).unwrap();
        {
            let mut m = t.map_write().unwrap();
            m.fill(0);
            m[8..40].fill(1);
            m[48..64].fill(2);
        }
        let plane = PlaneMemory::owned(t.clone()).unwrap();
        let format = StreamFormat {
            format: "NV12".parse().unwrap(),
            width: 4,
            height: 4,
            planes: vec![crate::PlaneLayout {
                bytes_per_line: 8,
                size: 72,
            }],
            color: zerocam_tensor::ColorSpec::default(),
        };
        let mut cache = ImportCache::new(2);
        let mut composed = Composed::default();
        let mut frame = || {
            frame_tensor_at(
                &mut cache,
                &format,
                std::slice::from_ref(&plane),
                &[8],
                Some(40),
                &mut composed,
            )
            .unwrap()
        };
        let f = frame();
        let (y, uv) = (f.plane(0).unwrap(), f.plane(1).unwrap());
        assert_eq!((y.shape(), uv.shape()), (&[4, 4][..], &[2, 4][..]));
        assert!(y.map_read().unwrap().iter().all(|&v| v == 1));
        assert!(uv.map_read().unwrap().iter().all(|&v| v == 2));
        assert_eq!(
            frame().buffer_identity().id(),
            f.buffer_identity().id(),
            "a cache hit"
        );
    }

    /// A `width`x`height` format `name` whose memory planes have rows
    /// `bytes_per_line` apart.
    fn format(name: &str, width: u32, height: u32, bytes_per_line: &[u32]) -> StreamFormat {
        StreamFormat {
            format: name.parse().unwrap(),
            width,
            height,
            planes: bytes_per_line
                .iter()
                .map(|&b| crate::PlaneLayout {
                    bytes_per_line: b,
                    size: b * height,
                })
                .collect(),
            color: zerocam_tensor::ColorSpec::default(),
        }
    }

    fn owned_plane(length: usize) -> PlaneMemory {
        PlaneMemory::owned(Tensor::new(&[length], Some(TensorMemory::Shm), None).unwrap()).unwrap()
    }

    /// A plane exported by a driver: a dma-buf-like fd imported anew on a miss.
    fn exported_plane(length: usize) -> PlaneMemory {
        let t = Tensor::<u8>::new(&[length], Some(TensorMemory::Shm), None).unwrap();
        PlaneMemory {
            file: t.fd_identity().unwrap(),
            source: PlaneSource::Exported(t.clone_fd().unwrap()),
            length,
        }
    }

    #[test]
    fn a_format_change_without_invalidate_gives_the_new_layout() {
        // A driver's format change keeps its buffers: the same buffer, another
        // size and format, no invalidate.
        for plane in [owned_plane(256), exported_plane(256)] {
            let planes = std::slice::from_ref(&plane);
            let mut cache = ImportCache::new(2);
            let mut composed = Composed::default();
            let mut frame = |f: &StreamFormat| {
                frame_tensor_at(&mut cache, f, planes, &[0], None, &mut composed).unwrap()
            };
            let nv12 = frame(&format("NV12", 4, 4, &[4]));
            assert_eq!(nv12.plane(0).unwrap().shape(), &[4, 4]);
            let wider = frame(&format("NV12", 8, 4, &[8]));
            assert_eq!(wider.plane(0).unwrap().shape(), &[4, 8], "the new size");
            assert_eq!(wider.plane(1).unwrap().shape(), &[2, 8]);
            let yuyv = frame(&format("YUYV", 4, 2, &[8]));
            assert_eq!(yuyv.shape(), &[2, 4, 2], "the new format");
            assert_eq!(
                frame(&format("YUYV", 4, 2, &[8])).buffer_identity(),
                yuyv.buffer_identity(),
                "the same layout again is a hit"
            );
        }
    }

    #[test]
    fn a_format_change_without_invalidate_recomposes_two_buffer_frames() {
        for planes in [
            [owned_plane(64), owned_plane(64)],
            [exported_plane(64), exported_plane(64)],
        ] {
            let mut cache = ImportCache::new(4);
            let mut composed = Composed::default();
            let mut frame = |f: &StreamFormat| {
                frame_tensor_at(&mut cache, f, &planes, &[0, 0], None, &mut composed).unwrap()
            };
            let small = frame(&format("NV12M", 4, 4, &[4, 4]));
            assert_eq!(small.plane(0).unwrap().shape(), &[4, 4]);
            let wide = frame(&format("NV12M", 8, 4, &[8, 8]));
            assert_eq!(wide.plane(0).unwrap().shape(), &[4, 8], "the new size");
            assert_eq!(wide.plane(1).unwrap().shape(), &[2, 8]);
            assert_eq!(
                frame(&format("NV12M", 8, 4, &[8, 8])).buffer_identity(),
                wide.buffer_identity(),
                "the same layout again reuses the composed tensor"
            );
        }
    }
}
