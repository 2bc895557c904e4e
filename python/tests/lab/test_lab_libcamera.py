"""zerocam.Camera on libcamera's virtual camera in the kernel lab ("Virtual0",
configured by the lab's guest init: NV12 640x480, colour bars scrolling
left). Marked libcamera: run by python/ci.sh with an extension built with the
cargo feature libcamera in the lab's trixie root (tests/lab/libcamera-build);
the published wheels have no libcamera, and the other lab tests run with the
cp311 wheel (-m "not libcamera")."""

import gc
import os

import numpy as np
import pytest

import zerocam
from zerocam import Camera

pytestmark = pytest.mark.libcamera

CAMERA = "libcamera:Virtual0"
W, H = 640, 480
# The bars' luma from left to right (BT.601 limited: white … black).
BARS = [235, 210, 169, 144, 107, 82, 41, 16]
WAIT = 20.0  # seconds per frame: libcamera under emulation


def fds():
    return len(os.listdir("/proc/self/fd"))


def bars(row):
    """The luma of `row`, runs of at least 8 equal (±2) pixels collapsed; a bar
    cut at the right edge goes on at the left (the pattern scrolls left)."""
    runs = []
    for v in row.tolist():
        if runs and abs(runs[-1][0] - v) <= 2:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    out = [v for v, n in runs if n >= 8]
    if len(out) > 1 and abs(out[0] - out[-1]) <= 2:
        out.pop()
    return out


def is_bars(got):
    """Whether `got` is BARS or a rotation of it, ±2."""
    return len(got) == len(BARS) and any(
        all(abs(a - b) <= 2 for a, b in zip(got, BARS[r:] + BARS[:r])) for r in range(len(BARS))
    )


def check_nv12(frame):
    assert frame.format == "NV12" and (frame.width, frame.height) == (W, H)
    y, uv = frame.planes
    assert y.shape == (H, W) and uv.shape == (H // 2, W)
    for r in (0, H // 2, H - 1):
        assert is_bars(bars(y[r])), (r, bars(y[r]))
    # The bars are grey levels: chroma 128 everywhere.
    assert abs(int(np.median(uv)) - 128) <= 1, np.unique(uv)
    t = frame.tensor
    assert t.memory == "dma" and t.format == zerocam.PixelFormat.Nv12
    del y, uv


def test_reads_frames_from_the_virtual_camera():
    # The first open starts zerocam's libcamera thread and libcamera's
    # process-wide state, which stay: warm up, then count fds.
    with Camera(CAMERA, timeout=WAIT) as cam:
        cam.read().release()
    gc.collect()
    before = fds()
    with Camera(CAMERA, "NV12", (W, H), buffers=4, timeout=WAIT) as cam:
        assert cam.device == CAMERA
        assert cam.format == ("NV12", W, H)
        seqs = []
        for _, frame in zip(range(12), cam):
            with frame:
                check_nv12(frame)
                seqs.append(frame.sequence)
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
        st = cam.stats()
        assert st["frames"] == 12 and st["planes"] == 1
        # One dma-buf per buffer (Y and UV at two offsets): imported once each.
        assert st["cache"]["misses"] == st["buffers"] >= 2
        assert st["cache"]["hits"] == 12 - st["buffers"]
        with pytest.raises(zerocam.InvalidArgument, match="libcamera.*no V4L2 controls"):
            cam.set_control("Brightness", 1)
        with pytest.raises(zerocam.InvalidArgument, match="not a publisher"):
            cam.reconnect()
    gc.collect()
    assert fds() == before


def test_first_libcamera_camera_and_none_pick_the_virtual_camera():
    # "libcamera": the first libcamera camera; None: a libcamera camera before
    # vivid's /dev/video0, as `zerocam bench` with no device picks.
    for device in ("libcamera", None):
        with Camera(device, timeout=WAIT) as cam:
            assert cam.device == CAMERA, device
            with cam.read() as frame:
                check_nv12(frame)


def test_bad_arguments_for_a_libcamera_camera():
    with pytest.raises(zerocam.Error, match="no camera \"Nope0\".*Virtual0"):
        Camera("libcamera:Nope0")
    with pytest.raises(zerocam.Error, match="adjusted"):
        Camera(CAMERA, "NV12", (1000, 1002))
    with pytest.raises(zerocam.Error, match="frame rate.*not supported for libcamera"):
        Camera(CAMERA, fps=30.0)
    with pytest.raises(zerocam.InvalidArgument, match="controls.*no V4L2 controls"):
        Camera(CAMERA, controls={"Brightness": 1})
    with pytest.raises(zerocam.InvalidArgument, match='"dmabuf".*libcamera'):
        Camera(CAMERA, memory="dmabuf")
    # After all of that the camera is free again.
    with Camera(CAMERA, timeout=WAIT) as cam:
        cam.read().release()
