//! [`GlState`]: everything the GL thread owns — the context, the programs, the
//! import and render-target caches, and the counters — and the conversion's
//! GL steps in order.
//!
//! EGLImages free themselves ([`EglImage`](crate::egl::EglImage)'s `Drop`):
//! a cache hands an entry back and the owner drops it after deleting its GL
//! names. GL names (textures, framebuffers, programs, PBOs) belong to the
//! context: one leaked by a panic goes with the context when the thread ends.

use std::sync::Arc;

use zerocam_cache::GpuImageCache;
use zerocam_tensor::{Element, PixelFormat, Tensor, TensorDyn};

use crate::draw_plan::Pack;
use crate::draw_plan::{ConvertOptions, DrawPlan};
use crate::egl::EglContext;
use crate::glutil;
use crate::model::draw_plan::{is_pack_code, ModelDraw};
use crate::model::ModelResample;
use crate::poison::PoisonCell;
use crate::render::{ModelValues, Program};
use crate::source::{SourceImage, Sources};
use crate::target::RenderTarget;
use crate::{shaders, GpuError, GpuInfo, GpuStats, Result};

/// Source imports and render targets kept per GL thread.
const CACHE_CAPACITY: usize = 32;

/// The conversion programs, compiled on first use: one per
/// `(external, source kind, destination pack)`.
pub(crate) type Programs = std::collections::HashMap<(bool, i32, i32), Program>;

/// The GL thread's state. Dropped on the GL thread, context current: every
/// image, texture, framebuffer and PBO is freed before the context.
pub(crate) struct GlState {
    /// Device interop's state (zerocam-cuda's registrations): freed first.
    pub extensions: crate::interop::Extensions,
    pub programs: Programs,
    pub sources: Sources,
    pub targets: GpuImageCache<crate::draw_plan::TargetGrid, RenderTarget>,
    pub stats: GpuStats,
    pub pbos: Vec<u32>,
    /// The 4-byte pack buffer of shared texels read back into a PBO
    /// (`target::finish`), made on first use.
    pub scratch_pbo: Option<u32>,
    /// The model sampling pass's render target and the model size it was
    /// made for, made on first use and again when the size changes.
    pub model_values: Option<(ModelValues, (usize, usize))>,
    /// Set when a job panics (shared with the `Gpu` handles).
    pub poison: Arc<PoisonCell>,
    #[cfg(feature = "fault-injection")]
    pub faults: crate::fault::Faults,
    // Last: dropped after everything above is freed through it.
    pub egl: EglContext,
}

impl GlState {
    pub fn new(egl: EglContext, poison: Arc<PoisonCell>) -> GlState {
        GlState {
            extensions: crate::interop::Extensions::default(),
            programs: Programs::default(),
            sources: Sources::new(CACHE_CAPACITY),
            targets: GpuImageCache::new(CACHE_CAPACITY),
            stats: GpuStats::default(),
            pbos: Vec::new(),
            scratch_pbo: None,
            model_values: None,
            poison,
            #[cfg(feature = "fault-injection")]
            faults: crate::fault::Faults::default(),
            egl,
        }
    }

    pub fn info(&self) -> &GpuInfo {
        &self.egl.info
    }

    pub fn stats(&mut self) -> GpuStats {
        self.sweep();
        let images = self.egl.image_counts();
        GpuStats {
            images: self.sources.images.stats(),
            targets: self.targets.stats(),
            live_images: images.live,
            images_created: images.created,
            images_destroyed: images.destroyed,
            live_pbos: self.pbos.len() as u64,
            ..self.stats
        }
    }

    /// The program for an external (imported) or uploaded source of `kind`
    /// writing destination texels as `pack`, or a model write's sampling
    /// pass (`pack` a sample code). A model write's packing pass (`pack` a
    /// model pack code) samples no source: one program whatever `external`
    /// and `kind` say.
    pub fn program(&mut self, external: bool, kind: i32, pack: i32) -> Result<Program> {
        let key = if is_pack_code(pack) {
            (false, -1, pack)
        } else {
            (external, kind, pack)
        };
        if let Some(&p) = self.programs.get(&key) {
            return Ok(p);
        }
        let fragment = if is_pack_code(pack) {
            shaders::fragment_model_pack(pack)
        } else if external {
            if !self.egl.info.image_external {
                return Err(GpuError::MissingExtension {
                    extension: "GL_OES_EGL_image_external_essl3",
                    renderer: self.egl.info.renderer.clone(),
                });
            }
            shaders::fragment_external(kind, pack)
        } else {
            shaders::fragment_planes(kind, pack)
        };
        let p = Program::link(&fragment)?;
        self.stats.programs_linked += 1;
        self.programs.insert(key, p);
        Ok(p)
    }

