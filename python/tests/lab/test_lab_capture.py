"""zerocam in the kernel lab: vivid capture (both memory modes, single- and
multi-planar), pixel values, dma-buf tensors, fd counts. Run by python/ci.sh
through tests/lab/run."""

import gc
import os

import numpy as np
import pytest

import zerocam
from zerocam import Camera, Tensor

RED = dict(controls={"Test Pattern": "100% Red", "OSD Text Mode": "None"}, fps=60.0)
Y, CB, CR = 81, 90, 239  # vivid's 100% red in BT.601 limited range


def fds():
    return len(os.listdir("/proc/self/fd"))


def test_list_devices_sees_vivid():
    devs = {d["path"]: d for d in zerocam.list_devices()}
    assert devs["/dev/video0"]["driver"] == "vivid"
    assert "NV12" in devs["/dev/video0"]["formats"]
    assert "NV12M" in devs["/dev/video1"]["formats"]


@pytest.mark.parametrize("memory", ["mmap", "dmabuf"])
@pytest.mark.parametrize("device,fmt", [("/dev/video0", "NV12"), ("/dev/video1", "NV12"), ("/dev/video1", "NV12M")])
def test_red_nv12_planes(device, fmt, memory):
    with Camera(device, fmt, (320, 180), buffers=4, memory=memory, **RED) as cam:
        for _, frame in zip(range(8), cam):
            with frame:
                y, uv = frame.planes
                assert y.shape == (180, 320) and uv.shape == (90, 320)
                assert (y == Y).all(), np.unique(y)
                assert (uv[:, 0::2] == CB).all() and (uv[:, 1::2] == CR).all()
                t = frame.tensor
                assert t.memory == "dma" and t.format == zerocam.PixelFormat.Nv12
        st = cam.stats()
        assert st["frames"] == 8
        assert st["cache"]["misses"] == st["buffers"] * st["planes"]
        assert st["planes"] == (2 if fmt == "NV12M" else 1)


@pytest.mark.parametrize("fmt,shape", [("YUYV", (180, 320, 2)), ("RGB24", (180, 320, 3))])
def test_packed_formats(fmt, shape):
    with Camera("/dev/video0", fmt, (320, 180), **RED) as cam:
        with cam.read() as frame:
            (img,) = frame.planes
            assert img.shape == shape
            if fmt == "RGB24":
                assert (img[..., 0] == 255).all() and not img[..., 1:].any()


def test_planes_are_zero_copy_views_of_the_dmabuf():
    with Camera("/dev/video0", "NV12", (320, 180), **RED) as cam:
        with cam.read() as frame:
            y = frame.planes[0]
            pin = frame.tensor.pin_host("read")
            assert y.ctypes.data == pin.ptr
            del y


def test_set_control_and_bad_control():
    with Camera("/dev/video0", "NV12", (320, 180), fps=60.0) as cam:
        cam.set_control("Test Pattern", "100% Red")
        cam.set_control("OSD Text Mode", "None")
        frames = [cam.read() for _ in range(3)]
        y = frames[-1].planes[0]
        assert (y == Y).all()
        del y
        for f in frames:
            f.release()
        with pytest.raises(ValueError, match="No Such Control"):
            cam.set_control("No Such Control", 1)


def test_dma_tensors_from_python():
    t = Tensor((64, 64), "uint8", mem="dma")
    assert t.memory == "dma"
    pin = t.pin_host()
    with t.map("write") as v:
        a = np.asarray(v)
        assert a.ctypes.data == pin.ptr
        a[:] = 42
        del a
    other = Tensor.from_fd(t.fd, (64, 64), "uint8")  # a dup of the same dma-buf
    assert other.memory == "dma" and other.fd_identity == t.fd_identity
    with other.map("read") as v:
        b = np.asarray(v)
        assert (b == 42).all() and b.ctypes.data != 0
        del b
    x = np.from_dlpack(t)
    assert x.ctypes.data == pin.ptr and (x == 42).all()
    del x
    with pin.cpu_access("read"):
        pass
    f = Tensor((8, 8), "float32", mem="dma")
    with f.map() as v:
        np.asarray(v)[:] = 1.5
    assert f.numpy().sum() == 96.0


def test_released_frame_tensor_cannot_be_mapped():
    with Camera("/dev/video0", "NV12", (320, 180), **RED) as cam:
        frame = cam.read()
        t = frame.tensor
        frame.release()
        cam.read().release()  # the buffer is queued to the driver again
        with pytest.raises(zerocam.MapConflict):
            t.map("read")


@pytest.mark.parametrize("memory", ["mmap", "dmabuf"])
def test_no_fd_growth_after_300_frames(memory):
    gc.collect()
    before = fds()
    with Camera("/dev/video1", "NV12M", (320, 180), memory=memory, **RED) as cam:
        for _, frame in zip(range(300), cam):
            with frame:
                assert frame.planes[1][0, 1] == CR
    gc.collect()
    assert fds() == before


def test_missing_device_and_bad_format():
    with pytest.raises(OSError) as e:
        Camera("/dev/video99")
    assert e.value.errno == 2
    with pytest.raises(ValueError, match="NV16M|not supported|offers"):
        Camera("/dev/video0", "NV16M", (320, 180))


def test_buffer_protocol_on_a_dma_tensor():
    assert zerocam.BUFFER_PROTOCOL  # the guest's python3 is 3.13: the cp311-abi3 wheel
    t = Tensor((16, 16), "uint8", mem="dma")
    with t.map() as view:
        m = memoryview(view)
        assert m.shape == (16, 16) and m.strides == (16, 1) and m.format == "B"
        m[0, 0] = 9
        m.release()
    assert t.numpy()[0, 0] == 9
