//! The draw: one full-viewport triangle per destination rectangle; a model
//! write first draws one over its sampling pass's texture (`draw_model`).

use crate::color;
use crate::draw_plan::{DrawPlan, Pack};
use crate::glutil::{self, uniform, TEXTURE_EXTERNAL_OES};
use crate::model::draw_plan::{area_samples, ModelDraw};
use crate::model::ModelResample;
use crate::source::Bound;
use crate::target::Prepared;
use crate::{shaders, Result};

/// A linked conversion program and its uniform locations, looked up once at
/// link time (not by name every frame).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Program {
    pub id: u32,
    tex0: i32,
    tex1: i32,
    swap_rb: i32,
    yuv: i32,
    yuv_offset: i32,
    crop: i32,
    out: i32,
    channel: i32,
    origin: i32,
    model: ModelUniforms,
}

/// The model passes' uniform locations (-1, ignored by GL, where a program
/// lacks one).
#[derive(Debug, Clone, Copy)]
struct ModelUniforms {
    src: i32,
    target: i32,
    size: i32,
    grid: i32,
    first: i32,
    affine: i32,
    bias: i32,
    pad: i32,
    range: i32,
    values: i32,
    area: [i32; 2],
    texels: [i32; 2],
    samples: i32,
}

impl Program {
    /// Compiles and links `fragment` with the full-viewport vertex shader.
    pub fn link(fragment: &str) -> Result<Program> {
        let id = glutil::program(shaders::VERTEX, fragment)?;
        let at = |name| uniform(id, name);
        Ok(Program {
            id,
            tex0: at("u_tex0"),
            tex1: at("u_tex1"),
            swap_rb: at("u_swap_rb"),
            yuv: at("u_yuv"),
            yuv_offset: at("u_yuv_offset"),
            crop: at("u_crop"),
            out: at("u_out"),
            channel: at("u_channel"),
            origin: at("u_origin"),
            model: ModelUniforms {
                src: at("u_src"),
                target: at("u_target"),
                size: at("u_size"),
                grid: at("u_grid"),
                first: at("u_first"),
                affine: at("u_affine"),
                bias: at("u_bias"),
                pad: at("u_pad"),
                range: at("u_range"),
                values: at("u_values"),
                area: [at("u_area0"), at("u_area1")],
                texels: [at("u_texels0"), at("u_texels1")],
                samples: at("u_samples"),
            },
        })
    }
}

/// A model input's sampled source rectangle normalised to the bound texture
/// (fractional: a centre crop of an odd size starts between pixels).
fn model_source(m: &ModelDraw, source: &Bound) -> [f32; 4] {
    let (ox, oy) = source.texture_origin;
    let (w, h) = source.texture_size;
    let (w, h) = (w as f64, h as f64);
    [
        ((m.source.x - ox as f64) / w) as f32,
        ((m.source.y - oy as f64) / h) as f32,
        (m.source.width / w) as f32,
        (m.source.height / h) as f32,
    ]
}

/// An Area write's footprint in bound plane `plane` (its size in texels):
/// model pixel 0's footprint start and length across and down in the
/// plane's texels (`[(start + o * step) * n / image, ...)` for a plane `n`
/// texels across an image `image` pixels across, relative to the bound
/// texture), and the bilinear samples per axis
/// ([`area_samples`](crate::model::draw_plan::area_samples)). An imported
/// image's one plane is the image.
fn area_plane(m: &ModelDraw, source: &Bound, plane: (usize, usize)) -> ([f32; 4], [i32; 2]) {
    let (ox, oy) = source.texture_origin;
    let (iw, ih) = source.texture_size;
    let sx = plane.0 as f64 / iw as f64;
    let sy = plane.1 as f64 / ih as f64;
    let step_x = m.source.width / m.target.width as f64 * sx;
    let step_y = m.source.height / m.target.height as f64 * sy;
    let span = [
        ((m.source.x - ox as f64) * sx) as f32,
        ((m.source.y - oy as f64) * sy) as f32,
        step_x as f32,
        step_y as f32,
    ];
    let samples = [step_x, step_y].map(|s| area_samples(s) as i32);
    (span, samples)
}

/// Sets an Area write's uniforms: each bound plane's footprint
/// ([`area_plane`]), size and samples.
fn set_area_uniforms(u: &ModelUniforms, m: &ModelDraw, source: &Bound) {
    let mut samples = [0; 4];
    for (p, &size) in source.plane_sizes.iter().enumerate() {
        if size.0 == 0 || size.1 == 0 {
            continue; // no such plane
        }
        let (span, n) = area_plane(m, source, size);
        glutil::uniform_4f(u.area[p], &span);
        glutil::uniform_2f(u.texels[p], size.0 as f32, size.1 as f32);
        samples[2 * p..2 * p + 2].copy_from_slice(&n);
    }
    glutil::uniform_4i(u.samples, &samples);
}

/// Texture unit of the model sampling pass's texture in the packing pass
/// (past the source's two).
const VALUES_UNIT: u32 = 2;

