"""The release rule of maps: leaving `with t.map() as v:` releases the view at
once and never raises because of live exports; the map itself (CPU access,
sync END, access record) ends when the last export dies — the rule a Frame's
buffer follows. `v.release()` with live exports raises BufferError, as
`memoryview.release()` does."""

import gc
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import zerocam
from zerocam import PixelFormat, Tensor

# The quick start of edgefirst-tensor's README, as written there but for the
# import (`from edgefirst.tensor import ...`): `frame` outlives the block.
QUICK_START = """\
import numpy as np
from zerocam import Tensor, PixelFormat

# Allocate once; a real pipeline reuses the tensor every frame.
# mem=None selects the best backend available on the platform.
tensor = Tensor.image(1920, 1080, PixelFormat.Rgb, None, "readwrite")

with tensor.map() as view:
    frame = np.asarray(view)  # shape, dtype and strides all carried
    frame[:] = 128

print(tensor.shape, tensor.format, tensor.dtype)
"""

# Its "read" variant (the next snippet of that README) in the same script.
READ_VARIANT = QUICK_START.replace(
    """with tensor.map() as view:
    frame = np.asarray(view)  # shape, dtype and strides all carried
    frame[:] = 128
""",
    """with tensor.map("read") as view:
    frame = np.asarray(view)  # read-only view, not writable
""",
)


ROOT = pathlib.Path(__file__).resolve().parents[3]


