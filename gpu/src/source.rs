//! The source side of a conversion: a dma-buf imported once as an EGLImage
//! (cached), or planes uploaded into textures.

use std::os::fd::{AsRawFd, OwnedFd};

use zerocam_cache::{GpuImageCache, ImageKey};
use zerocam_tensor::{Access, DeviceBorrow, PixelFormat, Region, RootLayout, Tensor, TensorMemory};

use crate::draw_plan::{DrawPlan, ImportPolicy};
use crate::egl::EglImage;
use crate::egl_attributes::source_attribs;
use crate::glutil::{self, TexUpload, UploadFrom, TEXTURE_EXTERNAL_OES};
use crate::state::GlState;
use crate::{ColorSpec, ConvertOptions, GpuError, Result};

/// What a source import depends on besides the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SourceKey {
    pub root: RootLayout,
    pub frame: usize,
    pub color: ColorSpec,
}

/// An imported source: the EGLImage and the external texture bound to it.
/// The image is shared (`Rc`, GL thread only) with device interop that
/// registered it ([`GlThread::egl_image`](crate::GlThread::egl_image)): it is
/// destroyed when the last holder drops.
#[derive(Debug)]
pub(crate) struct SourceImage {
    pub image: std::rc::Rc<EglImage>,
    pub texture: u32,
}

/// A texture reused by every upload, and the storage it was last given
/// (internal format, width, height): the same size is re-filled, not
/// re-allocated, frame after frame.
#[derive(Debug, Clone, Copy)]
struct UploadTexture {
    name: u32,
    storage: Option<(u32, usize, usize)>,
}

/// The source caches of the GL thread.
pub(crate) struct Sources {
    pub images: GpuImageCache<SourceKey, SourceImage>,
    /// The two upload textures, made on first use.
    uploads: Option<[UploadTexture; 2]>,
}

impl Sources {
    pub fn new(capacity: usize) -> Sources {
        Sources {
            images: GpuImageCache::new(capacity),
            uploads: None,
        }
    }

    pub fn free_uploads(&mut self) {
        if let Some(t) = self.uploads.take() {
            glutil::delete_textures(&t.map(|u| u.name));
        }
    }
}

/// A source ready to sample: its textures, how to read them, and the borrow
/// that keeps writers off an imported source's buffers until the draw is done.
pub(crate) struct Bound {
    pub external: bool,
    pub textures: [u32; 2],
    /// The `KIND` of the planes shader.
    pub kind: i32,
    pub swap_rb: bool,
    /// The source rectangle normalised to the bound texture.
    pub crop: [f32; 4],
    /// The root pixel at the bound texture's top-left, and its size in pixels
    /// (to normalise a model input's fractional source rectangle).
    pub texture_origin: (usize, usize),
    pub texture_size: (usize, usize),
    /// Each bound texture's size in its texels (an Area write's footprint
    /// per plane): the uploads' sizes, or the image's for an import (the
    /// driver's one RGB plane).
    pub plane_sizes: [(usize, usize); 2],
    pub color: ColorSpec,
    _borrow: Option<DeviceBorrow>,
}

/// Imports or uploads `src` and binds it to texture units 0 and 1.
pub(crate) fn bind(
    st: &mut GlState,
    plan: &DrawPlan,
    src: &Tensor<u8>,
    options: &ConvertOptions,
) -> Result<Bound> {
    let is_dma = src.memory() == TensorMemory::Dma;
    if options.import == ImportPolicy::Require {
        if !is_dma {
            return Err(GpuError::UnsupportedMemory {
                memory: src.memory(),
                role: "source",
                operation: "convert with ImportPolicy::Require",
                reason: "only a dma-buf can be imported",
            });
        }
        for (ok, extension) in [
            (st.egl.info.dma_buf_import, "EGL_EXT_image_dma_buf_import"),
            (
                st.egl.info.image_external,
                "GL_OES_EGL_image_external_essl3",
            ),
        ] {
            if !ok {
                return Err(GpuError::MissingExtension {
                    extension,
                    renderer: st.egl.info.renderer.clone(),
                });
            }
        }
    }
    let try_import = is_dma
        && options.import != ImportPolicy::Never
        && st.egl.info.dma_buf_import
        && st.egl.info.image_external;
    if try_import {
        match import(st, plan, src, options.color) {
            Ok(bound) => return Ok(bound),
            Err(e) if options.import == ImportPolicy::Require => return Err(e),
            Err(_) => {}
        }
    }
    upload(st, plan, src, options.color)
}

