//! The destination side: one render target per destination root (cached), a
//! dma-buf rendered in place where EGL imports it, anything else rendered into
//! a texture and read back — a PBO without leaving the GPU.

use std::os::fd::AsRawFd;

use zerocam_cache::ImageKey;
use zerocam_tensor::{Access, DeviceBorrow, Element, Tensor, TensorMemory};

use crate::draw_plan::{DrawPlan, ImportPolicy, Rect, TargetGrid};
use crate::egl::EglImage;
use crate::egl_attributes::target_attribs;
use crate::glutil::{self, PixelRect, Readback};
use crate::state::GlState;
use crate::{GpuError, Result};

/// A destination's render target: an RGBA8 texture (imported from the
/// destination's dma-buf, or GL's own) and its framebuffer.
#[derive(Debug)]
pub(crate) struct RenderTarget {
    pub texture: u32,
    pub framebuffer: u32,
    /// The destination's own memory, when rendered in place.
    pub image: Option<EglImage>,
}

/// The target of one conversion, bound as the draw framebuffer.
pub(crate) struct Prepared {
    pub framebuffer: u32,
    pub in_place: bool,
    _borrow: Option<DeviceBorrow>,
}

fn too_big(plan: &DrawPlan, max: i32) -> GpuError {
    GpuError::BadSize {
        what: "destination",
        format: plan.target_label.0,
        width: plan.grid.texels_wide(),
        height: plan.grid.rows,
        reason: if max > 0 {
            "its texel grid (row stride / 4 by rows) exceeds GL_MAX_TEXTURE_SIZE"
        } else {
            "GL_MAX_TEXTURE_SIZE unknown"
        },
    }
}

fn own_texture(w: i32, h: i32) -> Result<u32> {
    let t = glutil::texture(gl::TEXTURE_2D);
    glutil::tex_storage_2d(gl::RGBA8, w, h);
    if let Err(e) = glutil::check("glTexStorage2D (render target)") {
        glutil::delete_textures(&[t]);
        return Err(e);
    }
    Ok(t)
}

fn imported_texture<T: Element>(
    st: &GlState,
    dst: &Tensor<T>,
    plan: &DrawPlan,
) -> Result<(u32, EglImage)> {
    let fd = dst.fd().ok_or(zerocam_tensor::Error::NoFd {
        memory: dst.memory(),
    })?;
    let dup = fd.try_clone_to_owned().map_err(|source| GpuError::Dup {
        what: "destination",
        source,
    })?;
    let g = plan.grid;
    let import_error = |error: String| GpuError::Import {
        format: plan.target_label.0,
        width: plan.target_label.1,
        height: plan.target_label.2,
        pitch: g.stride,
        offsets: vec![g.start],
        error,
    };
    let modifiers = st.egl.info.dma_buf_modifiers;
    let attribs = target_attribs(dup.as_raw_fd(), (g.start, g.stride, g.rows), modifiers)
        .ok_or_else(|| import_error("sizes exceed EGL's 32-bit attributes".into()))?;
    let image = st
        .egl
        .create_dma_buf_image(&attribs)
        .map_err(import_error)?;
    let t = glutil::texture(gl::TEXTURE_2D);
    if let Err(e) = st.egl.bind_image_to_texture(gl::TEXTURE_2D, &image) {
        glutil::delete_textures(&[t]);
        return Err(e); // `image` drops: destroyed
    }
    Ok((t, image))
}

fn create<T: Element>(
    st: &mut GlState,
    plan: &DrawPlan,
    dst: &Tensor<T>,
    policy: ImportPolicy,
) -> Result<RenderTarget> {
    let max = glutil::max_texture_size();
    let (w, h) = (plan.grid.texels_wide(), plan.grid.rows);
    let (Ok(wi), Ok(hi)) = (i32::try_from(w), i32::try_from(h)) else {
        return Err(too_big(plan, max));
    };
    if wi > max || hi > max {
        return Err(too_big(plan, max));
    }
    let in_place = dst.memory() == TensorMemory::Dma
        && policy != ImportPolicy::Never
        && st.egl.info.dma_buf_import;
    if in_place {
        let attempt =
            imported_texture(st, dst, plan).and_then(|(texture, image)| match glutil::framebuffer(
                texture,
            ) {
                Ok(framebuffer) => Ok(RenderTarget {
                    texture,
                    framebuffer,
                    image: Some(image),
                }),
                Err(e) => {
                    glutil::delete_textures(&[texture]);
                    Err(e) // `image` drops: destroyed
                }
            });
        match attempt {
            Ok(t) => return Ok(t),
            Err(e) if policy == ImportPolicy::Require => return Err(e),
            Err(_) => {}
        }
    }
    let texture = own_texture(wi, hi)?;
    let framebuffer = glutil::framebuffer(texture).inspect_err(|_| {
        glutil::delete_textures(&[texture]);
    })?;
    Ok(RenderTarget {
        texture,
        framebuffer,
        image: None,
    })
}

