"""resample="area" on the CPU against its references: OpenCV's INTER_AREA
(within a level on random noise, every size, downscale and mixed), PIL's BOX
where the two agree (whole-number ratios: PIL weighs each source pixel whole),
an NV12 frame against each plane area-averaged by OpenCV then converted, and
what it is for: a fine pattern that bilinear aliases comes out flat."""

import cv2
import numpy as np
import pytest
from PIL import Image

import zerocam
from zerocam import InvalidArgument, ModelInput, Preprocessor

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def rgb_tensor(pixels):
    h, w = pixels.shape[:2]
    t = zerocam.Tensor.image(w, h, zerocam.PixelFormat.Rgb, mem="mem")
    with t.map() as v:
        np.asarray(v)[:] = pixels
    return t


def run(mi, src, **kw):
    with Preprocessor(mi, device="cpu", **kw)(src).map("read") as v:
        return np.array(v)[0]


NOISE = np.random.default_rng(7).integers(0, 256, (720, 1280, 3), dtype=np.uint8)


@pytest.mark.parametrize("size", [(192, 192), (640, 640), (300, 200), (1000, 500), (1280, 360)])
def test_area_is_opencvs_inter_area(size):
    mw, mh = size
    mi = ModelInput(mw, mh, dtype="uint8", layout="nhwc", resample="area")
    got = run(mi, rgb_tensor(NOISE)).astype(int)
    want = cv2.resize(NOISE, size, interpolation=cv2.INTER_AREA).astype(int)
    assert np.abs(got - want).max() <= 1


def test_area_f32_nchw_on_two_threads_is_opencvs_normalized():
    mi = ModelInput(224, 224, mean=MEAN, std=STD, resample="area")
    got = run(mi, rgb_tensor(NOISE), threads=2)
    area = cv2.resize(NOISE.astype(np.float32), (224, 224), interpolation=cv2.INTER_AREA)
    want = ((area / 255 - MEAN) / STD).transpose(2, 0, 1)
    assert np.abs(got - want).max() <= 0.02


def test_whole_number_ratios_are_pils_box():
    mi = ModelInput(320, 180, dtype="uint8", layout="nhwc", resample="area")
    got = run(mi, rgb_tensor(NOISE)).astype(int)
    want = np.asarray(Image.fromarray(NOISE).resize((320, 180), Image.BOX)).astype(int)
    assert np.abs(got - want).max() <= 1


def test_an_nv12_frame_is_each_plane_averaged_then_converted():
    rng = np.random.default_rng(3)
    h, w = 720, 1280
    y = rng.integers(16, 236, (h, w), dtype=np.uint8)
    uv = rng.integers(16, 241, (h // 2, w // 2, 2), dtype=np.uint8)
    t = zerocam.Tensor.image(w, h, zerocam.PixelFormat.Nv12, mem="mem")
    with t.map() as v:
        a = np.asarray(v).reshape(-1)
        a[: w * h] = y.reshape(-1)
        a[w * h:] = uv.reshape(-1)
    mi = ModelInput(192, 160, mean=(0, 0, 0), std=(1 / 255,) * 3, resample="area")
    got = run(mi, t)
    ya = cv2.resize(y.astype(np.float32), (192, 160), interpolation=cv2.INTER_AREA)
    ca = cv2.resize(uv.astype(np.float32), (192, 160), interpolation=cv2.INTER_AREA)
    yl, cb, cr = (ya - 16) * 255 / 219, (ca[..., 0] - 128) * 255 / 224, (ca[..., 1] - 128) * 255 / 224
    rgb = np.stack([yl + 1.402 * cr, yl - 0.344136 * cb - 0.714136 * cr, yl + 1.772 * cb])
    want = np.clip(rgb, 0, 255)
    assert np.abs(got - want).max() <= 1.0


def test_a_fine_pattern_averages_out_with_area_and_aliases_with_bilinear():
    stripes = np.zeros((720, 1280, 3), dtype=np.uint8)
    stripes[:, 1::2] = 255
    src = rgb_tensor(stripes)
    # 8 source columns an output column: four black, four white.
    flat = run(ModelInput(160, 160, dtype="uint8", layout="nhwc", resample="area"), src)
    assert np.abs(flat.astype(float) - 127.5).max() <= 0.5
    # 6.67 a column: 3 or 4 of them white, so 115 to 140, as INTER_AREA has it;
    # bilinear reads 2 of them and swings from black to white.
    area = run(ModelInput(192, 192, dtype="uint8", layout="nhwc", resample="area"), src)
    bilinear = run(ModelInput(192, 192, dtype="uint8", layout="nhwc"), src)
    want = cv2.resize(stripes, (192, 192), interpolation=cv2.INTER_AREA)
    assert np.abs(area.astype(int) - want).max() <= 1
    assert area.max() - area.min() <= 26
    assert bilinear.max() - bilinear.min() > 100


def test_resample_is_named_and_checked():
    mi = ModelInput(8, 8, resample="area")
    assert mi.resample == "area" and ModelInput(8, 8).resample == "bilinear"
    assert "resample='area'" in repr(mi)
    with pytest.raises(InvalidArgument, match='resample "cubic" is not one of'):
        ModelInput(8, 8, resample="cubic")
