"""The reference's quick start, read map, pin_host paragraph and capsule
example (tests/reference_snippets.py) in the kernel lab: as one script on a
DMA-heap buffer (mem=None takes the heap here), and on each plane of a vivid
frame, the allocation line swapped for the plane. The arrays of both blocks
outlive them; the frame's buffer stays out of the driver's queue until they
are gone, and the driver never writes under them."""

import gc
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import zerocam
from zerocam import Camera

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from reference_snippets import (  # noqa: E402 - after the path it is found on
    ALLOCATION,
    CAPSULE,
    PIN_HOST,
    QUICK_START,
    READ_MAP,
    SCRIPT,
    SETUP,
)

RED = dict(controls={"Test Pattern": "100% Red", "OSD Text Mode": "None"}, fps=60.0)
Y = 81  # vivid's 100% red luma (BT.601 limited range)
BUFFERS = 4


def test_the_reference_runs_as_one_script_on_a_dma_buffer():
    probe = "from zerocam import Tensor, PixelFormat\n" + ALLOCATION + "print(tensor.memory)\n"
    memory = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert memory.stdout.strip() == "dma", memory.stdout + memory.stderr
    out = subprocess.run([sys.executable, "-W", "error", "-c", SCRIPT], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "(1080, 1920, 3) RGB uint8", out.stdout
    assert lines[1].split()[1:] == [str(1920 * 1080 * 3), "64"], out.stdout


def run_on(plane):
    """The reference on `plane` (its allocation line swapped for it); the
    scope it ran in, and the arrays of its two blocks."""
    assert ALLOCATION in QUICK_START
    scope = {"PLANE": plane}
    exec(QUICK_START.replace(ALLOCATION, "tensor = PLANE\n"), scope)  # noqa: S102
    first = scope["frame"]
    exec(READ_MAP, scope)  # noqa: S102 - `frame` (= first) alive as it runs
    second = scope["frame"]
    exec(PIN_HOST, scope)  # noqa: S102
    taken = []
    tracing = CAPSULE.replace("    ...\n", "    taken.append(True)\n", 1).replace("    ...\n", "    taken.append(False)\n", 1)
    exec(SETUP + tracing, dict(scope, taken=taken))  # noqa: S102
    exec(SETUP + CAPSULE, scope)  # noqa: S102 - verbatim
    assert taken == [True]
    return scope, first, second


@pytest.mark.parametrize("memory", ["mmap", "dmabuf"])
@pytest.mark.parametrize("device,fmt", [("/dev/video0", "NV12"), ("/dev/video1", "NV12M")])
def test_the_reference_on_a_vivid_frames_planes(device, fmt, memory):
    with Camera(device, fmt, (320, 180), buffers=BUFFERS, memory=memory, **RED) as cam:
        frame = cam.read()
        index = frame.buffer_index
        kept = []
        for i, rows in enumerate((180, 90)):
            plane = frame.tensor.plane(i)
            assert plane.memory == "dma"
            scope, first, second = run_on(plane)
            assert first.shape == second.shape == (rows, 320)
            assert first.flags.writeable and not second.flags.writeable
            assert first.ctypes.data == second.ctypes.data and (second == 128).all()
            assert scope["pin"].released
            if i == 0 or fmt == "NV12M":  # the capsule imports planes at offset 0
                u = zerocam.Tensor.from_zerocam(scope["obj"])
                assert u.fd_identity == plane.fd_identity
                with u.map("read") as v:
                    assert (np.asarray(v) == 128).all()
            kept += [first, second]
            del scope, plane, first, second
        frame.release()  # the arrays keep the frame: its buffer is not lent again
        seen = []
        for _ in range(3 * BUFFERS):
            with cam.read() as f:
                seen.append(f.buffer_index)
                assert (f.planes[0] == Y).all()
        assert index not in seen, seen
        assert all((a == 128).all() for a in kept)  # the driver never wrote under them
        kept[0][:] = 7  # and they still write the buffer
        assert (kept[1][:] == 7).all()
        del kept
        gc.collect()
        later = []
        for _ in range(2 * BUFFERS):
            with cam.read() as f:
                later.append(f.buffer_index)
                if f.buffer_index == index:
                    assert (f.planes[0] == Y).all()  # the driver's frame, not our 7s
        assert index in later, later
        assert cam.stats()["buffer_errors"] == 0
