"""`Frame.jpeg()`: JPEG bytes straight from the frame's YCbCr planes."""

import io
import threading

import numpy as np
import pytest

import zerocam
from zerocam import Camera

Image = pytest.importorskip("PIL.Image")


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def rgb_of(frame):
    """The frame as RGB: zerocam's CPU preprocessor at the frame's own size
    (its YCbCr read with the frame's colour spec)."""
    mi = zerocam.ModelInput(frame.width, frame.height, layout="nhwc", dtype="uint8")
    pre = zerocam.Preprocessor(mi, device="cpu", ring=1)
    out = pre(frame)
    rgb = np.array(out.numpy() if hasattr(out, "numpy") else out, copy=True)
    del out
    return rgb.reshape(frame.height, frame.width, 3)


@pytest.mark.parametrize("fmt", ["NV12", "NV12M", "YUYV", "UYVY", "NV16", "RGB24", "GREY"])
def test_jpeg_opens_in_pillow_with_the_frames_size(fmt):
    with Camera.pattern(fmt, (320, 240)) as cam:
        with cam.read() as frame:
            data = frame.jpeg()
    assert isinstance(data, bytes) and data[:2] == b"\xff\xd8"
    img = Image.open(io.BytesIO(data))
    assert img.format == "JPEG" and img.size == (320, 240)
    assert img.mode == ("L" if fmt == "GREY" else "RGB")


def test_jpeg_is_the_frames_picture():
    # 1280x720: Pillow's smooth chroma upsampling blends neighbouring bars'
    # chroma at the pattern's saturated edges, a smaller share of a larger
    # frame (docs/encoding.md, "JPEG").
    with Camera.pattern("NV12", (1280, 720)) as cam:
        with cam.read() as frame:
            data = frame.jpeg()
            rgb = rgb_of(frame)
    got = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    assert got.shape == rgb.shape == (720, 1280, 3)
    db = psnr(got, rgb)
    assert db >= 30.0, f"PSNR {db:.1f} dB against the frame's RGB conversion"


def test_quality_is_checked_and_changes_the_size():
    with Camera.pattern("NV12", (320, 240)) as cam:
        with cam.read() as frame:
            low, high = frame.jpeg(quality=10), frame.jpeg(100)
            assert len(low) < len(high)
            assert frame.jpeg() == frame.jpeg(85)
            for bad in (0, 101, -1, 1000):
                with pytest.raises(zerocam.InvalidArgument, match=f"quality {bad} is outside 1..=100"):
                    frame.jpeg(bad)
            with pytest.raises(ValueError):
                frame.jpeg(0)


def test_jpeg_after_release_raises_released():
    with Camera.pattern("NV12", (64, 48)) as cam:
        frame = cam.read()
        frame.release()
        with pytest.raises(zerocam.Released):
            frame.jpeg()


def test_jpeg_releases_the_gil():
    # Threads compressing at once: each has its own encoder, and the
    # results are the single-threaded ones.
    with Camera.pattern("NV12", (640, 480), buffers=4) as cam:
        with cam.read() as frame:
            want = frame.jpeg(80)
            got, errors = [], []

            def work():
                try:
                    for _ in range(5):
                        got.append(frame.jpeg(80))
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            threads = [threading.Thread(target=work) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert not errors and len(got) == 15 and all(g == want for g in got)