/// One tensor per buffer of `src`: itself, and its chroma plane when that
/// lives in a second buffer (NV12M).
fn buffers(src: &Tensor<u8>, root: &RootLayout) -> Result<Vec<Tensor<u8>>> {
    let mut all = vec![src.clone()];
    if root.buffer_count() > 1 {
        all.push(src.plane(1)?);
    }
    Ok(all)
}

fn buffer_fds(buffers: &[Tensor<u8>]) -> Result<Vec<OwnedFd>> {
    // Dup'd: EGL does not take the fds, but some drivers close what they are given.
    let mut fds = Vec::with_capacity(buffers.len());
    for (b, holder) in buffers.iter().enumerate() {
        let fd = holder.fd().ok_or(zerocam_tensor::Error::NoFd {
            memory: holder.memory(),
        })?;
        fds.push(fd.try_clone_to_owned().map_err(|source| GpuError::Dup {
            what: if b == 0 { "source" } else { "source chroma" },
            source,
        })?);
    }
    Ok(fds)
}

/// The cached import of `src` (root `root`, batch element `frame`) as an
/// EGLImage bound to an external texture, imported on a miss.
pub(crate) fn cached_import<'s>(
    st: &'s mut GlState,
    src: &Tensor<u8>,
    root: RootLayout,
    frame: usize,
    color: ColorSpec,
) -> Result<&'s SourceImage> {
    let key = ImageKey {
        buffer: src.buffer_identity().id(),
        geometry: SourceKey { root, frame, color },
    };
    let mut retired = Vec::new();
    let modifiers = st.egl.info.dma_buf_modifiers;
    let GlState { sources, egl, .. } = st;
    let created = sources.images.get_or_insert_with(
        key,
        src.buffer_identity().weak(),
        || -> Result<SourceImage> {
            let fds = buffer_fds(&buffers(src, &root)?)?;
            let raw: Vec<_> = fds.iter().map(AsRawFd::as_raw_fd).collect();
            let attribs = source_attribs(&root, frame, &raw, color, modifiers)?;
            let image = egl
                .create_dma_buf_image(&attribs)
                .map_err(|error| GpuError::Import {
                    format: root.format,
                    width: root.width,
                    height: root.height,
                    pitch: root.planes()[0].stride,
                    offsets: root.planes().iter().map(|p| p.offset).collect(),
                    error,
                })?;
            let texture = glutil::texture(TEXTURE_EXTERNAL_OES);
            if let Err(e) = egl.bind_image_to_texture(TEXTURE_EXTERNAL_OES, &image) {
                glutil::delete_textures(&[texture]);
                return Err(e); // `image` drops: destroyed
            }
            Ok(SourceImage {
                image: std::rc::Rc::new(image),
                texture,
            })
        },
        &mut retired,
    );
    for r in retired {
        destroy_source(r);
    }
    created
}

/// Deletes a source's texture, then drops its image (destroyed unless a
/// device registration still holds it).
pub(crate) fn destroy_source(s: SourceImage) {
    glutil::delete_textures(&[s.texture]);
    drop(s.image);
}

fn import(st: &mut GlState, plan: &DrawPlan, src: &Tensor<u8>, color: ColorSpec) -> Result<Bound> {
    let root = plan.source.root;
    // The GPU reads the buffer(s) until the draw is done: no CPU writer meanwhile.
    let borrow = src.device_borrow(Access::Read)?;
    let texture = cached_import(st, src, root, plan.source.frame, color)?.texture;
    Ok(Bound {
        external: true,
        textures: [texture, 0],
        kind: i32::from(root.format == PixelFormat::Grey),
        swap_rb: false,
        crop: normalized(plan.crop, (0, 0), root.width, root.height),
        texture_origin: (0, 0),
        texture_size: (root.width, root.height),
        plane_sizes: [(root.width, root.height); 2],
        color,
        _borrow: Some(borrow),
    })
}

/// The source rectangle normalised to a `width`x`height` texture whose top-left
/// pixel is `origin`.
pub fn normalized(crop: Region, origin: (usize, usize), width: usize, height: usize) -> [f32; 4] {
    let (w, h) = (width as f32, height as f32);
    [
        (crop.x - origin.0) as f32 / w,
        (crop.y - origin.1) as f32 / h,
        crop.width as f32 / w,
        crop.height as f32 / h,
    ]
}

