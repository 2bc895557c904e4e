"""Capture from the built-in pattern source (any machine)."""

import errno
import gc
import glob
import os

import numpy as np
import pytest

import zerocam
from zerocam import Camera


@pytest.mark.parametrize("fmt,shapes", [
    ("NV12", [(240, 320), (120, 320)]),
    ("NV12M", [(240, 320), (120, 320)]),
    ("YUYV", [(240, 320, 2)]),
    ("RGB24", [(240, 320, 3)]),
    ("GREY", [(240, 320, 1)]),
])
def test_pattern_frames_as_numpy(fmt, shapes):
    with Camera.pattern(fmt, (320, 240)) as cam:
        assert cam.device == "pattern" and cam.format[1:] == (320, 240)
        seqs = []
        for frame in cam:
            with frame:
                planes = frame.planes
                assert [p.shape for p in planes] == shapes
                assert all(not p.flags.writeable and p.dtype == np.uint8 for p in planes)
                assert frame.width == 320 and frame.height == 240
                seqs.append(frame.sequence)
                del planes
            if len(seqs) == 8:
                break
        assert seqs == list(range(8))
        st = cam.stats()
        assert st["frames"] == 8 and st["dropped"] == 0
        assert st["cache"]["misses"] == st["buffers"] * st["planes"]


def test_planes_are_the_buffer_itself():
    with Camera.pattern("NV12", (64, 32)) as cam:
        with cam.read() as frame:
            y = frame.planes[0]
            t = frame.tensor
            assert t.shape == (48, 64) and t.format == zerocam.PixelFormat.Nv12
            pin = t.pin_host("read")
            assert y.ctypes.data == pin.ptr  # no copy
            assert y.strides[0] == t.row_stride
            # bar colours: BT.601 white bar first
            assert y[0, 0] == 235
            del y


@pytest.mark.parametrize("fmt,spec", [
    ("NV12", ("bt601", "limited")),
    ("YUYV", ("bt601", "limited")),
    ("GREY", ("bt601", "limited")),
    ("RGB24", ("bt601", "full")),
])
def test_frame_color_spec_is_what_the_pattern_draws_with(fmt, spec):
    with Camera.pattern(fmt, (64, 32)) as cam:
        frame = cam.read()
        assert frame.color_spec == spec
        if fmt == "NV12":
            # BT.601 limited red (bar 5 of 8, x 40..48): Y 81, Cb 90, Cr 240.
            y, uv = frame.planes
            assert (y[1, 44], uv[1, 44], uv[1, 45]) == (81, 90, 240)
            del y, uv
        frame.release()
        assert frame.color_spec == spec, "kept after release()"
        with pytest.raises(AttributeError):
            frame.color_spec = ("bt709", "full")


def test_released_frame_raises_and_held_arrays_stay_valid():
    with Camera.pattern("GREY", (64, 32), buffers=3) as cam:
        frame = cam.read()
        kept = frame.planes[0]
        before = kept.copy()
        frame.release()
        assert frame.released
        with pytest.raises(zerocam.Released):
            frame.planes
        with pytest.raises(zerocam.Released):
            frame.tensor
        # capture goes on in the other buffers; ours is not redrawn under `kept`
        for _ in range(6):
            with cam.read() as f:
                assert f.buffer_index != 0
        assert (kept == before).all()
        del kept
        gc.collect()
        seen = set()
        for _ in range(6):
            with cam.read() as f:
                seen.add(f.buffer_index)
        assert 0 in seen  # back in rotation once the array died


def test_holding_every_buffer_is_no_free_buffer():
    with Camera.pattern("NV12", (64, 32), buffers=2) as cam:
        a, b = cam.read(), cam.read()
        with pytest.raises(zerocam.NoFreeBuffer):
            cam.read()
        a.release()
        cam.read().release()
        b.release()


def test_timeout_and_closed_camera():
    cam = Camera.pattern("NV12", (64, 32), fps=1.0)
    cam.read().release()
    with pytest.raises(TimeoutError) as e:
        cam.read(timeout=0.05)
    assert isinstance(e.value, zerocam.Timeout) and e.value.errno == errno.ETIMEDOUT
    assert "pattern: no frame within 50ms" in str(e.value)
    cam.close()
    with pytest.raises(zerocam.Released):
        cam.read()


