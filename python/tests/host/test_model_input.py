"""zerocam.ModelInput and zerocam.Preprocessor on the host: values against a
small numpy reference, shapes and dtypes, zero copy, the ring, letterbox
mapping, the device choice (llvmpipe here: "auto" takes the CPU), the
pattern camera, and every bad input."""

import gc
import math
import pathlib
import re

import numpy as np
import pytest

import zerocam
from zerocam import Camera, InvalidArgument, ModelInput, NoFreeBuffer, Preprocessor

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


# --- references -------------------------------------------------------------


def rgb_tensor(w, h, seed=0, smooth=False):
    """A `w`x`h` RGB tensor in heap memory and its pixels as a numpy array."""
    rng = np.random.default_rng(seed)
    if smooth:
        yy, xx = np.mgrid[0:h, 0:w]
        pixels = np.stack([xx * 3 + yy, yy * 5 + 20, (xx + yy) * 2 + 40], axis=-1) % 200 + 20
        pixels = pixels.astype(np.uint8)
    else:
        pixels = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    t = zerocam.Tensor.image(w, h, zerocam.PixelFormat.Rgb, mem="mem")
    with t.map() as v:
        np.asarray(v)[:] = pixels
    return t, pixels


def resample(rgb, mw, mh, source=None, target=None, pad=(0, 0, 0)):
    """Bilinear resampling with half-pixel centres of `source` (x, y, w, h,
    fractional) of `rgb` into `target` (x, y, w, h) of an `mw`x`mh` image
    whose other pixels hold `pad`; edges clamped. Pixel values, float64."""
    h, w = rgb.shape[:2]
    sx, sy, sw, sh = source or (0, 0, w, h)
    tx, ty, tw, th = target or (0, 0, mw, mh)
    out = np.empty((mh, mw, 3))
    out[:] = pad
    x = sx + (np.arange(tw) + 0.5) * sw / tw - 0.5
    y = sy + (np.arange(th) + 0.5) * sh / th - 0.5
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = (x - x0)[None, :, None], (y - y0)[:, None, None]
    xi = [np.clip(x0 + k, 0, w - 1).astype(int) for k in (0, 1)]
    yi = [np.clip(y0 + k, 0, h - 1).astype(int) for k in (0, 1)]
    f = rgb.astype(np.float64)
    top = f[yi[0]][:, xi[0]] * (1 - fx) + f[yi[0]][:, xi[1]] * fx
    bottom = f[yi[1]][:, xi[0]] * (1 - fx) + f[yi[1]][:, xi[1]] * fx
    out[ty:ty + th, tx:tx + tw] = top * (1 - fy) + bottom * fy
    return out


def model_values(p, mi):
    """The model's tensor (batch 1) for pixel values `p` (H, W, 3, RGB)."""
    if mi.channels == "bgr":
        p = p[..., ::-1]
    mean = np.array(mi.mean or (0, 0, 0))
    std = np.array(mi.std or (1, 1, 1))
    if mi.channels == "bgr":
        mean, std = mean[::-1], std[::-1]
    x = (p / 255 - mean) / std
    if mi.dtype in ("uint8", "int8"):
        lo, hi = (0, 255) if mi.dtype == "uint8" else (-128, 127)
        if mi.scale is not None:
            q = np.round(x / mi.scale) + mi.zero_point
        else:
            q = np.round(p) - (128 if mi.dtype == "int8" else 0)
        x = np.clip(q, lo, hi)
    if mi.layout == "nchw":
        x = x.transpose(2, 0, 1)
    return x[None]


def values(t):
    with t.map("read") as v:
        return np.asarray(v).astype(np.float64)


def ptr(t):
    with t.map("read") as v:
        return v.ptr


def upsample2(c, axis):
    """Doubles `c` along `axis` by bilinear interpolation, samples centre-sited
    (the GPU's and the CPU's chroma rule), edges clamped."""
    n = c.shape[axis]
    pos = (np.arange(2 * n) + 0.5) / 2 - 0.5
    i0 = np.floor(pos).astype(int)
    f = pos - i0
    a = np.take(c, np.clip(i0, 0, n - 1), axis=axis)
    b = np.take(c, np.clip(i0 + 1, 0, n - 1), axis=axis)
    shape = [1] * c.ndim
    shape[axis] = 2 * n
    f = f.reshape(shape)
    return a * (1 - f) + b * f


