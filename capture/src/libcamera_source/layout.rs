//! How a libcamera `FrameBuffer`'s planes become memory planes: pure
//! arithmetic, unit-tested on the host without libcamera.
//!
//! libcamera describes a buffer as colour planes, each `(fd, offset, length)`.
//! Its usual NV12 layout is one dma-buf with luma at 0 and chroma after it
//! (some pipeline handlers add a trailing zero-length plane); others hand out
//! one dma-buf per plane. zerocam keys its import cache on the *file*
//! (`st_dev`, `st_ino`) and an offset, so the planes are grouped by file:
//! planes in one file are one import with a plane offset, planes in distinct
//! files are one import each, composed with `Tensor::from_planes`.

use zerocam_tensor::{FdIdentity, PixelFormat};

use crate::{CaptureFormat, FourCc};

/// One colour plane as libcamera reports it, with its file's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LcPlane {
    /// `(st_dev, st_ino)` of the plane's fd.
    pub file: FdIdentity,
    /// Byte offset of the plane in the file.
    pub offset: usize,
    /// Bytes of the plane.
    pub length: usize,
}

/// Where a buffer's image lies, memory plane by memory plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BufferLayout {
    /// Every plane in one file: one import, starting at `start`, covering
    /// `extent` bytes of the file; the second plane (if any) `plane_offset`
    /// bytes after the first (`None`: right after the first, packed).
    OneFile {
        /// Index of the libcamera plane whose fd is imported.
        plane: usize,
        /// Offset of the first plane in the file.
        start: usize,
        /// Bytes of the file the image spans, from 0.
        extent: usize,
        /// Offset of the second plane from the first.
        plane_offset: Option<usize>,
    },
    /// Luma and chroma in two files: two imports, each at its offset.
    TwoFiles {
        /// `(plane index, offset, extent from 0)` of luma then chroma.
        planes: [(usize, usize, usize); 2],
    },
}

/// Why a buffer's planes cannot be described.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LayoutError {
    /// No plane with data.
    #[error("the buffer has no plane with data")]
    NoPlanes,
    /// More planes than the format has, in more than one file.
    #[error("{format:?} has {expected} plane(s) but the buffer has {got} in distinct files")]
    PlaneCount {
        /// The pixel format.
        format: PixelFormat,
        /// Planes the format has.
        expected: usize,
        /// Planes with data the buffer has.
        got: usize,
    },
    /// A plane's offset + length overflows.
    #[error("plane {index} at offset {offset} with {length} bytes overflows")]
    Overflow {
        /// The plane.
        index: usize,
        /// Its offset.
        offset: usize,
        /// Its length.
        length: usize,
    },
    /// The second plane starts before the first one.
    #[error("the chroma plane (offset {chroma}) starts before the luma plane (offset {luma})")]
    PlaneOrder {
        /// Luma offset.
        luma: usize,
        /// Chroma offset.
        chroma: usize,
    },
}

/// The layout of a buffer of `format` whose libcamera planes are `planes`.
/// Zero-length planes are ignored.
pub(crate) fn buffer_layout(
    format: PixelFormat,
    planes: &[LcPlane],
) -> Result<BufferLayout, LayoutError> {
    let used: Vec<(usize, &LcPlane)> = planes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.length > 0)
        .collect();
    let end = |(i, p): (usize, &LcPlane)| {
        p.offset.checked_add(p.length).ok_or(LayoutError::Overflow {
            index: i,
            offset: p.offset,
            length: p.length,
        })
    };
    let Some(&(first, p0)) = used.first() else {
        return Err(LayoutError::NoPlanes);
    };
    let extent = used
        .iter()
        .try_fold(0usize, |acc, &u| Ok(acc.max(end(u)?)))?;
    if used.iter().all(|(_, p)| p.file == p0.file) {
        let plane_offset = match used.get(1) {
            Some((_, p1)) if format.plane_count() > 1 => Some(
                p1.offset
                    .checked_sub(p0.offset)
                    .ok_or(LayoutError::PlaneOrder {
                        luma: p0.offset,
                        chroma: p1.offset,
                    })?,
            ),
            _ => None,
        };
        return Ok(BufferLayout::OneFile {
            plane: first,
            start: p0.offset,
            extent,
            plane_offset,
        });
    }
    if format.plane_count() != 2 || used.len() != 2 {
        return Err(LayoutError::PlaneCount {
            format,
            expected: format.plane_count(),
            got: used.len(),
        });
    }
    let (second, p1) = used[1];
    Ok(BufferLayout::TwoFiles {
        planes: [
            (first, p0.offset, end((first, p0))?),
            (second, p1.offset, end((second, p1))?),
        ],
    })
}

