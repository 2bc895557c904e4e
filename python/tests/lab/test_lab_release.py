"""The release rule on real dma-bufs, in the kernel lab: the `with t.map()`
block is the access bracket — its end runs the dma-buf sync END and ends the
access record whatever arrays are alive — and the arrays keep the memory: a
later map of the same buffer is not refused because of them, and a captured
frame's buffer stays out of the driver's queue until the last of them is gone
(the device never writes the bytes an array holds). A sync END that fails
where it cannot be raised (a view garbage-collected, a tensor's DLPack
consumer dying) is a RuntimeWarning."""

import gc
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


def test_dma_tensor_block_ends_the_map_and_the_array_keeps_the_memory():
    t = Tensor((64, 64), "uint8", mem="dma")
    other = Tensor.from_fd(t.fd, (64, 64), "uint8")  # a second import of the dma-buf
    with t.map() as v:
        a = np.asarray(v)
        x = np.from_dlpack(v)  # a DLPack consumer of the same view
        for second in (lambda: t.map(), lambda: other.map("write"), lambda: other.map("read")):
            with pytest.raises(zerocam.MapConflict):
                second()  # two brackets at once
        a[:] = 0x5A  # inside the bracket
    assert t.memory == "dma" and v.released and not v.mapped and v.exports == 2
    with other.map("read") as w:  # not refused: a and x hold no map
        assert (np.asarray(w) == 0x5A).all()
    with other.map("write") as w:
        np.asarray(w)[0] = 1
    assert (a[0] == 1).all() and (x[0] == 1).all()
    del t, other, v
    gc.collect()
    a[1] = 2  # tensors and view gone: the dma-buf stays mapped for a and x
    assert (x[1] == 2).all() and int(a.sum()) == 64 + 128 + 62 * 64 * 0x5A
    del a
    assert (x[2] == 0x5A).all()


@pytest.mark.parametrize("memory", ["mmap", "dmabuf"])
def test_capture_queue_skips_a_buffer_an_array_keeps(memory):
    with Camera("/dev/video0", "NV12", (320, 180), buffers=BUFFERS, memory=memory, **RED) as cam:
        frame = cam.read()
        index = frame.buffer_index
        with frame.tensor.map("readwrite") as v:
            held = np.asarray(v)
        assert not v.mapped and v.exports == 1  # the map ended; the array keeps the frame
        held[:] = 7  # after the block: the same memory
        frame.release()  # the array still holds the frame: the driver does not get it
        seen = []
        for _ in range(3 * BUFFERS):
            with cam.read() as f:
                seen.append(f.buffer_index)
                assert (f.planes[0] == Y).all()
        assert index not in seen, seen
        assert (held == 7).all()  # the driver never wrote it: no stale or torn bytes
        del held
        assert v.exports == 0
        later = []
        for _ in range(2 * BUFFERS):
            with cam.read() as f:
                later.append(f.buffer_index)
                if f.buffer_index == index:
                    assert (f.planes[0] == Y).all()  # the driver's frame, not our 7s
        assert index in later, later
        assert cam.stats()["buffer_errors"] == 0


@pytest.mark.parametrize("how", ["from_zerocam", "from_fd"])
@pytest.mark.parametrize("memory", ["mmap", "dmabuf"])
def test_capture_queue_skips_a_buffer_an_import_keeps(memory, how):
    # A tensor importing the frame's buffer (no link to the frame itself)
    # finds the frame that handed its fd out: its array keeps the frame.
    with Camera("/dev/video0", "NV12", (320, 180), buffers=BUFFERS, memory=memory, **RED) as cam:
        frame = cam.read()
        index = frame.buffer_index
        if how == "from_zerocam":
            imported = Tensor.from_zerocam(frame.tensor)
        else:
            fd = frame.tensor.clone_fd()
            imported = Tensor.from_fd(fd, frame.tensor.row_stride * frame.height, "uint8")
            os.close(fd)
        assert imported.fd_identity == frame.tensor.fd_identity
        with imported.map("read") as v:
            held = np.asarray(v)
        assert not v.mapped and v.exports == 1
        frame.release()
        seen = []
        for _ in range(3 * BUFFERS):
            with cam.read() as f:
                seen.append(f.buffer_index)
        assert index not in seen, seen
        del held
        assert v.exports == 0
        later = []
        for _ in range(2 * BUFFERS):
            with cam.read() as f:
                later.append(f.buffer_index)
        assert index in later, later
        assert cam.stats()["buffer_errors"] == 0


def test_the_sync_end_runs_at_the_block_end_with_arrays_alive():
    t = Tensor(4096, "uint8", mem="dma")
    saved = os.dup(t.fd)
    impostor = os.memfd_create("not-a-dmabuf")
    try:
        with pytest.raises(zerocam.DeviceError) as e:
            with t.map() as v:
                a = np.asarray(v)
                # A memfd behind the tensor's fd number: the END issued when
                # the block ends gets ENOTTY from the kernel, `a` alive or not.
                os.dup2(impostor, t.fd)
        assert "DMA_BUF_IOCTL_SYNC" in str(e.value) and e.value.errno == 25  # ENOTTY
    finally:
        os.dup2(saved, t.fd)
        os.close(saved)
        os.close(impostor)
    assert not v.mapped and v.exports == 1  # the map and its access record ended all the same
    a[:] = 3
    with t.map("read") as w:
        assert (np.asarray(w) == 3).all()


def test_failed_deferred_sync_end_is_a_runtime_warning():
    t = Tensor(4096, "uint8", mem="dma")
    saved = os.dup(t.fd)
    impostor = os.memfd_create("not-a-dmabuf")
    view = t.map()
    a = np.asarray(view)
    # The view garbage-collected unreleased ends its map in its destructor:
    # nothing can be raised there.
    os.dup2(impostor, t.fd)
    try:
        with pytest.warns(RuntimeWarning, match=r"no error can be raised.*DMA_BUF_IOCTL_SYNC.*ENOTTY"):
            del view
    finally:
        os.dup2(saved, t.fd)
        os.close(saved)
    with t.map():  # the map and its access record ended all the same
        pass
    a[0] = 1
    # A tensor's DLPack consumer ends its map when it dies; with warnings as
    # errors, the error goes to sys.unraisablehook.
    x = np.from_dlpack(t)
    caught = []
    hook, sys.unraisablehook = sys.unraisablehook, caught.append
    saved = os.dup(t.fd)
    os.dup2(impostor, t.fd)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            del x
    finally:
        sys.unraisablehook = hook
        os.dup2(saved, t.fd)
        os.close(saved)
        os.close(impostor)
    assert len(caught) == 1 and isinstance(caught[0].exc_value, RuntimeWarning)
    assert "ENOTTY" in str(caught[0].exc_value)
    with t.map():
        pass
    assert a[0] == 1


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