def nv12_to_rgb(y, uv):
    """BT.601 limited range, from the definitions (float, clipped); chroma
    interpolated to each pixel."""
    y = y.astype(np.float64)
    up = lambda c: upsample2(upsample2(c.astype(np.float64), 0), 1)
    cb = up(uv[:, 0::2]) - 128
    cr = up(uv[:, 1::2]) - 128
    luma = (y - 16) * 255 / 219
    c = 255 / 224
    r = luma + c * 1.402 * cr
    g = luma - c * (1.772 * 0.114 / 0.587) * cb - c * (1.402 * 0.299 / 0.587) * cr
    b = luma + c * 1.772 * cb
    return np.clip(np.stack([r, g, b], axis=-1), 0, 255)


# --- ModelInput --------------------------------------------------------------


def test_model_input_defaults_shape_and_repr():
    mi = ModelInput(640, 480)
    assert (mi.width, mi.height, mi.batch) == (640, 480, 1)
    assert (mi.layout, mi.dtype, mi.fit, mi.channels) == ("nchw", "float32", "stretch", "rgb")
    assert (mi.mean, mi.std, mi.scale, mi.zero_point) == (None, None, None, None)
    assert mi.pad == (114, 114, 114)
    assert mi.shape == (1, 3, 480, 640)
    nhwc = ModelInput(320, 240, layout="nhwc", dtype="uint8", scale=1 / 255, zero_point=0,
                      fit="letterbox", pad=(0, 10, 20), channels="bgr", batch=4)
    assert nhwc.shape == (4, 240, 320, 3)
    assert (nhwc.dtype, nhwc.scale, nhwc.zero_point, nhwc.pad) == ("uint8", 1 / 255, 0, (0, 10, 20))
    assert ModelInput(8, 8, dtype=np.float16).dtype == "float16"
    torch = ModelInput(224, 224, mean=MEAN, std=STD, fit="crop")
    assert torch.mean == MEAN and torch.std == STD
    assert repr(torch) == (
        "ModelInput(224, 224, layout='nchw', dtype='float32', mean=(0.485, 0.456, 0.406), "
        "std=(0.229, 0.224, 0.225), fit='crop', channels='rgb', batch=1)"
    )
    assert "pad=(0, 10, 20)" in repr(nhwc) and "zero_point=0" in repr(nhwc)
    assert ModelInput(8, 8, mean=0.5).std == (1.0, 1.0, 1.0), "a mean alone: std 1"
    with pytest.raises(AttributeError):
        mi.width = 3


# --- values ------------------------------------------------------------------

CASES = [
    dict(mean=MEAN, std=STD),
    dict(mean=MEAN, std=STD, layout="nhwc"),
    dict(dtype="float16", mean=MEAN, std=STD),
    dict(dtype="float32", channels="bgr"),
    dict(dtype="uint8", layout="nhwc"),
    dict(dtype="uint8", mean=0.5, std=0.5, scale=1 / 128, zero_point=128),
    dict(dtype="int8", scale=1 / 255, zero_point=-128, layout="nhwc"),
    dict(dtype="int8", mean=MEAN, std=STD, scale=0.0187, zero_point=-14),
    dict(dtype="int8"),
]


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_values_match_the_numpy_reference(kw):
    t, pixels = rgb_tensor(61, 37, seed=1)
    mi = ModelInput(29, 19, **kw)  # odd sizes, down-scaled
    pre = Preprocessor(mi, device="cpu")
    out = pre(t)
    assert out.shape == mi.shape and out.dtype == mi.dtype and out.memory == "mem"
    want = model_values(resample(pixels, 29, 19), mi)
    tolerance = 1 if mi.dtype in ("uint8", "int8") else 0.02
    assert np.abs(values(out) - want).max() <= tolerance


def test_crop_takes_the_centre_at_the_model_aspect():
    t, pixels = rgb_tensor(80, 40, seed=2)
    mi = ModelInput(24, 24, dtype="uint8", fit="crop")
    out = Preprocessor(mi, device="cpu")(t)
    want = model_values(resample(pixels, 24, 24, source=(20, 0, 40, 40)), mi)
    assert np.abs(values(out) - want).max() <= 1