/// Finds or creates the destination root's render target and binds it.
pub(crate) fn prepare<T: Element>(
    st: &mut GlState,
    plan: &DrawPlan,
    dst: &Tensor<T>,
    policy: ImportPolicy,
) -> Result<Prepared> {
    let key = ImageKey {
        buffer: dst.buffer_identity().id(),
        geometry: plan.grid,
    };
    let (framebuffer, in_place) = match st.targets.get(&key) {
        Some(t) => (t.framebuffer, t.image.is_some()),
        None => {
            let t = create(st, plan, dst, policy)?;
            let found = (t.framebuffer, t.image.is_some());
            for old in st.targets.insert(key, dst.buffer_identity().weak(), t) {
                st.destroy_target(old);
            }
            found
        }
    };
    // Rendering in place writes the dma-buf itself: no CPU map meanwhile.
    let borrow = match in_place {
        true => Some(dst.device_borrow(Access::Write)?),
        false => None,
    };
    Ok(Prepared {
        framebuffer,
        in_place,
        _borrow: borrow,
    })
}

/// The bytes of buffer 0 that `r` writes: from its first texel's first
/// written byte to its last texel's last.
fn written(g: &TargetGrid, r: &Rect) -> (usize, usize) {
    let at = g.byte_offset(r);
    let end = at + (r.height - 1) * g.stride + (r.width - 1) * 4 + r.bytes.1;
    (at + r.bytes.0, end)
}

/// The 4-byte pack buffer that a shared texel of a PBO destination is read
/// into before its own bytes are copied on (made once per GL thread).
fn scratch_pbo(st: &mut GlState) -> Result<u32> {
    if let Some(b) = st.scratch_pbo {
        return Ok(b);
    }
    let b = glutil::new_pack_buffer_uninit(4, gl::STREAM_COPY);
    if let Err(e) = glutil::check("glBufferData (scratch pack buffer)") {
        glutil::delete_buffers(&[b]);
        return Err(e);
    }
    st.scratch_pbo = Some(b);
    Ok(b)
}

/// Makes the result visible in `dst`: waits for an in-place render, or reads
/// each rectangle back into the destination's memory. A rectangle of shared
/// texels (a model batch element's ends) gives only its own bytes: through a
/// 4-byte copy on the CPU, or a scratch buffer and a GPU copy into a PBO.
pub(crate) fn finish<T: Element>(
    st: &mut GlState,
    plan: &DrawPlan,
    dst: &Tensor<T>,
    target: &Prepared,
) -> Result<()> {
    if target.in_place {
        // Returns when the draw has reached the dma-buf.
        glutil::finish();
        return glutil::check("glFinish");
    }
    let g = plan.grid;
    let mut map = match dst.pbo_buffer() {
        Some(pbo) => Err(pbo),
        None => Ok(dst.map_write()?),
    };
    let span_start = dst.plane_offset();
    if let Ok(m) = &map {
        // The map's bytes (elements of any type are read back as bytes).
        let map_bytes = std::mem::size_of_val::<[T]>(m);
        // Every byte written lies inside the map: checked before GL is touched.
        for r in plan.rects.iter() {
            let (at, end) = written(&g, r);
            if at < span_start || end - span_start > map_bytes {
                return Err(zerocam_tensor::Error::BufferTooSmall {
                    needed: end.saturating_sub(span_start),
                    available: map_bytes,
                }
                .into());
            }
        }
    }
    let readback = Readback::begin(target.framebuffer, g.texels_wide())?;
    for r in plan.rects.iter() {
        let (at, _) = written(&g, r);
        let (a, b) = r.bytes;
        let pixels = PixelRect {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        };
        match &mut map {
            // Inside the map: checked above (and again by the wrapper).
            Ok(m) if r.whole_texels() => readback.to_memory(pixels, &mut m[..], at - span_start)?,
            // A partial rectangle is one texel (`span_rects`): only its bytes
            // a..b are this destination's.
            Ok(m) => {
                readback.texel_part_to_memory((r.x, r.y), a..b, &mut m[..], at - span_start)?
            }
            Err(pbo) if r.whole_texels() => readback.to_buffer(pixels, *pbo, at)?,
            Err(pbo) => {
                let scratch = scratch_pbo(st)?;
                readback.texel_part_to_buffer((r.x, r.y), a..b, scratch, *pbo, at)?;
            }
        }
    }
    // Row length 0 and no pack buffer again, before the check.
    drop(readback);
    glutil::check("glReadPixels (readback)")?;
    st.stats.readbacks += 1;
    drop(map);
    Ok(())
}