    /// Deletes a source's texture, then its image (dropped here).
    pub fn destroy_source(&mut self, s: SourceImage) {
        crate::source::destroy_source(s);
    }

    /// Deletes a target's framebuffer and texture, then its image if any.
    pub fn destroy_target(&mut self, t: RenderTarget) {
        glutil::delete_framebuffer(t.framebuffer);
        glutil::delete_textures(&[t.texture]);
        drop(t.image);
    }

    /// Frees the images and targets whose tensors are gone.
    pub fn sweep(&mut self) {
        for s in self.sources.images.sweep() {
            self.destroy_source(s);
        }
        for t in self.targets.sweep() {
            self.destroy_target(t);
        }
    }

    pub fn clear_imports(&mut self) {
        for s in self.sources.images.clear() {
            self.destroy_source(s);
        }
    }

    pub fn clear_caches(&mut self) {
        self.clear_imports();
        for t in self.targets.clear() {
            self.destroy_target(t);
        }
        self.free_model_values();
        // Drivers free deleted objects (and close their imported fds) when the
        // work that used them retires.
        glutil::finish();
    }

    /// Deletes the model sampling pass's render target, if there is one.
    fn free_model_values(&mut self) {
        if let Some((v, _)) = self.model_values.take() {
            glutil::delete_framebuffer(v.framebuffer);
            glutil::delete_textures(&[v.texture]);
        }
    }

    /// The model sampling pass's render target for a model of `size`: the
    /// last one when its size matches, else a new one (counted in
    /// [`GpuStats::model_values_allocations`]).
    fn model_values(&mut self, size: (usize, usize)) -> Result<ModelValues> {
        if let Some((v, made_for)) = self.model_values {
            if made_for == size {
                return Ok(v);
            }
        }
        self.free_model_values();
        let max = glutil::max_texture_size();
        let (w, h) = (i32::try_from(size.0), i32::try_from(size.1));
        let (Ok(w), Ok(h)) = (w, h) else {
            return Err(model_too_big(size));
        };
        if w > max || h > max {
            return Err(model_too_big(size));
        }
        let texture = glutil::texture_nearest(gl::TEXTURE_2D);
        glutil::tex_storage_2d(gl::RGBA32UI, w, h);
        let made = glutil::check("glTexStorage2D (model values)")
            .and_then(|()| glutil::framebuffer(texture));
        let framebuffer = match made {
            Ok(fb) => fb,
            Err(e) => {
                glutil::delete_textures(&[texture]);
                return Err(e);
            }
        };
        let v = ModelValues {
            texture,
            framebuffer,
        };
        self.model_values = Some((v, size));
        self.stats.model_values_allocations += 1;
        Ok(v)
    }

    /// Runs a planned conversion into a destination of any element type a
    /// plan takes (`u8` images, `u8`/`i8`/`f16`/`f32` model inputs).
    pub fn convert_dyn(
        &mut self,
        plan: &DrawPlan,
        src: &Tensor<u8>,
        dst: &TensorDyn,
        options: &ConvertOptions,
    ) -> Result<()> {
        match dst {
            TensorDyn::U8(t) => self.convert(plan, src, t, options),
            TensorDyn::I8(t) => self.convert(plan, src, t, options),
            TensorDyn::F16(t) => self.convert(plan, src, t, options),
            TensorDyn::F32(t) => self.convert(plan, src, t, options),
            other => Err(GpuError::ModelDestination {
                shape: other.shape().to_vec(),
                dtype: other.dtype(),
                reason: "its element type is not one of u8, i8, f16, f32",
            }),
        }
    }

    /// Draws `plan`: an image in one pass, a model write in two (sampling,
    /// then packing). Counts the draws and the source samples they make.
    fn draw(
        &mut self,
        plan: &DrawPlan,
        bound: &crate::source::Bound,
        target: &crate::target::Prepared,
    ) -> Result<()> {
        let pack = plan.rects.first().map_or(0, |r| r.pack.code());
        let (draws, samples) = match &plan.model {
            None => {
                let program = self.program(bound.external, bound.kind, pack)?;
                crate::render::draw(&program, plan, bound, target)?;
                (plan.rects.iter().count(), image_samples(plan))
            }
            Some(m) => {
                let sample = self.program(bound.external, bound.kind, m.sample)?;
                let packer = self.program(false, -1, pack)?;
                let values = self.model_values(m.size)?;
                crate::render::draw_model(&sample, &packer, values, plan, m, bound, target)?;
                (1 + plan.rects.iter().count(), model_samples(m))
            }
        };
        self.stats.draws += draws as u64;
        self.stats.source_samples += samples;
        Ok(())
    }