/// libcamera's (DRM) fourcc of a zerocam capture format
/// ([`PixelFormat::drm_fourcc`]). libcamera names formats by their DRM code,
/// whose RGB names count from the low byte: DRM `RGB888` is bytes B, G, R
/// (V4L2 `BGR3`). Two-buffer formats (NV12M, NV16M) ask for their one-buffer
/// name: libcamera decides where the planes go, and the stream's format says
/// what it chose.
pub(crate) fn drm_fourcc(format: CaptureFormat) -> FourCc {
    format.pixel.drm_fourcc().map_or(format.fourcc, FourCc)
}

/// The zerocam capture format of a libcamera (DRM) fourcc, with its planes in
/// `files` distinct files (2 → NV12M/NV16M).
pub(crate) fn capture_format(drm: FourCc, files: usize) -> Option<CaptureFormat> {
    crate::CAPTURE_FORMATS
        .into_iter()
        .find(|f| drm_fourcc(*f) == drm && f.memory_planes == files.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: FdIdentity = FdIdentity { dev: 1, ino: 10 };
    const B: FdIdentity = FdIdentity { dev: 1, ino: 11 };

    fn p(file: FdIdentity, offset: usize, length: usize) -> LcPlane {
        LcPlane {
            file,
            offset,
            length,
        }
    }

    /// One import of libcamera plane 0's file.
    fn one_file(
        start: usize,
        extent: usize,
        plane_offset: Option<usize>,
    ) -> Result<BufferLayout, LayoutError> {
        Ok(BufferLayout::OneFile {
            plane: 0,
            start,
            extent,
            plane_offset,
        })
    }

    #[test]
    fn nv12_in_one_file_with_an_empty_third_plane_is_one_import() {
        let planes = [p(A, 0, 307_200), p(A, 307_200, 153_600), p(A, 460_800, 0)];
        assert_eq!(
            buffer_layout(PixelFormat::Nv12, &planes),
            one_file(0, 460_800, Some(307_200))
        );
    }

    #[test]
    fn padded_chroma_and_a_start_offset_are_kept() {
        let planes = [p(A, 4096, 640 * 480), p(A, 4096 + 327_680, 153_600)];
        assert_eq!(
            buffer_layout(PixelFormat::Nv12, &planes),
            one_file(4096, 4096 + 327_680 + 153_600, Some(327_680))
        );
    }

    #[test]
    fn packed_formats_and_single_plane_nv12_have_no_plane_offset() {
        for f in [PixelFormat::Yuyv, PixelFormat::Nv12] {
            assert_eq!(buffer_layout(f, &[p(A, 0, 1000)]), one_file(0, 1000, None));
        }
    }

    #[test]
    fn two_files_are_two_imports() {
        let planes = [p(A, 0, 100), p(B, 64, 50)];
        assert_eq!(
            buffer_layout(PixelFormat::Nv12, &planes),
            Ok(BufferLayout::TwoFiles {
                planes: [(0, 0, 100), (1, 64, 114)]
            })
        );
    }

    #[test]
    fn bad_plane_sets_are_errors() {
        assert_eq!(
            buffer_layout(PixelFormat::Nv12, &[p(A, 0, 0)]),
            Err(LayoutError::NoPlanes)
        );
        assert_eq!(
            buffer_layout(PixelFormat::Yuyv, &[p(A, 0, 10), p(B, 0, 10)]),
            Err(LayoutError::PlaneCount {
                format: PixelFormat::Yuyv,
                expected: 1,
                got: 2
            })
        );
        assert_eq!(
            buffer_layout(PixelFormat::Nv12, &[p(A, 100, 10), p(A, 0, 10)]),
            Err(LayoutError::PlaneOrder {
                luma: 100,
                chroma: 0
            })
        );
        assert!(matches!(
            buffer_layout(PixelFormat::Nv12, &[p(A, usize::MAX, 10)]),
            Err(LayoutError::Overflow { index: 0, .. })
        ));
    }

    #[test]
    fn formats_map_both_ways() {
        for f in crate::CAPTURE_FORMATS {
            let files = f.memory_planes;
            assert_eq!(capture_format(drm_fourcc(f), files), Some(f), "{}", f.name);
        }
        assert_eq!(drm_fourcc("RGB24".parse().unwrap()), FourCc(*b"BG24"));
        assert_eq!(capture_format(FourCc(*b"MJPG"), 1), None);
    }
}