def test_a_crop_region_of_the_source():
    t, pixels = rgb_tensor(64, 48, seed=3)
    mi = ModelInput(16, 16, mean=MEAN, std=STD)
    pre = Preprocessor(mi, device="cpu")
    out = pre(t, crop=(8, 4, 32, 32))
    want = model_values(resample(pixels[4:36, 8:40], 16, 16), mi)
    assert np.abs(values(out) - want).max() <= 0.02
    assert pre.placement.source == (8, 4, 32, 32)
    assert pre(t, crop=zerocam.Region(8, 4, 32, 32)).shape == (1, 3, 16, 16)


def test_color_spec_of_a_yuv_source():
    grey = zerocam.Tensor.image(16, 16, zerocam.PixelFormat.Nv12, mem="mem")
    with grey.map() as v:
        np.asarray(v)[:] = 128
    pre = Preprocessor(ModelInput(8, 8), device="cpu")
    limited = values(pre(grey))  # BT.601 limited: Y 128 is (128 - 16) * 255 / 219
    assert np.allclose(limited, (128 - 16) / 219, atol=0.005)
    full = values(pre(grey, color=("bt709", "full")))
    assert np.allclose(full, 128 / 255, atol=0.005)
    assert np.array_equal(values(pre(grey, color=("bt601", "limited"))), limited)


# --- zero copy and the ring ----------------------------------------------------


def test_numpy_and_dlpack_read_the_result_without_a_copy():
    t, _ = rgb_tensor(32, 32)
    pre = Preprocessor(ModelInput(16, 16), device="cpu")
    out = pre(t)
    with out.map() as v:
        a = np.asarray(v)
        assert a.ctypes.data == v.ptr
        assert a.shape == (1, 3, 16, 16) and a.dtype == np.float32
    address = a.ctypes.data
    del a  # its read-write map would refuse DLPack's
    d = np.from_dlpack(out)
    assert d.ctypes.data == address
    d[0, 0, 0, 0] = 42.0
    del d
    assert values(out)[0, 0, 0, 0] == 42.0, "one memory"


def test_held_results_use_other_slots_and_a_released_one_is_reused():
    t, _ = rgb_tensor(32, 32)
    pre = Preprocessor(ModelInput(16, 16), device="cpu")
    assert pre.ring == 3
    a = pre(t)
    first = ptr(a)
    b = pre(t)
    assert ptr(b) != first, "a is held: b goes elsewhere"
    assert pre.held == 2
    del a
    c = pre(t)
    assert ptr(c) == first, "a's slot is free again: reused, no allocation"
    del b, c
    for _ in range(10):
        x = pre(t)  # the previous x is held while the next is made
    del x
    assert pre.stats()["tensors_allocated"] == 2
    assert pre.held == 0


@pytest.mark.parametrize("holder", ["tensor", "array", "map", "dlpack"])
def test_a_full_ring_raises_naming_its_depth(holder):
    t, _ = rgb_tensor(32, 32)
    pre = Preprocessor(ModelInput(16, 16), device="cpu", ring=2)

    def hold(result):
        if holder == "tensor":
            return result
        if holder == "array":
            return np.asarray(result.map())  # the array keeps a handle on the slot's tensor
        if holder == "map":
            return result.map()
        return np.from_dlpack(result)

    kept = [hold(pre(t)), hold(pre(t))]
    gc.collect()
    assert pre.held == 2
    with pytest.raises(NoFreeBuffer, match="all 2 results") as e:
        pre(t)
    assert "up to 2 results may be held" in str(e.value)
    assert pre.stats()["tensors_allocated"] == 2, "nothing more allocated"
    kept.pop()
    gc.collect()
    assert pre(t).shape == (1, 3, 16, 16)


# --- placement ------------------------------------------------------------------