/// Uses `program` with `source`'s textures bound and its sampling uniforms
/// set; returns the texture target the source is bound at.
fn bind_source(program: &Program, source: &Bound) -> u32 {
    let offsets = source.color.ycbcr_offsets();
    let matrix = color::matrix_columns(source.color);
    glutil::use_program(program.id);
    let texture_target = if source.external {
        TEXTURE_EXTERNAL_OES
    } else {
        gl::TEXTURE_2D
    };
    for (unit, &texture) in source.textures.iter().enumerate() {
        if texture != 0 {
            glutil::active_texture(unit as u32);
            glutil::bind_texture(texture_target, texture);
        }
    }
    glutil::active_texture(0);
    glutil::uniform_1i(program.tex0, 0);
    glutil::uniform_1i(program.tex1, 1);
    glutil::uniform_1i(program.swap_rb, i32::from(source.swap_rb));
    glutil::uniform_mat3(program.yuv, &matrix);
    glutil::uniform_3f(program.yuv_offset, &offsets);
    texture_target
}

/// Draws `plan`'s rectangles into the bound framebuffer with the program in
/// use, each over its viewport, a shared texel through a colour mask.
fn draw_rects(program: &Program, plan: &DrawPlan) {
    for r in plan.rects.iter() {
        let channel = match r.pack {
            Pack::Channel(c) => c as i32,
            Pack::Rgba | Pack::Rgb | Pack::Model(_) => 0,
        };
        glutil::uniform_1i(program.channel, channel);
        glutil::uniform_2i(program.origin, r.x as i32, r.y as i32);
        glutil::viewport(r.x as i32, r.y as i32, r.width as i32, r.height as i32);
        if !r.whole_texels() {
            // A texel shared with another batch element: its bytes only.
            let (a, b) = r.bytes;
            let keep = |byte: usize| (a..b).contains(&byte);
            glutil::color_mask([keep(0), keep(1), keep(2), keep(3)]);
        }
        glutil::draw_triangle();
        if !r.whole_texels() {
            glutil::color_mask([true; 4]);
        }
    }
}

fn common_state() {
    glutil::disable(gl::BLEND);
    glutil::disable(gl::DEPTH_TEST);
    glutil::disable(gl::SCISSOR_TEST);
}

/// Draws every rectangle of an image `plan` into `target`, sampling `source`.
pub(crate) fn draw(
    program: &Program,
    plan: &DrawPlan,
    source: &Bound,
    target: &Prepared,
) -> Result<()> {
    let (out_w, out_h) = (plan.out.0 as f32, plan.out.1 as f32);
    glutil::bind_framebuffer(gl::DRAW_FRAMEBUFFER, target.framebuffer);
    common_state();
    let texture_target = bind_source(program, source);
    glutil::uniform_4f(program.crop, &source.crop);
    glutil::uniform_2f(program.out, out_w, out_h);
    draw_rects(program, plan);
    glutil::bind_texture(texture_target, 0);
    glutil::check("glDrawArrays (convert)")
}

/// The model sampling pass's render target: an `RGBA32UI` texture of the
/// model's size (a pixel's three output values as float bits) and its
/// framebuffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModelValues {
    pub texture: u32,
    pub framebuffer: u32,
}

/// Draws a model write in two passes: `sample` renders every model pixel
/// of `m` once into `values` (one source sample each), then `pack` writes
/// `plan`'s rectangles of `target` from `values` alone.
pub(crate) fn draw_model(
    sample: &Program,
    pack: &Program,
    values: ModelValues,
    plan: &DrawPlan,
    m: &ModelDraw,
    source: &Bound,
    target: &Prepared,
) -> Result<()> {
    common_state();
    glutil::bind_framebuffer(gl::DRAW_FRAMEBUFFER, values.framebuffer);
    let texture_target = bind_source(sample, source);
    let u = sample.model;
    let t = m.target;
    glutil::uniform_4f(u.src, &model_source(m, source));
    glutil::uniform_4f(
        u.target,
        &[t.x as f32, t.y as f32, t.width as f32, t.height as f32],
    );
    glutil::uniform_mat3(u.affine, &m.matrix);
    glutil::uniform_3f(u.bias, &m.bias);
    glutil::uniform_3f(u.pad, &m.pad);
    glutil::uniform_2f(u.range, m.range.0, m.range.1);
    if m.resample == ModelResample::Area {
        set_area_uniforms(&u, m, source);
    }
    glutil::viewport(0, 0, m.size.0 as i32, m.size.1 as i32);
    glutil::draw_triangle();
    glutil::bind_texture(texture_target, 0);

    glutil::bind_framebuffer(gl::DRAW_FRAMEBUFFER, target.framebuffer);
    glutil::use_program(pack.id);
    glutil::active_texture(VALUES_UNIT);
    glutil::bind_texture(gl::TEXTURE_2D, values.texture);
    glutil::active_texture(0);
    let u = pack.model;
    glutil::uniform_1i(u.values, VALUES_UNIT as i32);
    glutil::uniform_2i(u.size, m.size.0 as i32, m.size.1 as i32);
    glutil::uniform_1i(u.grid, m.grid_width as i32);
    glutil::uniform_1i(u.first, m.first);
    draw_rects(pack, plan);
    glutil::active_texture(VALUES_UNIT);
    glutil::bind_texture(gl::TEXTURE_2D, 0);
    glutil::active_texture(0);
    glutil::check("glDrawArrays (model write)")
}
