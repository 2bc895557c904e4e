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
/// samples the source once, writing its three output values (`u_affine *
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
        // Half-pixel centres: the bilinear sampler subtracts the other 0.5.
        vec2 p = (m - u_target.xy + 0.5) / u_target.zw;
        v = u_affine * sample_rgb(u_src.xy + p * u_src.zw) + u_bias;
#if ROUND == 1
        v = clamp(sign(v) * floor(abs(v) + 0.5), u_range.x, u_range.y); // half away from 0
#endif
    }
    o_values = uvec4(floatBitsToUint(v), 0u);
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
/// 2), or a model write's sampling pass (`SAMPLE_FLOAT`, `SAMPLE_ROUNDED`).
fn writer(pack: i32) -> String {
    use crate::model::draw_plan::SAMPLE_ROUNDED;
    if crate::model::draw_plan::is_sample_code(pack) {
        let round = i32::from(pack == SAMPLE_ROUNDED);
        format!("#define ROUND {round}\n{SAMPLE_MODEL}")
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
         precision highp float;\nprecision highp int;\n{SAMPLE_PLANES}{}",
        writer(pack)
    )
}

/// The fragment shader sampling an imported EGLImage as an external texture
/// (`kind` 1 for grey, else 0).
pub fn fragment_external(kind: i32, pack: i32) -> String {
    format!(
        "#version 300 es\n#extension GL_OES_EGL_image_external_essl3 : require\n\
         #define KIND {kind}\nprecision highp float;\nprecision highp int;\n\
         {SAMPLE_EXTERNAL}{}",
        writer(pack)
    )
}