def test_letterbox_scale_offsets_and_the_way_back():
    t, pixels = rgb_tensor(128, 72, seed=4)
    mi = ModelInput(64, 64, fit="letterbox", pad=(114, 20, 240), mean=MEAN, std=STD)
    pre = Preprocessor(mi, device="cpu")
    assert pre.placement is None
    out = pre(t)
    p = pre.letterbox
    assert p.scale == (0.5, 0.5) and p.offset == (0, 14)
    assert p.target == (0, 14, 64, 36) and p.source == (0, 0, 128, 72)
    assert p.to_frame(32, 32) == (64, 36)
    assert p.to_frame_box((0, 14, 64, 50)) == (0, 0, 128, 72)
    assert p.to_frame_box([10, 0, 20, 64]) == (20, 0, 40, 72), "clamped to the frame"
    want = model_values(resample(pixels, 64, 64, target=(0, 14, 64, 36), pad=(114, 20, 240)), mi)
    got = values(out)
    assert np.abs(got - want).max() <= 0.02
    assert np.allclose(got[0, :, 0, 0], (np.array([114, 20, 240]) / 255 - MEAN) / STD, atol=1e-5)
    assert repr(p).startswith("Placement(scale=(0.5, 0.5), offset=(0, 14)")
    with pytest.raises(InvalidArgument, match=r"box \(1, 2, 3\) has 3 values"):
        p.to_frame_box((1, 2, 3))


# --- devices -----------------------------------------------------------------------


def test_device_choice_on_this_host():
    mi = ModelInput(16, 16)
    cpu = Preprocessor(mi, device="cpu")
    assert (cpu.device, cpu.device_reason) == ("cpu", "requested")
    auto = Preprocessor(mi)
    assert auto.device == "cpu", "llvmpipe is slower than the CPU path"
    assert auto.device_reason.startswith("software rasterizer: llvmpipe")
    assert "software rasterizer" in repr(auto)
    gpu = Preprocessor(mi, device="gpu")
    assert (gpu.device, gpu.device_reason) == ("gpu", "requested")
    assert gpu.model_input is not None and gpu.model_input.shape == mi.shape


def test_the_gpu_works_on_llvmpipe_and_agrees_with_the_cpu():
    t, pixels = rgb_tensor(64, 48, smooth=True)
    mi = ModelInput(40, 40, mean=MEAN, std=STD, fit="letterbox")
    gpu = Preprocessor(mi, device="gpu")
    g = gpu(t)
    assert g.memory == "pbo" and g.shape == (1, 3, 40, 40)
    c = Preprocessor(mi, device="cpu")(t)
    assert np.abs(values(g) - values(c)).max() <= 0.02
    want = model_values(resample(pixels, 40, 40, target=(0, 5, 40, 30), pad=(114, 114, 114)), mi)
    assert np.abs(values(g) - want).max() <= 0.02
    s = gpu.stats()
    assert (s["gpu_images"], s["gpu_uploads"], s["gpu_imports"]) == (1, 1, 0), "memory: uploaded"
    assert "gpu_imports" not in Preprocessor(mi, device="cpu").stats()
    with g.map() as v:
        assert np.asarray(v).ctypes.data == v.ptr


def test_a_gpu_result_keeps_its_preprocessor_alive():
    t, pixels = rgb_tensor(32, 32, smooth=True)
    mi = ModelInput(16, 16)
    x = Preprocessor(mi, device="gpu")(t)  # nobody keeps the preprocessor
    gc.collect()
    first = x.batch(0)  # a view keeps it too
    del x
    gc.collect()
    assert first.memory == "pbo"
    want = model_values(resample(pixels, 16, 16), mi)[0]
    assert np.abs(values(first) - want).max() <= 0.02, "its GL context still holds the PBO"


# --- the pattern camera -------------------------------------------------------------


def test_rgb_pattern_frames_against_the_reference():
    mi = ModelInput(80, 60, mean=MEAN, std=STD)
    pre = Preprocessor(mi, device="cpu")
    with Camera.pattern("RGB24", (320, 240)) as cam:
        for _ in range(3):
            with cam.read() as frame:
                out = pre(frame)
                pixels = frame.planes[0].copy()
            want = model_values(resample(pixels, 80, 60), mi)
            assert np.abs(values(out) - want).max() <= 0.02
            del out