@pytest.mark.parametrize("kwargs,match", [
    (dict(format="MJPG"), "MJPG"),
    (dict(size=(0, 10)), r"\(0, 10\)"),
    (dict(buffers=1), "buffers 1"),
    (dict(timeout=-1.0), "timeout -1"),
])
def test_bad_arguments_name_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Camera.pattern(**kwargs)


def test_device_errors_carry_errno():
    with pytest.raises(OSError) as e:
        Camera("/dev/video-none")
    assert e.value.errno == 2 and "/dev/video-none" in str(e.value)
    with pytest.raises(ValueError, match='"usb"'):
        Camera("/dev/video-none", memory="usb")
    devices = zerocam.list_devices()
    video = set(glob.glob("/dev/video*"))
    assert {d["path"] for d in devices} <= video
    assert all(set(d) == {"path", "card", "driver", "bus", "api", "formats"} for d in devices)
    if not video:
        assert devices == []


def test_pattern_device_takes_the_arguments_and_refuses_what_it_cannot_do():
    with Camera("pattern", "GREY", (64, 32), fps=None, buffers=3, timeout=0.5) as cam:
        assert cam.device == "pattern" and cam.format == ("GREY", 64, 32)
        cam.read().release()
        assert cam.stats()["buffers"] == 3
    with pytest.raises(zerocam.InvalidArgument, match="Test Pattern.*no controls"):
        Camera("pattern", controls={"Test Pattern": "100% Red"})
    with pytest.raises(zerocam.InvalidArgument, match='"dmabuf".*pattern'):
        Camera("pattern", memory="dmabuf")
    with pytest.raises(ValueError, match="buffers 1"):
        Camera("pattern", buffers=1)


def test_libcamera_needs_the_feature_and_has_no_controls():
    # The published wheels have no libcamera: the capture crate's opener says
    # which cargo feature would open it.
    for device in ("libcamera:Virtual0", "libcamera"):
        with pytest.raises(zerocam.InvalidArgument, match="cargo feature `libcamera`"):
            Camera(device)
    with pytest.raises(zerocam.InvalidArgument, match="controls.*no V4L2 controls"):
        Camera("libcamera:Virtual0", controls={"Brightness": 1})
    with pytest.raises(zerocam.InvalidArgument, match='"dmabuf".*libcamera'):
        Camera("libcamera:Virtual0", memory="dmabuf")


@pytest.mark.skipif(bool(glob.glob("/dev/video*")), reason="a V4L2 camera is present")
def test_no_device_opens_the_pattern_when_no_camera_is_present():
    # device=None: what `zerocam bench` opens with no device, the first
    # camera, else the pattern source.
    with Camera(None, "GREY", (64, 32), buffers=3) as cam:
        assert cam.device == "pattern" and cam.format == ("GREY", 64, 32)
        cam.read().release()
        assert cam.stats()["buffers"] == 3
    with pytest.raises(zerocam.InvalidArgument, match='"dmabuf".*pattern'):
        Camera(None, memory="dmabuf")
    with pytest.raises(zerocam.InvalidArgument, match='pattern: no control named "Test Pattern"'):
        Camera(None, controls={"Test Pattern": "100% Red"})


def test_no_fd_growth_over_300_frames():
    def fds():
        return len(os.listdir("/proc/self/fd"))
    before = fds()
    for _ in range(3):
        with Camera.pattern("NV12M", (64, 32)) as cam:
            for _, frame in zip(range(100), cam):
                with frame:
                    np.asarray(frame.planes[1]).sum()
    gc.collect()
    assert fds() == before


@pytest.mark.parametrize("fmt", ["NV12", "NV16"])
def test_single_buffer_planes_are_split_from_one_map(fmt):
    with Camera.pattern(fmt, (64, 32)) as cam:
        with cam.read() as frame:
            y, uv = frame.planes
            t = frame.tensor
            assert uv.ctypes.data == y.ctypes.data + y.shape[0] * t.row_stride
            assert uv.shape == (t.plane(1).shape[0], 64) and uv.strides == y.strides
            del y, uv
