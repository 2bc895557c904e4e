"""The release rule on real dma-bufs, in the kernel lab: a numpy array that
outlives its `with t.map()` block keeps the read-write map — the dma-buf sync
bracket and the access record — so a device borrow (the capture queue) and a
second writable map are refused until it dies; the device never writes the
bytes the array holds. A sync END that fails when the last array dies is a
RuntimeWarning (it cannot be raised from a destructor)."""

import os
import sys
import warnings

import numpy as np
import pytest

import zerocam
from zerocam import Camera, Tensor

RED = dict(controls={"Test Pattern": "100% Red", "OSD Text Mode": "None"}, fps=60.0)
Y = 81  # vivid's 100% red luma (BT.601 limited range)
BUFFERS = 4


def test_dma_tensor_array_keeps_its_readwrite_map():
    t = Tensor((64, 64), "uint8", mem="dma")
    other = Tensor.from_fd(t.fd, (64, 64), "uint8")  # a second import of the dma-buf
    with t.map() as v:
        a = np.asarray(v)
        x = np.from_dlpack(v)  # a DLPack consumer of the same map
    assert t.memory == "dma" and v.released and v.mapped and v.exports == 2
    for second in (lambda: t.map(), lambda: other.map("write"), lambda: other.map("read")):
        with pytest.raises(zerocam.MapConflict):
            second()
    a[:] = 0x5A  # inside the still-open sync bracket
    del a
    assert v.mapped and v.exports == 1
    with pytest.raises(zerocam.MapConflict):
        other.map("write")
    del x
    assert not v.mapped and v.exports == 0
    with other.map("read") as w:
        assert (np.asarray(w) == 0x5A).all()


@pytest.mark.parametrize("memory", ["mmap", "dmabuf"])
def test_capture_queue_skips_a_buffer_an_array_keeps_mapped(memory):
    with Camera("/dev/video0", "NV12", (320, 180), buffers=BUFFERS, memory=memory, **RED) as cam:
        frame = cam.read()
        index = frame.buffer_index
        with frame.tensor.map("readwrite") as v:
            held = np.asarray(v)
        held[:] = 7  # after the block: the map is still open
        frame.release()  # the buffer goes back to the camera, not to the driver
        assert v.mapped
        seen = []
        for _ in range(3 * BUFFERS):
            with cam.read() as f:
                seen.append(f.buffer_index)
                assert (f.planes[0] == Y).all()
        assert index not in seen, seen
        assert (held == 7).all()  # the driver never wrote it: no stale or torn bytes
        del held
        assert not v.mapped
        later = []
        for _ in range(2 * BUFFERS):
            with cam.read() as f:
                later.append(f.buffer_index)
                if f.buffer_index == index:
                    assert (f.planes[0] == Y).all()  # the driver's frame, not our 7s
        assert index in later, later
        assert cam.stats()["buffer_errors"] == 0


def test_failed_deferred_sync_end_is_a_runtime_warning():
    t = Tensor(4096, "uint8", mem="dma")
    saved = os.dup(t.fd)
    impostor = os.memfd_create("not-a-dmabuf")
    with t.map() as v:
        a = np.asarray(v)
    # Put a memfd behind the tensor's fd number: the map's sync END, run when
    # the array dies, gets ENOTTY from the kernel.
    os.dup2(impostor, t.fd)
    try:
        with pytest.warns(RuntimeWarning, match=r"last export.*DMA_BUF_IOCTL_SYNC.*ENOTTY"):
            del a
    finally:
        os.dup2(saved, t.fd)
        os.close(saved)
    assert not v.mapped  # the map and its access record ended all the same
    with t.map():
        pass
    # With warnings as errors, the error goes to sys.unraisablehook.
    with t.map() as v:
        a = np.asarray(v)
    caught = []
    hook, sys.unraisablehook = sys.unraisablehook, caught.append
    saved = os.dup(t.fd)
    os.dup2(impostor, t.fd)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            del a
    finally:
        sys.unraisablehook = hook
        os.dup2(saved, t.fd)
        os.close(saved)
        os.close(impostor)
    assert len(caught) == 1 and isinstance(caught[0].exc_value, RuntimeWarning)
    assert "ENOTTY" in str(caught[0].exc_value)
    assert not v.mapped


def test_failed_sync_end_at_the_block_end_is_raised():
    t = Tensor(4096, "uint8", mem="dma")
    saved = os.dup(t.fd)
    impostor = os.memfd_create("not-a-dmabuf")
    try:
        with pytest.raises(zerocam.DeviceError) as e:
            with t.map():  # no export: the map ends with the block, which can raise
                os.dup2(impostor, t.fd)
        assert "DMA_BUF_IOCTL_SYNC" in str(e.value) and e.value.errno == 25  # ENOTTY
    finally:
        os.dup2(saved, t.fd)
        os.close(saved)
        os.close(impostor)
    with t.map():
        pass


def test_readme_quick_start_runs_as_written_on_vivid():
    import pathlib
    import subprocess

    text = (pathlib.Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = text[text.index("## Python quick start") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("```", start)]
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "(720, 1280, 3) RGB 128.0", out.stdout
    assert "'frames': 1" in lines[-1], out.stdout
