"""zerocam.Preprocessor on vivid in the kernel lab: real dma-buf frames
(NV12 in one buffer, NV12M in two; MMAP and DMABUF modes) converted on the
CPU and on the GPU (zink on lavapipe, dma-bufs imported as EGLImages), the
two agreeing with each other and with the BT.601 value of vivid's red.

The GPU environment is the one `tests/lab/run --egl` sets, set here before
the first GL context of the process (no other lab test opens one)."""

import gc
import os

os.environ.setdefault("LIBGL_ALWAYS_SOFTWARE", "1")
os.environ.setdefault("GALLIUM_DRIVER", "zink")
os.environ.setdefault("EGL_PLATFORM", "surfaceless")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import zerocam  # noqa: E402
from zerocam import Camera, ModelInput, Preprocessor  # noqa: E402

RED = dict(controls={"Test Pattern": "100% Red", "OSD Text Mode": "None"}, fps=60.0)
Y, CB, CR = 81, 90, 239  # vivid's 100% red in BT.601 limited range
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
PAD = (114, 20, 240)


def red_rgb():
    """vivid's red through the BT.601 limited-range equations, clipped."""
    luma = (Y - 16) * 255 / 219
    c = 255 / 224
    r = luma + c * 1.402 * (CR - 128)
    g = luma - c * (1.772 * 0.114 / 0.587) * (CB - 128) - c * (1.402 * 0.299 / 0.587) * (CR - 128)
    b = luma + c * 1.772 * (CB - 128)
    return np.clip([r, g, b], 0, 255)


def normalized(rgb):
    return (np.asarray(rgb, dtype=np.float64) / 255 - MEAN) / STD


def values(t):
    with t.map("read") as v:
        return np.asarray(v).astype(np.float64)


def fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(scope="module")
def model_input():
    # 320x180 letterboxed into 64x64: 64x36 of picture, bars of 14 rows.
    return ModelInput(64, 64, mean=MEAN, std=STD, fit="letterbox", pad=PAD)


def test_devices_under_zink(model_input):
    auto = Preprocessor(model_input)
    assert auto.device == "cpu"
    assert auto.device_reason.startswith("software rasterizer: zink"), auto.device_reason
    assert "llvmpipe" in auto.device_reason
    gpu = Preprocessor(model_input, device="gpu")
    assert (gpu.device, gpu.device_reason) == ("gpu", "requested")


@pytest.mark.parametrize("memory", ["mmap", "dmabuf"])
@pytest.mark.parametrize("device,fmt", [("/dev/video0", "NV12"), ("/dev/video1", "NV12M")])
def test_vivid_frames_on_cpu_and_gpu_agree(model_input, device, fmt, memory):
    cpu = Preprocessor(model_input, device="cpu")
    gpu = Preprocessor(model_input, device="gpu")
    picture = normalized(red_rgb())
    bars = normalized(PAD)
    with Camera(device, fmt, (320, 180), buffers=4, memory=memory, **RED) as cam:
        for _, frame in zip(range(6), cam):
            with frame:
                assert frame.tensor.memory == "dma"
                c = cpu(frame)
                g = gpu(frame)
            assert c.shape == g.shape == (1, 3, 64, 64)
            assert (c.memory, g.memory) == ("mem", "pbo")
            cv, gv = values(c), values(g)
            assert np.abs(cv - gv).max() <= 0.02, np.abs(cv - gv).max()
            for got in (cv, gv):
                inside = got[0, :, 14:50, :].reshape(3, -1)
                assert np.abs(inside - picture[:, None]).max() <= 0.02
                top, bottom = got[0, :, :14, :], got[0, :, 50:, :]
                for bar in (top, bottom):
                    assert np.abs(bar.reshape(3, -1) - bars[:, None]).max() <= 1e-4
            del c, g
    for pre in (cpu, gpu):
        p = pre.placement
        assert p.scale == (0.2, 0.2) and p.offset == (0, 14)
        assert p.to_frame_box((0, 14, 64, 50)) == (0, 0, 320, 180)
        s = pre.stats()
        assert s["tensors_allocated"] <= 2, s
    assert cpu.stats()["cpu_images"] == 6 and "gpu_imports" not in cpu.stats()
    s = gpu.stats()
    assert s["gpu_images"] == 6
    # Every frame's dma-buf imported (4 buffers, each once), none uploaded.
    assert (s["gpu_imports"], s["gpu_import_hits"], s["gpu_uploads"]) == (4, 2, 0), s


def test_no_fd_growth_while_converting_on_the_gpu(model_input):
    gpu = Preprocessor(model_input, device="gpu")
    with Camera("/dev/video1", "NV12M", (320, 180), buffers=4, memory="dmabuf", **RED) as cam:
        frames = iter(cam)
        for _ in range(4):  # each buffer imported once
            with next(frames) as frame:
                gpu(frame)
        gc.collect()
        before = fds()
        for _ in range(8):
            with next(frames) as frame:
                out = gpu(frame)
            assert out.shape == (1, 3, 64, 64)
        del out
        gc.collect()
        assert fds() == before
    s = gpu.stats()
    assert s["tensors_allocated"] <= 2 and s["gpu_uploads"] == 0, s
    assert (s["gpu_imports"], s["gpu_import_hits"]) == (4, 8), s
