"""The stamped pattern (`Camera.pattern(..., stamp=True)`, the device
`"pattern:stamp"`): each frame's sequence number and capture time read back
from its pixels by tests/stamp.py's reader, which is not zerocam's, raw and
through a JPEG that Pillow decodes."""

import io
import pathlib
import sys

import numpy as np
import pytest

import zerocam
from zerocam import Camera

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from stamp import read_stamp  # noqa: E402 - after the path it is found on

Image = pytest.importorskip("PIL.Image")


def luma_of(frame):
    """The frame's luma as a 2-D array (its Y plane, or Y of YUYV/UYVY)."""
    plane = frame.planes[0]
    if frame.format == "YUYV":
        return plane[:, :, 0]
    if frame.format == "UYVY":
        return plane[:, :, 1]
    return plane if plane.ndim == 2 else plane[:, :, 0]


def micros(frame):
    return round(frame.timestamp * 1e6) & ((1 << 48) - 1)


@pytest.mark.parametrize("fmt,size", [
    ("NV12", (1280, 720)),
    ("NV12M", (640, 480)),
    ("NV16", (320, 240)),
    ("YUYV", (320, 180)),
    ("UYVY", (200, 150)),
    ("GREY", (64, 48)),
])
def test_every_frame_carries_its_sequence_and_time(fmt, size):
    with Camera.pattern(fmt, size, stamp=True) as cam:
        for _ in range(5):
            with cam.read() as frame:
                got = read_stamp(luma_of(frame))
                assert got is not None, fmt
                assert got[0] == frame.sequence
                assert abs(got[1] - micros(frame)) <= 1


def test_device_name_and_unstamped_frames():
    with Camera("pattern:stamp") as cam:
        assert cam.device == "pattern"
        with cam.read() as frame:
            got = read_stamp(luma_of(frame))
            assert got is not None and got[0] == frame.sequence
    with Camera.pattern("NV12", (640, 480)) as cam:
        with cam.read() as frame:
            assert read_stamp(luma_of(frame)) is None


def test_too_small_for_a_stamp_is_refused():
    with pytest.raises(zerocam.InvalidArgument, match="64x48"):
        Camera.pattern("NV12", (62, 48), stamp=True)


def test_through_jpeg_right_or_unreadable_never_wrong():
    with Camera.pattern("NV12", (640, 480), stamp=True) as cam:
        for quality, must_read in [(85, True), (30, True), (1, False)]:
            with cam.read() as frame:
                data = frame.jpeg(quality=quality)
                want = (frame.sequence, micros(frame))
            luma = np.asarray(Image.open(io.BytesIO(data)).convert("L"))
            got = read_stamp(luma)
            if must_read:
                assert got is not None and got[0] == want[0] and abs(got[1] - want[1]) <= 1
            else:
                assert got is None or (got[0] == want[0] and abs(got[1] - want[1]) <= 1)
            # A mangled picture: the stamp's corner overwritten with noise.
            noisy = luma.copy()
            rng = np.random.default_rng(quality)
            noisy[:96, :256] = rng.integers(0, 256, size=(96, 256), dtype=np.uint8)
            assert read_stamp(noisy) is None