@pytest.mark.parametrize("fmt", ["NV12", "NV12M", "YUYV", "GREY", "RGB24"])
def test_pattern_frames_of_every_format(fmt):
    pre = Preprocessor(ModelInput(64, 48, dtype="uint8", layout="nhwc"), device="cpu")
    with Camera.pattern(fmt, (320, 240)) as cam:
        with cam.read() as frame:
            out = pre(frame)
        assert frame.released, "the frame is read during the call only"
        a = values(out)
        assert a.shape == (1, 48, 64, 3)
        # The first bar is white, the last black (GREY: limited-range luma
        # read as grey, 235 and 16).
        assert a[0, 30, 2].min() >= 234 and a[0, 30, -3].max() <= 17


def test_nv12_pattern_frame_one_to_one_is_the_bt601_conversion():
    pre = Preprocessor(ModelInput(320, 240, dtype="uint8", layout="nhwc"), device="cpu")
    with Camera.pattern("NV12", (320, 240)) as cam:
        with cam.read() as frame:
            y, uv = frame.planes
            want = nv12_to_rgb(y, uv)
            out = pre(frame, color=("bt601", "limited"))
            del y, uv
    assert np.abs(values(out)[0] - want).max() <= 1


def test_a_frame_is_read_with_its_own_color_spec():
    pre = Preprocessor(ModelInput(64, 48, dtype="uint8", layout="nhwc"), device="cpu")
    with Camera.pattern("NV12", (64, 48)) as cam:
        with cam.read() as frame:
            assert frame.color_spec == ("bt601", "limited")
            own = values(pre(frame))
            named = values(pre(frame, color=frame.color_spec))
            other = values(pre(frame, color=("bt709", "full")))
    assert np.array_equal(own, named)
    assert np.abs(own - other).max() > 10


def test_batches_take_a_list():
    mi = ModelInput(16, 16, batch=2, fit="letterbox")
    pre = Preprocessor(mi, device="cpu")
    (a, pa), (b, pb) = rgb_tensor(32, 16, seed=5), rgb_tensor(16, 32, seed=6)
    out = pre([a, b])
    assert out.shape == (2, 3, 16, 16)
    assert [p.offset for p in pre.placements] == [(0, 4), (4, 0)]
    assert pre.placement.offset == (0, 4)
    got = values(out)
    one = ModelInput(16, 16, fit="letterbox")
    assert np.abs(got[1:] - model_values(resample(pb, 16, 16, target=(4, 0, 8, 16),
                                                  pad=(114, 114, 114)), one)).max() <= 0.02
    with pytest.raises(InvalidArgument, match="batch of 2 image.*1 given"):
        pre(a)


# --- bad input -----------------------------------------------------------------------

BAD_MODEL_INPUTS = [
    (dict(width=0, height=8), "size 0x8 is empty"),
    (dict(width=8, height=0), "size 8x0 is empty"),
    (dict(width=-1, height=8), "width -1 is negative"),
    (dict(batch=0), "batch 0 is empty"),
    (dict(batch=-2), "batch -2 is negative"),
    (dict(std=(0.2, 0, 0.2)), "std of channel 1 is 0"),
    (dict(std=-1.0), "std of channel 0 is -1"),
    (dict(mean=(0.5, math.nan, 0.5)), "mean of channel 1 is NaN"),
    (dict(std=1e-50), "std 1e-50 is below float32's smallest value"),
    (dict(mean=1e39), "mean 1e39 is outside float32's range"),
    (dict(dtype="uint8", scale=1e-60, zero_point=0), "scale 1e-60 is below float32's"),
    (dict(mean=(0.5, 0.5)), "mean has 2 values"),
    (dict(mean=MEAN, std=(0.2, 0.2, 0.2, 0.2)), "std has 4 values"),
    (dict(mean="abc"), "mean abc is not a number"),
    (dict(layout="chw"), "layout \"chw\" is not one of"),
    (dict(dtype="uint16"), "not U16"),
    (dict(dtype="complex"), "dtype \"complex\" is not supported"),
    (dict(fit="fill"), "fit \"fill\" is not one of"),
    (dict(channels="rgba"), "channels \"rgba\" is not one of"),
    (dict(dtype="uint8", scale=0.5), "scale 0.5 without zero_point"),
    (dict(dtype="uint8", zero_point=3), "zero_point 3 without scale"),
    (dict(scale=0.5, zero_point=0), "quantization is for u8 and i8 inputs"),
    (dict(dtype="uint8", scale=0.0, zero_point=0), "quantization scale 0"),
    (dict(dtype="uint8", scale=0.1, zero_point=300), "zero_point 300 is outside uint8"),
    (dict(dtype="int8", scale=0.1, zero_point=128), "zero_point 128 is outside int8"),
    (dict(pad=(1, 2)), "pad has 2 values"),
    (dict(pad=(1, 2, 300)), "has 300: colours are 0..=255"),
]


