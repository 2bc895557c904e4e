//! The `EGL_EXT_image_dma_buf_import` attribute lists for a tensor's root
//! image: DRM fourcc, size, and per plane the fd, offset and pitch. Pure, so
//! the layout rules are tested without EGL.

use std::os::fd::RawFd;

use zerocam_tensor::{PixelFormat, RootLayout};

use crate::{ColorSpec, GpuError, Matrix, Range, Result};

const WIDTH: i32 = 0x3057;
const HEIGHT: i32 = 0x3056;
const NONE: i32 = 0x3038;
const LINUX_DRM_FOURCC: i32 = 0x3271;
/// FD, OFFSET, PITCH of planes 0 and 1.
const PLANE_ATTRIBS: [[i32; 3]; 2] = [[0x3272, 0x3273, 0x3274], [0x3275, 0x3276, 0x3277]];
/// MODIFIER_LO, MODIFIER_HI of planes 0 and 1 (EXT_image_dma_buf_import_modifiers).
const PLANE_MODIFIER: [[i32; 2]; 2] = [[0x3443, 0x3444], [0x3445, 0x3446]];
/// `DRM_FORMAT_MOD_LINEAR`: a tensor's bytes are always row-major.
const MOD_LINEAR: u64 = 0;
const YUV_COLOR_SPACE_HINT: i32 = 0x327B;
const SAMPLE_RANGE_HINT: i32 = 0x327C;
const ITU_REC601: i32 = 0x327F;
const ITU_REC709: i32 = 0x3280;
const YUV_FULL_RANGE: i32 = 0x3282;
const YUV_NARROW_RANGE: i32 = 0x3283;

const fn fourcc(code: &[u8; 4]) -> u32 {
    (code[0] as u32) | (code[1] as u32) << 8 | (code[2] as u32) << 16 | (code[3] as u32) << 24
}

/// The DRM fourcc code of a format's bytes ([`PixelFormat::drm_fourcc`]).
pub fn drm_fourcc(format: PixelFormat) -> Option<u32> {
    format.drm_fourcc().map(|code| fourcc(&code))
}

fn int(what: &'static str, root: &RootLayout, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| GpuError::BadSize {
        what,
        format: root.format,
        width: root.width,
        height: root.height,
        reason: "sizes, pitches and offsets must fit EGL's 32-bit attributes",
    })
}

/// The modifier attributes of plane `i`: LINEAR, said explicitly where the
/// display takes modifiers (so no driver assumes an implicit tiled layout).
fn linear(i: usize, modifiers: bool) -> Vec<i32> {
    if !modifiers {
        return Vec::new();
    }
    let [lo, hi] = PLANE_MODIFIER[i];
    vec![
        lo,
        (MOD_LINEAR & 0xffff_ffff) as i32,
        hi,
        (MOD_LINEAR >> 32) as i32,
    ]
}

/// The attributes importing batch element `frame` of `root`, whose buffers'
/// fds are `fds` (one per buffer), with the colour hints of `color`; with
/// `modifiers`, each plane says it is LINEAR.
pub fn source_attribs(
    root: &RootLayout,
    frame: usize,
    fds: &[RawFd],
    color: ColorSpec,
    modifiers: bool,
) -> Result<Vec<i32>> {
    let fourcc = drm_fourcc(root.format).ok_or(GpuError::UnsupportedFormat {
        format: root.format,
        role: "dma-buf source",
        operation: "EGLImage import",
    })?;
    let mut a = vec![
        WIDTH,
        int("source", root, root.width)?,
        HEIGHT,
        int("source", root, root.height)?,
        LINUX_DRM_FOURCC,
        fourcc as i32,
    ];
    for (i, (plane, names)) in root.planes().iter().zip(PLANE_ATTRIBS).enumerate() {
        let fd = *fds.get(plane.buffer).ok_or(GpuError::BadSize {
            what: "source",
            format: root.format,
            width: root.width,
            height: root.height,
            reason: "a plane lives in a buffer that has no fd",
        })?;
        let offset = plane.offset + frame * root.batch_stride;
        a.extend([
            names[0],
            fd,
            names[1],
            int("source", root, offset)?,
            names[2],
            int("source", root, plane.stride)?,
        ]);
        a.extend(linear(i, modifiers));
    }
    if !matches!(
        root.format,
        PixelFormat::Rgb | PixelFormat::Bgr | PixelFormat::Rgba | PixelFormat::Bgra
    ) {
        a.extend([
            YUV_COLOR_SPACE_HINT,
            match color.matrix {
                Matrix::Bt601 => ITU_REC601,
                Matrix::Bt709 => ITU_REC709,
            },
            SAMPLE_RANGE_HINT,
            match color.range {
                Range::Limited => YUV_NARROW_RANGE,
                Range::Full => YUV_FULL_RANGE,
            },
        ]);
    }
    a.push(NONE);
    Ok(a)
}