    /// Runs a planned conversion.
    pub fn convert<T: Element>(
        &mut self,
        plan: &DrawPlan,
        src: &Tensor<u8>,
        dst: &Tensor<T>,
        options: &ConvertOptions,
    ) -> Result<()> {
        self.sweep();
        // Errors from earlier work must not be blamed on this conversion.
        glutil::clear_errors();
        // A PBO another device has mapped (CUDA interop holds a device
        // borrow) must not be used by GL meanwhile: refused as a map conflict.
        let mut _pbo_borrows = [None, None];
        if let Some(b) = src.pbo_buffer() {
            self.check_unmapped(b, "source")?;
            _pbo_borrows[0] = Some(src.device_borrow(zerocam_tensor::Access::Read)?);
        }
        if let Some(b) = dst.pbo_buffer() {
            self.check_unmapped(b, "destination")?;
            _pbo_borrows[1] = Some(dst.device_borrow(zerocam_tensor::Access::Write)?);
        }
        let bound = crate::source::bind(self, plan, src, options)?;
        let target = crate::target::prepare(self, plan, dst, options.import)?;
        let drawn = self.draw(plan, &bound, &target);
        #[cfg(feature = "fault-injection")]
        self.faults.panic_if_armed(); // the draw done, nothing read back yet
        let finished = drawn.and_then(|()| crate::target::finish(self, plan, dst, &target));
        if bound.external && !target.in_place && dst.pbo_buffer().is_some() {
            // A readback into a PBO is asynchronous: the draw may not have read
            // the imported source yet. Its borrow (below) must outlast that.
            glutil::finish();
        }
        drop(bound); // its borrows end: the GPU is done with the source
        finished?;
        self.stats.converts += 1;
        Ok(())
    }

    /// Frees everything but the PBOs: cached imports and render targets
    /// (their images destroyed), upload textures, programs. After a panic
    /// (nothing draws again) and at thread exit. PBOs stay: a CPU map of one
    /// may be live, and its tensor deletes it when it drops.
    pub fn release_all(&mut self) {
        // First: what device interop registered goes before the images and
        // buffers it registered.
        self.extensions.clear();
        self.clear_caches();
        self.sources.free_uploads();
        for (_, p) in self.programs.drain() {
            glutil::delete_program(p.id);
        }
        self.free_model_values();
        if let Some(b) = self.scratch_pbo.take() {
            glutil::delete_buffers(&[b]);
        }
        #[cfg(feature = "fault-injection")]
        self.faults.release();
    }
}

/// Source samples (a bilinear fetch and colour conversion at one point) of
/// an image draw: per texel, 1 for an RGBA pixel, 2 for four bytes of
/// packed RGB (they span two pixels), 4 for one channel of four pixels.
fn image_samples(plan: &DrawPlan) -> u64 {
    plan.rects
        .iter()
        .map(|r| {
            let per_texel = match r.pack {
                Pack::Rgba | Pack::Model(_) => 1,
                Pack::Rgb => 2,
                Pack::Channel(_) => 4,
            };
            (r.width * r.height * per_texel) as u64
        })
        .sum()
}

/// Source samples of a model write: one per model pixel, in its sampling
/// pass (the packing pass samples none; a bar pixel takes the pad instead).
/// With Area, a pixel of the target counts its footprint's bilinear
/// samples in luma texels (the first plane; a chroma plane takes fewer).
fn model_samples(m: &ModelDraw) -> u64 {
    let pixels = (m.size.0 * m.size.1) as u64;
    match m.resample {
        ModelResample::Bilinear => pixels,
        ModelResample::Area => {
            let (x, y) = m.area_samples;
            let per_pixel = (x.max(1) * y.max(1)) as u64;
            let target = (m.target.width * m.target.height) as u64;
            pixels - target + target * per_pixel
        }
    }
}

/// The error of a model too large for its sampling pass's texture.
fn model_too_big(size: (usize, usize)) -> GpuError {
    GpuError::BadSize {
        what: "model input",
        format: PixelFormat::Rgba,
        width: size.0,
        height: size.1,
        reason: "its width or height exceeds GL_MAX_TEXTURE_SIZE",
    }
}

impl Drop for GlState {
    fn drop(&mut self) {
        self.release_all();
        glutil::delete_buffers(&self.pbos);
    }
}