def readme_quick_start():
    """The Python quick start of the top-level README.md."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python quick start") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


def run_script(code):
    return subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)


@pytest.mark.parametrize("code", [QUICK_START, READ_VARIANT], ids=["readwrite", "read"])
def test_quick_start_runs_as_written(code):
    assert "tensor.map(" in code and "frame = np.asarray(view)" in code
    out = run_script(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("(1080, 1920, 3) ") and out.stdout.rstrip().endswith(" uint8"), out.stdout
    assert out.stderr == ""


def test_quick_start_state_after_the_block():
    scope = {}
    exec(QUICK_START, scope)  # noqa: S102 - the quick start itself
    tensor, view, frame = scope["tensor"], scope["view"], scope["frame"]
    assert view.released and view.mapped and view.exports == 1
    assert (frame == 128).all() and frame.flags.writeable
    with pytest.raises(zerocam.MapConflict, match="also after its `with` block"):
        tensor.map("read")  # the quick start's readwrite map is still open
    frame[0, 0] = (1, 2, 3)  # the memory is still the tensor's
    del frame, scope["frame"]
    assert not view.mapped and view.exports == 0
    with tensor.map("read") as again:
        back = np.asarray(again)
        assert back[0, 0].tolist() == [1, 2, 3] and (back[1:] == 128).all()


def test_leaving_with_keeps_the_map_while_an_array_lives():
    t = Tensor((4, 8), "uint8", mem="shm")
    with t.map() as v:
        a = np.asarray(v)
    assert v.released and v.mapped and v.exports == 1
    for use in (np.asarray, lambda v: v.shape, lambda v: v.ptr, lambda v: v.numpy(), lambda v: v.__dlpack__()):
        with pytest.raises(zerocam.Released):
            use(v)
    # The map is still open: its access record refuses a second writable map,
    # through this tensor or another tensor of the same buffer.
    with pytest.raises(zerocam.MapConflict):
        t.map()
    with pytest.raises(zerocam.MapConflict):
        t.batch(0).map("write")
    a[:] = 7  # written after the block: still the tensor's memory
    del a
    assert not v.mapped and v.exports == 0
    with t.map() as w:
        assert (np.asarray(w) == 7).all()


def test_slices_and_views_of_the_array_keep_the_map():
    t = Tensor((8, 8), "float32", mem="mem")
    with t.map() as v:
        a = np.asarray(v)
        b = a[2:4]
        c = b.T.reshape(-1)  # a copy: keeps nothing
        d = b.view(np.uint32)
    del a, c
    assert v.mapped and v.exports == 1  # one export: b and d share a's base
    b[:] = 3.0
    del b
    assert v.mapped
    del d
    assert not v.mapped
    assert t.numpy()[2:4].tolist() == [[3.0] * 8] * 2


def test_release_with_live_exports_raises_and_changes_nothing():
    t = Tensor((8, 8), "float32", mem="mem")
    view = t.map()
    a = np.asarray(view)
    b = a[2:4]
    del a
    assert view.exports == 1
    with pytest.raises(BufferError, match="1 export") as e:
        view.release()
    assert isinstance(e.value, zerocam.MapConflict)
    assert not view.released and view.mapped
    assert view.shape == (8, 8)  # still usable, as a memoryview after a refused release
    b[:] = 3.0
    del b
    assert view.exports == 0 and view.mapped
    view.release()
    assert view.released and not view.mapped
    view.release()  # idempotent
    assert t.numpy()[2:4].sum() == 48.0


def test_release_after_the_block_is_a_no_op():
    t = Tensor(16, "uint8", mem="shm")
    with t.map() as v:
        a = np.asarray(v)
    v.release()  # already released by the block: no error, the array still counts
    assert v.mapped and v.exports == 1
    del a
    assert not v.mapped


def test_exception_in_the_block_is_not_replaced():
    t = Tensor(16, "uint8", mem="shm")
    with pytest.raises(ZeroDivisionError):
        with t.map() as v:
            a = np.asarray(v)
            1 / 0
    assert v.released and v.mapped
    del a
    assert not v.mapped


def test_export_counts_are_exact():
    t = Tensor((16, 16), "uint8", mem="shm")
    with t.map() as v:
        arrays = [np.asarray(v) for _ in range(50)]
        capsules = [v.__dlpack__() for _ in range(5)]
        assert v.exports == 55
    for n in range(50, 0, -1):
        assert v.exports == n + 5 and v.mapped
        arrays.pop()
    assert v.exports == 5 and v.mapped
    capsules.clear()  # unconsumed capsules end their export too
    assert v.exports == 0 and not v.mapped
    gc.collect()
    assert v.exports == 0
    for _ in range(3):  # nothing left behind: the tensor maps writable again and again
        with t.map() as w:
            np.asarray(w)[0, 0] += 1
    assert t.numpy()[0, 0] == 3


def test_a_view_never_released_ends_with_its_last_array():
    t = Tensor(16, "uint8", mem="shm")
    a = np.asarray(t.map())  # the view itself is garbage at once
    a[:] = 5
    with pytest.raises(zerocam.MapConflict):
        t.map()
    del a
    gc.collect()
    with t.map("read") as v:
        assert (np.asarray(v) == 5).all()


def test_the_last_array_may_die_on_another_thread():
    t = Tensor(64, "uint8", mem="shm")
    with t.map() as v:
        holder = [np.asarray(v)]
    th = threading.Thread(target=holder.clear)
    th.start()
    th.join()
    assert not v.mapped and v.exports == 0
    with t.map():
        pass


def test_read_map_arrays_allow_other_read_maps():
    t = Tensor.image(32, 8, PixelFormat.Grey, mem="shm")
    with t.map("read") as v:
        a = np.asarray(v)
    assert not a.flags.writeable and v.mapped
    with t.map("read") as w:  # read maps share the bytes
        assert np.asarray(w).sum() == 0
    with pytest.raises(zerocam.MapConflict):
        t.map("write")
    del a
    with t.map("write"):
        pass


def test_view_dlpack_follows_the_rule():
    t = Tensor((4, 6), "int16", mem="shm")
    with t.map() as v:
        x = np.from_dlpack(v)
        assert x.ctypes.data == v.ptr and x.flags.writeable and v.exports == 1
    assert v.released and v.mapped
    x[1, 2] = -3
    with pytest.raises(zerocam.MapConflict):
        t.map("read")
    del x
    assert not v.mapped and v.exports == 0
    assert t.numpy()[1, 2] == -3


def test_view_dlpack_of_a_read_map_is_read_only():
    t = Tensor(8, "float32", mem="shm")
    with t.map("read") as v:
        with pytest.raises(BufferError, match="max_version"):
            v.__dlpack__()  # a legacy capsule cannot say read-only
        cap = v.__dlpack__(max_version=(1, 0))
        assert "dltensor_versioned" in repr(cap)
        x = np.from_dlpack(v)  # numpy asks for the versioned capsule
        assert not x.flags.writeable and x.ctypes.data == v.ptr
    assert v.exports == 2
    del cap, x
    assert not v.mapped


def test_view_dlpack_request_checks():
    t = Tensor(4, mem="mem")
    with t.map() as v:
        assert v.__dlpack_device__() == (1, 0)
        with pytest.raises(BufferError, match="dl_device"):
            v.__dlpack__(dl_device=(2, 0))
        with pytest.raises(BufferError, match="copy"):
            v.__dlpack__(copy=True)
        with pytest.raises(BufferError, match="stream"):
            v.__dlpack__(stream=1)
        assert v.exports == 0


@pytest.mark.buffer_protocol
def test_memoryview_follows_the_rule():
    t = Tensor((3, 4), "uint16", mem="shm")
    with t.map() as v:
        m = memoryview(v)
        n = memoryview(v)
        assert v.exports == 2
    assert v.released and v.mapped
    with pytest.raises(zerocam.Released):
        memoryview(v)
    m[1, 2] = 9  # still the tensor's memory
    m.release()
    assert v.mapped and v.exports == 1
    with pytest.raises(zerocam.MapConflict):
        t.map()
    a = np.asarray(n)  # shares n's buffer (CPython's managed buffer), no new export
    assert v.exports == 1
    n.release()  # n goes, the buffer stays while the array lives
    assert v.mapped and v.exports == 1
    a[0, 0] = 4
    del a
    assert not v.mapped and v.exports == 0
    assert t.numpy()[1, 2] == 9 and t.numpy()[0, 0] == 4


@pytest.mark.buffer_protocol
def test_memoryview_release_with_live_buffer_raises():
    t = Tensor(8, mem="shm")
    view = t.map()
    m = memoryview(view)
    with pytest.raises(BufferError):
        view.release()
    m.release()
    view.release()
    assert not view.mapped


def test_pattern_camera_skips_a_buffer_an_array_keeps_mapped():
    # The host's stand-in for the capture queue (vivid: tests/lab/test_lab_release.py).
    with zerocam.Camera.pattern("NV12", (64, 48), buffers=4) as cam:
        frame = cam.read()
        index = frame.buffer_index
        with frame.tensor.map() as v:
            held = np.asarray(v)
        held[:] = 7
        frame.release()
        seen = []
        for _ in range(12):
            with cam.read() as f:
                seen.append(f.buffer_index)
        assert index not in seen and (held == 7).all()
        del held
        later = []
        for _ in range(8):
            with cam.read() as f:
                later.append(f.buffer_index)
        assert index in later


def test_package_docstring_example_runs():
    import doctest

    assert doctest.testmod(zerocam, report=False).failed == 0


def test_readme_quick_start_runs():
    code = readme_quick_start()
    camera = 'zerocam.Camera("/dev/video0", "NV12", (1280, 720), memory="dmabuf")'
    assert camera in code  # no camera on the host: the pattern source stands in (vivid: the lab)
    out = run_script(code.replace(camera, 'zerocam.Camera.pattern("NV12", (1280, 720))'))
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.startswith("(720, 1280, 3) RGB 128.0\n"), out.stdout