@pytest.mark.parametrize("kw,message", BAD_MODEL_INPUTS, ids=[m for _, m in BAD_MODEL_INPUTS])
def test_bad_model_inputs_raise_invalid_argument_naming_the_value(kw, message):
    args = dict(width=8, height=8)
    args.update(kw)
    width, height = args.pop("width"), args.pop("height")
    with pytest.raises(InvalidArgument) as e:
        ModelInput(width, height, **args)
    assert isinstance(e.value, ValueError) and isinstance(e.value, zerocam.Error)
    assert message in str(e.value), str(e.value)


def test_bad_preprocessor_arguments_and_sources():
    mi = ModelInput(8, 8)
    with pytest.raises(InvalidArgument, match="device \"tpu\" is not one of"):
        Preprocessor(mi, device="tpu")
    with pytest.raises(InvalidArgument, match="ring depth 0"):
        Preprocessor(mi, ring=0)
    with pytest.raises(InvalidArgument, match="ring -1 is negative"):
        Preprocessor(mi, ring=-1)
    assert Preprocessor(mi, device="cpu", ring=2**62).ring == 2**62, "nothing allocated up front"
    with pytest.raises(TypeError):
        Preprocessor("8x8")
    pre = Preprocessor(mi, device="cpu")
    t, _ = rgb_tensor(32, 16)
    with pytest.raises(InvalidArgument, match="uint8 samples.*float32"):
        pre(zerocam.Tensor((16, 16, 3), "float32", mem="mem"))
    with pytest.raises(TypeError, match="zerocam.Frame or zerocam.Tensor"):
        pre("frame.png")
    with pytest.raises(InvalidArgument, match="crop .* does not lie inside the 32x16 source"):
        pre(t, crop=(24, 0, 16, 16))
    with pytest.raises(InvalidArgument, match="color matrix \"bt2020\""):
        pre(t, color=("bt2020", "limited"))
    with pytest.raises(InvalidArgument, match="color range \"tv\""):
        pre(t, color=("bt709", "tv"))
    with pytest.raises(InvalidArgument, match="color 601 is not None or a"):
        pre(t, color=601)
    planar = zerocam.Tensor.image(16, 16, zerocam.PixelFormat.PlanarRgb, mem="mem")
    with pytest.raises(InvalidArgument, match="PlanarRgb"):
        pre(planar)
    wide = zerocam.Tensor.image(400, 2, zerocam.PixelFormat.Grey, mem="mem")
    with pytest.raises(InvalidArgument, match="400x2 source letterboxed into 8x8"):
        Preprocessor(ModelInput(8, 8, fit="letterbox"), device="cpu")(wide)
    with pytest.raises(InvalidArgument, match="PlanarRgb"):
        Preprocessor(mi, device="gpu")(planar)
    with Camera.pattern("NV12", (64, 48)) as cam:
        frame = cam.read()
        frame.release()
        with pytest.raises(zerocam.Released):
            pre(frame)
    assert pre.stats()["cpu_images"] == 0


def test_the_readme_example_runs():
    """The first code block of python/README.md's "Model inputs", as written."""
    text = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text.split("## Model inputs", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope = {"np": np, "zerocam": zerocam}
    exec(compile(code, "README.md (Model inputs)", "exec"), scope)
    assert scope["inputs"].shape == (1, 3, 640, 640) and scope["inputs"].dtype == np.float32
    assert scope["box"] == (200.0, 120.0, 600.0, 520.0)
    assert scope["pre"].device == "cpu"
