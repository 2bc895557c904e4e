//! The GLSL ES 3.00 sources of the conversion programs.
//!
//! One fragment shader writes the destination's *bytes*: the render target is
//! the destination buffer seen as a grid of RGBA8 texels (row stride / 4 texels
//! wide), and each fragment computes the four bytes of its texel — one RGBA
//! pixel, four bytes of a packed RGB row, or one channel of four pixels of a
//! planar RGB plane. So RGB, RGBA and planar RGB all render and read back as
//! plain RGBA8, which every GLES 3 implementation renders to and reads back.
//! Model inputs (`f32`, `f16`, `i8`, `u8`) are written the same way, the
//! texel's bytes being the elements' bytes, in two passes so that each model
//! pixel samples the source once: `SAMPLE_MODEL` writes every model pixel's
//! three values into an integer texture of the model's size, `PACK_MODEL`
//! packs them into the destination's texels with `texelFetch`.

/// A full-viewport triangle from `gl_VertexID`; no vertex buffers.
pub const VERTEX: &str = "#version 300 es
void main() {
    vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
";

/// How the source is sampled when the GPU sees its planes as textures
/// (memory, shared memory and PBO sources, uploaded each frame).
const SAMPLE_PLANES: &str = "
// highp: samplers default to lowp, which drivers may run in 16-bit floats
// (Mesa does: 11 bits of mantissa, a tenth of an 8-bit step at 255).
precision highp sampler2D;
uniform sampler2D u_tex0;
uniform sampler2D u_tex1;
// KIND: 0 RGB(A) texture, 1 grey, 2 NV12/NV16 (Y = tex0.r, CbCr = tex1.rg),
// 3 YUYV (Y = tex0.r, Cb = tex1.g, Cr = tex1.a), 4 UYVY (Y = tex0.g, Cb = tex1.r, Cr = tex1.b)
uniform bool u_swap_rb;
uniform mat3 u_yuv;
uniform vec3 u_yuv_offset;

// Bilinear filtering done in float from four texel fetches: the same on every
// GPU (fixed-function filters round their weights to as few as 8 bits, which
// the YUV matrix then multiplies by up to 2).
vec4 bilinear(sampler2D s, vec2 uv) {
    ivec2 size = textureSize(s, 0);
    vec2 p = uv * vec2(size) - 0.5;
    vec2 f = fract(p);
    ivec2 i = ivec2(floor(p));
    ivec2 hi = size - 1;
    vec4 a = texelFetch(s, clamp(i, ivec2(0), hi), 0);
    vec4 b = texelFetch(s, clamp(i + ivec2(1, 0), ivec2(0), hi), 0);
    vec4 c = texelFetch(s, clamp(i + ivec2(0, 1), ivec2(0), hi), 0);
    vec4 d = texelFetch(s, clamp(i + ivec2(1, 1), ivec2(0), hi), 0);
    return mix(mix(a, b, f.x), mix(c, d, f.x), f.y);
}

vec3 sample_rgb(vec2 uv) {
#if KIND == 0
    vec3 c = bilinear(u_tex0, uv).rgb;
    return u_swap_rb ? c.bgr : c;
#elif KIND == 1
    return vec3(bilinear(u_tex0, uv).r);
#else
#if KIND == 2
    vec3 yuv = vec3(bilinear(u_tex0, uv).r, bilinear(u_tex1, uv).rg);
#elif KIND == 3
    vec4 c = bilinear(u_tex1, uv);
    vec3 yuv = vec3(bilinear(u_tex0, uv).r, c.g, c.a);
#else
    vec4 c = bilinear(u_tex1, uv);
    vec3 yuv = vec3(bilinear(u_tex0, uv).g, c.r, c.b);
#endif
    return clamp(u_yuv * (yuv - u_yuv_offset), 0.0, 1.0);
#endif
}
";

/// How an imported dma-buf is sampled: the driver converts YUV to RGB
/// (colour space and range from the import's hints) and filters (zink on
/// lavapipe samples NV12 nearest). Clamped to 0..1 as the uploaded path
/// is: the driver need not clamp (lavapipe does not), and a model input's
/// float output would carry the excess (blue of -16/255 under dark
/// yellow-greens).
const SAMPLE_EXTERNAL: &str = "
uniform highp samplerExternalOES u_tex0;

vec3 sample_rgb(vec2 uv) {
#if KIND == 1
    return vec3(clamp(texture(u_tex0, uv).r, 0.0, 1.0)); // grey: an R8 image samples as (r, 0, 0)
#else
    return clamp(texture(u_tex0, uv).rgb, 0.0, 1.0);
#endif
}
";

/// Writes the destination bytes of one texel.
const WRITE: &str = "
uniform vec4 u_crop;     // source rectangle, normalised: x, y, width, height
uniform vec2 u_out;      // output size in pixels
uniform ivec2 u_origin;  // the target texel holding the output's first byte
// PACK: 0 RGBA pixel, 1 four bytes of packed RGB, 2 one channel of four pixels
uniform int u_channel;
out vec4 o_color;

vec3 pixel(int x, int y) {
    vec2 p = (vec2(float(x), float(y)) + 0.5) / u_out;
    return sample_rgb(u_crop.xy + p * u_crop.zw);
}

void main() {
    ivec2 t = ivec2(gl_FragCoord.xy) - u_origin;
#if PACK == 0
    o_color = vec4(pixel(t.x, t.y), 1.0);
#elif PACK == 1
    {
        int first = t.x * 4;
        int p = first / 3;
        int s = first - 3 * p;
        vec3 a = pixel(p, t.y);
        vec3 b = pixel(p + 1, t.y);
        float v[6] = float[6](a.r, a.g, a.b, b.r, b.g, b.b);
        o_color = vec4(v[s], v[s + 1], v[s + 2], v[s + 3]);
    }
#else
    int x = t.x * 4;
    o_color = vec4(pixel(x, t.y)[u_channel], pixel(x + 1, t.y)[u_channel],
                   pixel(x + 2, t.y)[u_channel], pixel(x + 3, t.y)[u_channel]);
#endif
}
";

/// The sampling pass of a model write: each fragment is one model pixel
/// (the render target is an `RGBA32UI` texture of the model's size) and
/// samples the source once (with `AREA` defined, averages its footprint:
/// `AREA_COMMON`), writing its three output values (`u_affine *
/// rgb + u_bias`, rounded and clamped when `ROUND` is 1, or the pad) as
/// float bits. The packing pass (`PACK_MODEL`) then reads them back exactly.
/// Integer textures are colour-renderable in every GLES 3.0; float ones are
/// not (`EXT_color_buffer_float`).
const SAMPLE_MODEL: &str = "
uniform vec4 u_src;      // sampled source rectangle, normalised to the bound texture
uniform vec4 u_target;   // model pixels it fills: x, y, width, height
uniform mat3 u_affine;   // value[c] = (u_affine * rgb)[c] + u_bias[c], rgb in 0..1
uniform vec3 u_bias;
uniform vec3 u_pad;      // the letterbox bars' values
uniform vec2 u_range;    // integer values are rounded and clamped to it
layout(location = 0) out uvec4 o_values;

void main() {
    vec2 m = vec2(ivec2(gl_FragCoord.xy)); // the model pixel
    vec3 v;
    if (any(lessThan(m, u_target.xy)) || any(greaterThanEqual(m, u_target.xy + u_target.zw))) {
        v = u_pad;
    } else {
#ifdef AREA
        v = u_affine * area_rgb(m - u_target.xy) + u_bias;
#else
        // Half-pixel centres: the bilinear sampler subtracts the other 0.5.
        vec2 p = (m - u_target.xy + 0.5) / u_target.zw;
        v = u_affine * sample_rgb(u_src.xy + p * u_src.zw) + u_bias;
#endif
#if ROUND == 1
        v = clamp(sign(v) * floor(abs(v) + 0.5), u_range.x, u_range.y); // half away from 0
#endif
    }
    o_values = uvec4(floatBitsToUint(v), 0u);
}
";

/// Area resampling (a model write with `ModelResample::Area`), common to
/// both samplers: a model pixel's footprint in one plane, per axis, as
/// pairs of adjacent texels, each pair one bilinear sample.
///
/// Footprints are in the plane's texels (texel `i` spans `[i, i + 1)`):
/// model pixel `o` (relative to the target) covers `[e0, e0 + len)` with
/// `e0 = start + o * len`, `start` and `len` per plane and axis from the
/// uniforms (`u_areaN`: start x, y and len x, y), so each plane has its own
/// footprint (NV12's chroma half the luma's). Of the texels it covers from
/// `floor(e0)` on, texels `i` and `i + 1` weigh `a` and `b` (the parts
/// covered): their weighted sum is `a + b` times one bilinear sample at `b
/// / (a + b)` of the way from `i`'s centre to `i + 1`'s, so a separable
/// footprint of `kx`x`ky` texels is `ceil(kx / 2) * ceil(ky / 2)` samples,
/// each weighing the product of its axes' sums. `u_samples` holds the
/// samples per axis (plane 0 in `xy`, plane 1 in `zw`), which is half the
/// texels a footprint can touch (`ceil(len) + 1`) rounded up, at most
/// `AREA_MAX` (the loop bound); or 0 on an axis the plane is not shrunk
/// along (`len <= 1`), where it takes one sample, the bilinear tap at the
/// footprint's centre, as the CPU path does.
///
/// Each pair is filtered in float from four texel fetches (`bilinear`, as
/// the bilinear path does), not by the texture unit: a hardware filter
/// rounds (Mesa's llvmpipe filters 8-bit textures in 8-bit fixed point),
/// which put a plane's footprint mean about a step off and, through the YUV
/// matrix, NV12 and YUYV 3 steps off the CPU path; filtered in float they
/// are within its rounding (1 step, 0.0004 in `f32`), and on llvmpipe
/// faster too.
const AREA_COMMON: &str = "
uniform vec4 u_area0;    // plane 0 (tex0): footprint start x, y and length x, y, in its texels
uniform vec4 u_area1;    // plane 1 (tex1), the same
uniform vec2 u_texels0;  // plane 0's size in texels
uniform vec2 u_texels1;
uniform ivec4 u_samples; // bilinear samples across, down: plane 0 xy, plane 1 zw

// Sample `j` of one axis of footprint [e0, e0 + len) that takes `n`
// samples: its position in texels and its weight (the two texels' coverage).
vec2 area_tap(float e0, float len, int n, int j) {
    if (n == 0) {
        return vec2(e0 + 0.5 * len, 1.0); // not shrunk: the centre's bilinear tap
    }
    float e1 = e0 + len;
    float i = max(floor(e0), 0.0) + float(2 * j);
    float a = max(min(e1, i + 1.0) - max(e0, i), 0.0);
    float b = max(min(e1, i + 2.0) - max(e0, i + 1.0), 0.0);
    float w = a + b;
    return vec2(i + 0.5 + (w > 0.0 ? b / w : 0.0), w);
}
";

/// [`AREA_COMMON`]'s footprint mean over the uploaded planes (`texture`
/// with the upload textures' linear filter at level 0), and the pixel's
/// RGB from the planes' means as `sample_rgb` converts its samples.
const AREA_PLANES: &str = "
vec4 area(sampler2D s, vec4 span, vec2 texels, ivec2 n, vec2 o) {
    vec2 e0 = span.xy + o * span.zw;
    int nx = max(n.x, 1);
    int ny = max(n.y, 1);
    vec2 xs[AREA_MAX];
    for (int j = 0; j < AREA_MAX; j++) {
        if (j >= nx) break;
        xs[j] = area_tap(e0.x, span.z, n.x, j);
    }
    vec4 sum = vec4(0.0);
    float total = 0.0;
    for (int k = 0; k < AREA_MAX; k++) {
        if (k >= ny) break;
        vec2 ty = area_tap(e0.y, span.w, n.y, k);
        for (int j = 0; j < AREA_MAX; j++) {
            if (j >= nx) break;
            float w = xs[j].y * ty.y;
            sum += w * bilinear(s, vec2(xs[j].x, ty.x) / texels);
            total += w;
        }
    }
    return sum / total;
}

vec3 area_rgb(vec2 o) {
#if KIND == 0
    vec3 c = area(u_tex0, u_area0, u_texels0, u_samples.xy, o).rgb;
    return u_swap_rb ? c.bgr : c;
#elif KIND == 1
    return vec3(area(u_tex0, u_area0, u_texels0, u_samples.xy, o).r);
#else
    vec4 l = area(u_tex0, u_area0, u_texels0, u_samples.xy, o);
    vec4 c = area(u_tex1, u_area1, u_texels1, u_samples.zw, o);
#if KIND == 2
    vec3 yuv = vec3(l.r, c.rg);
#elif KIND == 3
    vec3 yuv = vec3(l.r, c.g, c.a);
#else
    vec3 yuv = vec3(l.g, c.r, c.b);
#endif
    return clamp(u_yuv * (yuv - u_yuv_offset), 0.0, 1.0);
#endif
}
";

/// [`AREA_COMMON`]'s footprint mean over an imported image, whose driver
/// converts YUV to RGB and filters: one plane as far as the shader sees,
/// so the footprint is in luma texels (`u_area0`) and the chroma is
/// whatever the driver's sample at each point gives, an approximation of
/// the per-plane footprint the uploaded path takes (close where the driver
/// filters chroma linearly; where it samples nearest, as zink on lavapipe
/// does, each sample takes the chroma texel nearest it). Each sample is
/// clamped to 0..1 before it is weighed, as a bilinear sample is.
const AREA_EXTERNAL: &str = "
vec3 area_rgb(vec2 o) {
    vec2 e0 = u_area0.xy + o * u_area0.zw;
    ivec2 n = u_samples.xy;
    int nx = max(n.x, 1);
    int ny = max(n.y, 1);
    vec2 xs[AREA_MAX];
    for (int j = 0; j < AREA_MAX; j++) {
        if (j >= nx) break;
        xs[j] = area_tap(e0.x, u_area0.z, n.x, j);
    }
    vec3 sum = vec3(0.0);
    float total = 0.0;
    for (int k = 0; k < AREA_MAX; k++) {
        if (k >= ny) break;
        vec2 ty = area_tap(e0.y, u_area0.w, n.y, k);
        for (int j = 0; j < AREA_MAX; j++) {
            if (j >= nx) break;
            float w = xs[j].y * ty.y;
#if KIND == 1
            vec3 c = vec3(texture(u_tex0, vec2(xs[j].x, ty.x) / u_texels0).r);
#else
            vec3 c = texture(u_tex0, vec2(xs[j].x, ty.x) / u_texels0).rgb;
#endif
            sum += w * clamp(c, 0.0, 1.0);
            total += w;
        }
    }
    return sum / total;
}
";

/// The packing pass of a model write: the model-input elements of one
/// texel, one `f32` (`floatBitsToUint`), two `f16` (`packHalf2x16`) or four
/// `u8`/`i8`, as the texel's four bytes, each element fetched from the
/// sampling pass's texture (no source sampling here). Grid texel `g` holds
/// the grid's elements `g * PER .. g * PER + PER`, which are the batch
/// element's from `u_first` on; where a texel is shared with a neighbouring
/// batch element (odd sizes), the components outside this one are fetched
/// clamped and masked off.
const PACK_MODEL: &str = "#version 300 es
precision highp float;
precision highp int;
precision highp usampler2D;
uniform usampler2D u_values; // the sampling pass: a pixel's 3 values as float bits
uniform ivec2 u_size;        // model width, height
uniform int u_grid;          // texels per grid row
uniform int u_first;         // grid elements before the batch element's first
out vec4 o_color;

// DTYPE: 0 u8, 1 i8, 2 f16, 3 f32; LAYOUT: 0 NCHW, 1 NHWC
#if DTYPE == 3
#define PER 1
#elif DTYPE == 2
#define PER 2
#else
#define PER 4
#endif

// Element `e` of the batch element.
float value(int e) {
#if LAYOUT == 0
    int hw = u_size.x * u_size.y;
    int c = e / hw;
    int pix = e - c * hw;
#else
    int pix = e / 3;
    int c = e - 3 * pix;
#endif
    int y = pix / u_size.x;
    return uintBitsToFloat(texelFetch(u_values, ivec2(pix - y * u_size.x, y), 0)[c]);
}

void main() {
    ivec2 t = ivec2(gl_FragCoord.xy);
    // The batch element's index of component 0 (below 0 or past `last` only
    // in a shared texel, whose other components are masked off).
    int k = (t.y * u_grid + t.x) * PER - u_first;
    int last = 3 * u_size.x * u_size.y - 1;
    float v[4] = float[4](0.0, 0.0, 0.0, 0.0);
    for (int j = 0; j < PER; j++) {
        v[j] = value(clamp(k + j, 0, last));
    }
#if DTYPE == 3
    uint u = floatBitsToUint(v[0]);
#elif DTYPE == 2
    uint u = packHalf2x16(vec2(v[0], v[1]));
#else
    uint u = 0u;
    for (int j = 0; j < 4; j++) {
        u |= (uint(int(v[j]) + 256) & 255u) << uint(8 * j); // i8: two's complement byte
    }
#endif
    o_color = vec4(uvec4(u, u >> 8, u >> 16, u >> 24) & 255u) / 255.0;
}
";

/// The defines and writer of destination `pack`: an image's texels (0 to
/// 2), or a model write's sampling pass (`SAMPLE_FLOAT`, `SAMPLE_ROUNDED`
/// and their Area codes).
fn writer(pack: i32) -> String {
    use crate::model::draw_plan::{is_area_code, is_rounded_code};
    if crate::model::draw_plan::is_sample_code(pack) {
        let round = i32::from(is_rounded_code(pack));
        // Defined only for Area: a bilinear program's text is what it was.
        let area = if is_area_code(pack) {
            "#define AREA 1\n"
        } else {
            ""
        };
        format!("#define ROUND {round}\n{area}{SAMPLE_MODEL}")
    } else {
        format!("#define PACK {pack}\n{WRITE}")
    }
}

/// The fragment shader of a model write's packing pass, model pack code
/// `code` (`pack_code`): it reads the sampling pass's texture only.
pub fn fragment_model_pack(code: i32) -> String {
    let (dtype, layout) = crate::model::draw_plan::unpack_code(code);
    PACK_MODEL.replacen(
        "precision highp float;",
        &format!("#define DTYPE {dtype}\n#define LAYOUT {layout}\nprecision highp float;"),
        1,
    )
}

/// The fragment shader sampling planes uploaded as textures: source `kind`
/// (see `KIND` above), destination `pack`. Each pair is its own program, so no
/// shader branches on a uniform (software rasterisers run both sides).
pub fn fragment_planes(kind: i32, pack: i32) -> String {
    format!(
        "#version 300 es\n#define KIND {kind}\n\
         precision highp float;\nprecision highp int;\n{SAMPLE_PLANES}{}{}",
        area_code(pack, AREA_PLANES),
        writer(pack)
    )
}

/// The Area functions for a sampling pass of `pack` (`AREA_COMMON` with
/// its sampler's `area` and `area_rgb`), empty for any other.
fn area_code(pack: i32, sampler: &str) -> String {
    if crate::model::draw_plan::is_area_code(pack) {
        let max = crate::model::AREA_MAX_SAMPLES;
        format!("#define AREA_MAX {max}\n{AREA_COMMON}{sampler}")
    } else {
        String::new()
    }
}

/// The fragment shader sampling an imported EGLImage as an external texture
/// (`kind` 1 for grey, else 0).
pub fn fragment_external(kind: i32, pack: i32) -> String {
    format!(
        "#version 300 es\n#extension GL_OES_EGL_image_external_essl3 : require\n\
         #define KIND {kind}\nprecision highp float;\nprecision highp int;\n\
         {SAMPLE_EXTERNAL}{}{}",
        area_code(pack, AREA_EXTERNAL),
        writer(pack)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::draw_plan::{SAMPLE_FLOAT, SAMPLE_FLOAT_AREA, SAMPLE_ROUNDED};

    /// A bilinear sampling pass defines no `AREA` and has no Area uniform or
    /// function: once preprocessed, its text is what it was before Area
    /// existed (the same program, the same bits); an Area one has them.
    #[test]
    fn only_area_programs_carry_the_area_code() {
        for kind in 0..5 {
            for code in [SAMPLE_FLOAT, SAMPLE_ROUNDED] {
                let text = fragment_planes(kind, code);
                assert!(!text.contains("#define AREA"), "{text}");
                assert!(!text.contains("u_area") && !text.contains("area_tap"));
            }
            let text = fragment_planes(kind, SAMPLE_FLOAT_AREA);
            assert!(text.contains("#define AREA 1") && text.contains("#define AREA_MAX 16"));
        }
        assert!(!fragment_external(0, SAMPLE_FLOAT).contains("u_area"));
        assert!(fragment_external(0, SAMPLE_FLOAT_AREA).contains("area_rgb"));
    }
}