/// The attributes importing a destination's bytes as an RGBA8 render target
/// `grid` texels wide and `rows` high at byte `start`, pitch `stride`.
pub fn target_attribs(
    fd: RawFd,
    (start, stride, rows): (usize, usize, usize),
    modifiers: bool,
) -> Option<Vec<i32>> {
    let i = |v: usize| i32::try_from(v).ok();
    let mut a = vec![
        WIDTH,
        i(stride / 4)?,
        HEIGHT,
        i(rows)?,
        LINUX_DRM_FOURCC,
        fourcc(b"AB24") as i32,
        PLANE_ATTRIBS[0][0],
        fd,
        PLANE_ATTRIBS[0][1],
        i(start)?,
        PLANE_ATTRIBS[0][2],
        i(stride)?,
    ];
    a.extend(linear(0, modifiers));
    a.push(NONE);
    Some(a)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

    fn root_of(t: &Tensor<u8>) -> RootLayout {
        t.placement().unwrap().root
    }

    #[test]
    fn nv12_in_one_buffer_names_the_fd_twice_with_the_chroma_offset() {
        let t = Tensor::<u8>::builder_image(
            zerocam_tensor::ImageLayout::new(640, 480, PixelFormat::Nv12).with_row_stride(704),
        )
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
        let a = source_attribs(&root_of(&t), 0, &[7], ColorSpec::default(), false).unwrap();
        assert_eq!(
            &a[..6],
            &[
                WIDTH,
                640,
                HEIGHT,
                480,
                LINUX_DRM_FOURCC,
                fourcc(b"NV12") as i32
            ]
        );
        assert_eq!(&a[6..12], &[0x3272, 7, 0x3273, 0, 0x3274, 704]);
        assert_eq!(&a[12..18], &[0x3275, 7, 0x3276, 704 * 480, 0x3277, 704]);
        assert_eq!(
            &a[18..],
            &[
                YUV_COLOR_SPACE_HINT,
                ITU_REC601,
                SAMPLE_RANGE_HINT,
                YUV_NARROW_RANGE,
                NONE
            ]
        );
    }

    #[test]
    fn modifiers_say_linear_for_every_plane() {
        let t = Tensor::<u8>::image(8, 4, PixelFormat::Nv12, Some(TensorMemory::Mem)).unwrap();
        let a = source_attribs(&root_of(&t), 0, &[7], ColorSpec::default(), true).unwrap();
        assert_eq!(&a[12..16], &[0x3443, 0, 0x3444, 0]);
        assert_eq!(&a[22..26], &[0x3445, 0, 0x3446, 0]);
        let b = target_attribs(9, (64, 256, 10), true).unwrap();
        assert_eq!(&b[b.len() - 5..], &[0x3443, 0, 0x3444, 0, NONE]);
    }

    #[test]
    fn split_planes_name_two_fds() {
        let y = Tensor::<u8>::new(&[4, 8], Some(TensorMemory::Mem), None).unwrap();
        let uv = Tensor::<u8>::new(&[2, 8], Some(TensorMemory::Mem), None).unwrap();
        let t = Tensor::from_planes(y, uv, PixelFormat::Nv12).unwrap();
        let a = source_attribs(&root_of(&t), 0, &[3, 4], ColorSpec::default(), false).unwrap();
        assert_eq!((a[7], a[13], a[15]), (3, 4, 0));
        let e = source_attribs(&root_of(&t), 0, &[3], ColorSpec::default(), false).unwrap_err();
        assert!(e.to_string().contains("no fd"), "{e}");
    }

    #[test]
    fn rgb_bytes_are_drm_bgr888_and_carry_no_yuv_hints() {
        let t = Tensor::<u8>::image(4, 2, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
        let a = source_attribs(&root_of(&t), 0, &[5], ColorSpec::default(), false).unwrap();
        assert_eq!(a[5], fourcc(b"BG24") as i32);
        assert_eq!(a.len(), 6 + 6 + 1);
        let p = Tensor::<u8>::image(4, 2, PixelFormat::PlanarRgb, Some(TensorMemory::Mem)).unwrap();
        assert!(matches!(
            source_attribs(&root_of(&p), 0, &[5], ColorSpec::default(), false),
            Err(GpuError::UnsupportedFormat { .. })
        ));
    }
}