/// One texture to upload: its plane, GL internal format, format and size.
#[derive(Clone, Copy)]
struct TexSpec {
    plane: usize,
    internal: u32,
    format: u32,
    width: usize,
    height: usize,
}

/// The shader's source `KIND` and the one or two textures of `format`
/// (inline: an upload allocates nothing).
fn tex_specs(format: PixelFormat, w: usize, h: usize) -> Option<(i32, [Option<TexSpec>; 2])> {
    let t = |plane, internal, format, width, height| TexSpec {
        plane,
        internal,
        format,
        width,
        height,
    };
    Some(match format {
        PixelFormat::Rgb | PixelFormat::Bgr => (0, [Some(t(0, gl::RGB8, gl::RGB, w, h)), None]),
        PixelFormat::Rgba | PixelFormat::Bgra => (0, [Some(t(0, gl::RGBA8, gl::RGBA, w, h)), None]),
        PixelFormat::Grey => (1, [Some(t(0, gl::R8, gl::RED, w, h)), None]),
        PixelFormat::Nv12 | PixelFormat::Nv16 => (
            2,
            [
                Some(t(0, gl::R8, gl::RED, w, h)),
                Some(t(1, gl::RG8, gl::RG, w / 2, format.plane_rows(1, h))),
            ],
        ),
        PixelFormat::Yuyv | PixelFormat::Uyvy => (
            if format == PixelFormat::Yuyv { 3 } else { 4 },
            [
                Some(t(0, gl::RG8, gl::RG, w, h)),
                Some(t(0, gl::RGBA8, gl::RGBA, w / 2, h)),
            ],
        ),
        _ => return None,
    })
}

fn upload(st: &mut GlState, plan: &DrawPlan, src: &Tensor<u8>, color: ColorSpec) -> Result<Bound> {
    let view = plan.source.region;
    let format = plan.source.root.format;
    let (kind, specs) =
        tex_specs(format, view.width, view.height).ok_or(GpuError::UnsupportedFormat {
            format,
            role: "source",
            operation: "convert",
        })?;
    let uploads = st.sources.uploads.get_or_insert_with(|| {
        [gl::TEXTURE_2D; 2].map(|t| UploadTexture {
            name: glutil::texture(t),
            storage: None,
        })
    });
    let textures = uploads.map(|u| u.name);
    let plane_sizes = specs.map(|s| s.map_or((0, 0), |s| (s.width, s.height)));
    let pbo = src.pbo_buffer();
    for (spec, upload) in specs.iter().flatten().zip(uploads.iter_mut()) {
        let texture = upload.name;
        let storage = (spec.internal, spec.width, spec.height);
        let allocate = upload.storage != Some(storage);
        st.stats.upload_allocations += u64::from(allocate);
        let plane = src.plane(spec.plane)?;
        // The row stride (`strides()[rank - 2]`, read without allocating).
        let stride = plane
            .shape()
            .len()
            .checked_sub(2)
            .and_then(|axis| plane.stride(axis))
            .unwrap_or(0);
        let upload_spec = TexUpload {
            texture,
            internal: spec.internal,
            format: spec.format,
            width: spec.width,
            height: spec.height,
            stride,
            allocate,
        };
        let map;
        let from = match pbo {
            Some(buffer) => UploadFrom::UnpackBuffer {
                buffer,
                offset: plane.plane_offset(),
            },
            None => {
                map = plane.map_read()?;
                UploadFrom::Memory(&map)
            }
        };
        // A failed upload leaves the storage unknown: allocate next time.
        upload.storage = None;
        glutil::upload_texture(&upload_spec, from)?;
        glutil::check("glTexSubImage2D (source upload)")?;
        upload.storage = Some(storage);
    }
    st.stats.uploads += 1;
    Ok(Bound {
        external: false,
        textures,
        kind,
        swap_rb: matches!(format, PixelFormat::Bgr | PixelFormat::Bgra),
        crop: normalized(plan.crop, (view.x, view.y), view.width, view.height),
        texture_origin: (view.x, view.y),
        texture_size: (view.width, view.height),
        plane_sizes,
        color,
        _borrow: None,
    })
}
