"""The release rule of maps: the `with t.map() as v:` block is the access
bracket. Its end — or `v.release()`, or the view's garbage collection — ends
the map (the recorded CPU access, a dma-buf's sync END) whatever arrays are
alive; numpy arrays, memoryviews and DLPack consumers made from the view keep
the tensor's memory (and a captured frame) alive, not the map. Memory mapped
only for the access (a GL PBO) keeps the old rule: its map ends with the last
export. The reference's quick start itself: test_quick_start.py."""

import ast
import gc
import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import zerocam
from zerocam import ModelInput, PixelFormat, Preprocessor, Tensor

ROOT = pathlib.Path(__file__).resolve().parents[3]


def readme_quick_start():
    """The Python quick start of the top-level README.md."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python quick start") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


def run_script(code):
    return subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)


def test_leaving_with_ends_the_map_and_the_array_keeps_the_memory():
    t = Tensor((4, 8), "uint8", mem="shm")
    with t.map() as v:
        a = np.asarray(v)
        assert v.mapped and v.exports == 1
        with pytest.raises(zerocam.MapConflict):
            t.map("read")  # two brackets at once: today's rules
    assert v.released and not v.mapped and v.exports == 1
    for use in (np.asarray, lambda v: v.shape, lambda v: v.ptr, lambda v: v.numpy(), lambda v: v.__dlpack__()):
        with pytest.raises(zerocam.Released):
            use(v)
    # The bracket ended: maps of this tensor and of another tensor of the same
    # buffer are judged by the brackets open now, and `a` holds none.
    with t.batch(0).map("write") as w:
        np.asarray(w)[:] = 5
    assert (a[0] == 5).all()  # the same memory
    a[:] = 7  # written after the block: still the tensor's memory
    with t.map() as w:
        assert (np.asarray(w) == 7).all()
    assert v.exports == 1
    del a
    assert v.exports == 0


def test_the_array_outlives_the_tensor_and_the_view():
    t = Tensor.image(40, 30, PixelFormat.Rgb, mem="shm", row_stride=128)
    with t.map() as view:
        a = np.asarray(view)
        a[:] = 9
    del t, view
    gc.collect()
    assert a.strides == (128, 3, 1) and (a == 9).all()
    a[2, 3] = (1, 2, 3)
    assert a[2, 3].tolist() == [1, 2, 3] and int(a.sum()) == 9 * 40 * 30 * 3 - 27 + 6


def test_slices_and_views_of_the_array_keep_the_memory():
    t = Tensor((8, 8), "float32", mem="mem")
    with t.map() as v:
        a = np.asarray(v)
        b = a[2:4]
        c = b.T.reshape(-1)  # a copy: keeps nothing
        d = b.view(np.uint32)
    del a, c
    assert not v.mapped and v.exports == 1  # one export: b and d share a's base
    b[:] = 3.0
    del b, t
    gc.collect()
    assert v.exports == 1
    assert (d == np.float32(3.0).view(np.uint32)).all()  # the memory outlived the tensor
    del d
    assert v.exports == 0


def test_release_with_live_exports_ends_the_map_now():
    t = Tensor((8, 8), "float32", mem="mem")
    view = t.map()
    a = np.asarray(view)
    b = a[2:4]
    del a
    assert view.exports == 1 and view.mapped
    view.release()  # the bracket ends now, as at the end of a `with` block
    assert view.released and not view.mapped and view.exports == 1
    with pytest.raises(zerocam.Released):
        view.shape
    with t.map() as w:  # a writable map beside the live array
        np.asarray(w)[3] = 1.0
    b[0] = 3.0  # the array is still the tensor's memory
    assert b[1].tolist() == [1.0] * 8
    view.release()  # idempotent
    assert t.numpy()[2:4].sum() == 24.0 + 8.0


def test_release_after_the_block_is_a_no_op():
    t = Tensor(16, "uint8", mem="shm")
    with t.map() as v:
        a = np.asarray(v)
    v.release()  # already released by the block: no error, the array still counts
    assert not v.mapped and v.exports == 1
    del a
    assert v.exports == 0


def test_exception_in_the_block_is_not_replaced():
    t = Tensor(16, "uint8", mem="shm")
    with pytest.raises(ZeroDivisionError):
        with t.map() as v:
            a = np.asarray(v)
            1 / 0
    assert v.released and not v.mapped and v.exports == 1
    a[:] = 2
    del a
    assert (t.numpy() == 2).all()


def test_export_counts_are_exact():
    t = Tensor((16, 16), "uint8", mem="shm")
    with t.map() as v:
        arrays = [np.asarray(v) for _ in range(50)]
        capsules = [v.__dlpack__() for _ in range(5)]
        assert v.exports == 55
    assert not v.mapped
    for n in range(50, 0, -1):
        assert v.exports == n + 5
        arrays.pop()
    assert v.exports == 5
    capsules.clear()  # unconsumed capsules end their export too
    assert v.exports == 0
    gc.collect()
    assert v.exports == 0
    for _ in range(3):  # nothing left behind: the tensor maps writable again and again
        with t.map() as w:
            np.asarray(w)[0, 0] += 1
    assert t.numpy()[0, 0] == 3


def test_a_garbage_view_ends_its_map_and_its_array_keeps_the_memory():
    t = Tensor(16, "uint8", mem="shm")
    a = np.asarray(t.map())  # the view itself is garbage at once: its bracket ends
    a[:] = 5
    with t.map() as w:  # not refused: `a` holds no map
        assert (np.asarray(w) == 5).all()
        np.asarray(w)[0] = 6
    assert a[0] == 6


def test_the_last_array_may_die_on_another_thread():
    with zerocam.Camera.pattern("GREY", (64, 32), buffers=3) as cam:
        frame = cam.read()
        index = frame.buffer_index
        with frame.tensor.map("read") as v:
            holder = [np.asarray(v)]
        frame.release()
        assert all(cam.read(timeout=1).buffer_index != index for _ in range(4))
        th = threading.Thread(target=holder.clear)  # the frame goes back there
        th.start()
        th.join()
        assert v.exports == 0
        assert any(cam.read(timeout=1).buffer_index == index for _ in range(6))


def test_arrays_of_an_ended_read_map_allow_a_write_map():
    t = Tensor.image(32, 8, PixelFormat.Grey, mem="shm")
    with t.map("read") as v:
        a = np.asarray(v)
        with t.map("read") as w:  # read maps share the bytes
            assert np.asarray(w).sum() == 0
        with pytest.raises(zerocam.MapConflict):
            t.map("write")  # beside the open read bracket
    assert not a.flags.writeable and not v.mapped
    with t.map("write") as w:
        np.asarray(w)[:] = 200
    assert (a == 200).all()  # the read-only array sees the later write


def test_pin_host_and_from_dlpack_beside_arrays_of_ended_blocks():
    t = Tensor((4, 6), "int16", mem="shm")
    with t.map() as v:
        a = np.asarray(v)
        with pytest.raises(zerocam.MapConflict):
            np.from_dlpack(t)  # beside the open read-write bracket
    pin = t.pin_host("readwrite")
    assert pin.ptr == a.ctypes.data
    x = np.from_dlpack(t)  # its own read-write map, held by x
    assert x.ctypes.data == a.ctypes.data and x.flags.writeable
    a[1, 2] = -3
    assert x[1, 2] == -3
    with pytest.raises(zerocam.MapConflict):
        t.map("read")  # x's capsule holds its bracket until x is gone
    del x
    gc.collect()
    with t.map("read"):
        pass
    pin.release()


def test_view_dlpack_follows_the_rule():
    t = Tensor((4, 6), "int16", mem="shm")
    with t.map() as v:
        x = np.from_dlpack(v)
        assert x.ctypes.data == v.ptr and x.flags.writeable and v.exports == 1
    assert v.released and not v.mapped and v.exports == 1
    x[1, 2] = -3
    with t.map("read") as w:  # not refused: x keeps the memory, not the map
        assert np.asarray(w)[1, 2] == -3
    del x
    assert v.exports == 0
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
    assert v.exports == 2 and not v.mapped
    del cap, x
    assert v.exports == 0


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
    assert v.released and not v.mapped
    with pytest.raises(zerocam.Released):
        memoryview(v)
    m[1, 2] = 9  # still the tensor's memory
    m.release()
    assert v.exports == 1
    with t.map() as w:  # n keeps the memory, not the map
        np.asarray(w)[0, 1] = 8
    a = np.asarray(n)  # shares n's buffer (CPython's managed buffer), no new export
    assert v.exports == 1 and a[0, 1] == 8
    n.release()  # n goes, the buffer stays while the array lives
    assert v.exports == 1
    del t
    gc.collect()
    a[0, 0] = 4
    assert a[1, 2] == 9 and a[0, 0] == 4
    del a
    assert v.exports == 0


@pytest.mark.buffer_protocol
def test_memoryview_release_after_the_view_release():
    t = Tensor(8, mem="shm")
    view = t.map()
    m = memoryview(view)
    view.release()  # ends the map now, the buffer still exported
    assert not view.mapped and view.exports == 1
    with t.map("write") as w:
        np.asarray(w)[:] = 3
    assert m.tolist() == [3] * 8
    m.release()
    assert view.exports == 0


def test_pattern_camera_skips_a_buffer_an_array_keeps():
    # The host's stand-in for the capture queue (vivid: tests/lab/test_lab_release.py).
    with zerocam.Camera.pattern("NV12", (64, 48), buffers=4) as cam:
        frame = cam.read()
        index = frame.buffer_index
        with frame.tensor.map() as v:
            held = np.asarray(v)
        assert not v.mapped and v.exports == 1  # the map ended; the array keeps the frame
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


def test_a_released_view_keeps_nothing():
    # The view object outlives its block under its name, as `view` does in
    # the quick start: once its arrays are gone it holds neither the frame
    # nor the memory.
    with zerocam.Camera.pattern("GREY", (64, 32), buffers=2) as cam:
        frame = cam.read()
        with frame.tensor.map() as v:
            a = np.asarray(v)
        frame.release()
        del a
        assert v.exports == 0
        b, c = cam.read(), cam.read()  # both buffers free: v kept nothing
        assert {b.buffer_index, c.buffer_index} == {0, 1}


def test_a_frame_tensor_mapped_after_its_release_keeps_the_buffer_by_its_map():
    # No frame left to hold: the map ends with its last array, as `planes`
    # do, and that borrow keeps the buffer from being drawn again.
    with zerocam.Camera.pattern("GREY", (64, 32), buffers=3) as cam:
        frame = cam.read()
        t, index = frame.tensor, frame.buffer_index
        frame.release()
        with t.map("read") as v:
            kept = np.asarray(v)
        assert v.mapped and v.exports == 1
        assert all(cam.read(timeout=1).buffer_index != index for _ in range(6))
        del kept
        assert not v.mapped
        assert any(cam.read(timeout=1).buffer_index == index for _ in range(6))


def test_release_of_a_frame_tensor_mapped_after_its_release_is_refused():
    # That map ends with its last array (nothing else keeps the buffer from
    # the driver): release() cannot end it now, as for a "pbo" map.
    with zerocam.Camera.pattern("GREY", (64, 32), buffers=3) as cam:
        frame = cam.read()
        t = frame.tensor
        frame.release()
        view = t.map("read")
        kept = np.asarray(view)
        with pytest.raises(zerocam.MapConflict, match="capture buffer"):
            view.release()
        assert view.mapped and not view.released and view.exports == 1
        with pytest.raises(zerocam.MapConflict):
            view.release()  # still refused: nothing changed
        kept = None
        assert view.mapped and view.exports == 0  # the view itself is not released yet
        view.release()
        assert view.released and not view.mapped


def import_frame_buffer(frame, how):
    """A tensor of `frame`'s buffer with no link to the frame: a new import of its fd."""
    if how == "from_zerocam":
        return Tensor.from_zerocam(frame.tensor)
    t = frame.tensor
    fd = t.clone_fd()
    try:
        return Tensor.from_fd(fd, t.row_stride * t.height, "uint8")
    finally:
        os.close(fd)


@pytest.mark.parametrize("how", ["from_zerocam", "from_fd"])
def test_an_import_of_a_frame_buffer_keeps_the_frame(how):
    # The array of an import's ended block keeps the frame that lent the fd
    # out, as arrays of frame.tensor maps do: released, the frame's buffer
    # stays out of the driver's queue, unwritten, until the array is gone.
    with zerocam.Camera.pattern("GREY", (64, 32), buffers=2) as cam:
        frame = cam.read()
        index = frame.buffer_index
        t2 = import_frame_buffer(frame, how)
        assert t2.fd_identity == frame.tensor.fd_identity and t2.buffer_id != frame.tensor.buffer_id
        with t2.map("read") as v:
            a = np.asarray(v)
        assert not v.mapped and v.exports == 1  # the block ended the map: the rule
        snap = a.copy()
        frame.release()
        seen = []
        for _ in range(6):  # the pattern scrolls: a frame drawn into `a`'s buffer changes it
            with cam.read(timeout=1) as f:
                seen.append(f.buffer_index)
        assert index not in seen and np.array_equal(a, snap)
        del a
        assert v.exports == 0
        later = []
        for _ in range(4):
            with cam.read(timeout=1) as f:
                later.append(f.buffer_index)
        assert index in later


@pytest.mark.parametrize("how", ["from_zerocam", "from_fd"])
def test_an_import_mapped_after_the_frames_release_keeps_the_buffer_by_its_map(how):
    # No frame holds the buffer when the import is mapped: its map ends with
    # its last array, and that borrow keeps the buffer from being drawn again.
    with zerocam.Camera.pattern("GREY", (64, 32), buffers=3) as cam:
        frame = cam.read()
        index = frame.buffer_index
        t2 = import_frame_buffer(frame, how)
        frame.release()
        with t2.map("read") as v:
            kept = np.asarray(v)
        assert v.mapped and v.exports == 1
        snap = kept.copy()
        assert all(cam.read(timeout=1).buffer_index != index for _ in range(6))
        assert np.array_equal(kept, snap)
        del kept
        assert not v.mapped
        assert any(cam.read(timeout=1).buffer_index == index for _ in range(6))


def test_an_import_of_other_memory_follows_the_rule():
    # Only capture buffers lent out by a frame keep a frame or their map:
    # another import of a file is a tensor like any other.
    t = Tensor(64, "uint8", mem="shm")
    fd = t.clone_fd()
    try:
        u = Tensor.from_fd(fd, 64, "uint8")
    finally:
        os.close(fd)
    with u.map() as v:
        a = np.asarray(v)
    assert not v.mapped and v.exports == 1
    with u.map("write") as w:  # not refused: `a` holds no map
        np.asarray(w)[:] = 4
    assert (a == 4).all()


# The cp311 wheel runs this only through the "memoryview" case (marked
# buffer_protocol): numpy then takes the map through the buffer protocol.
PBO_EXPORTS = [
    pytest.param("array", id="array"),
    pytest.param("memoryview", id="memoryview", marks=pytest.mark.buffer_protocol),
]


def pbo_export(view, kind):
    if kind == "array":
        return np.asarray(view)
    m = memoryview(view)
    a = np.asarray(m)  # keeps m's buffer, so the export, after m's name goes
    del m
    return a


def rgb_source():
    """A 32x32 RGB image of one colour, (255, 128, 0): a model input of
    (1.0, 128 / 255, 0.0) per channel, whatever the sampling."""
    src = Tensor.image(32, 32, PixelFormat.Rgb, mem="shm")
    with src.map("write") as w:
        np.asarray(w)[:] = (255, 128, 0)
    return src


def assert_orange(a, size):
    assert a.shape == (1, 3, size, size)
    for channel, value in enumerate((1.0, 128 / 255, 0.0)):
        assert np.allclose(a[0, channel], value, atol=0.01), (channel, a[0, channel])


@pytest.mark.parametrize("kind", PBO_EXPORTS)
def test_pbo_memory_keeps_the_old_rule(kind):
    # A GL PBO is mapped only while a map is open: its exports keep the map,
    # and release() refuses while they live (llvmpipe on the host). Were it
    # taken for memory mapped for its life, the view's garbage collection
    # would end the map (and unmap the buffer under `a`).
    src = rgb_source()
    x = Preprocessor(ModelInput(16, 16), device="gpu")(src)  # nobody keeps the preprocessor
    assert x.memory == "pbo"
    view = x.map("read")
    a = pbo_export(view, kind)
    with pytest.raises(zerocam.MapConflict, match="GL buffer"):
        view.release()
    assert view.mapped and not view.released and view.exports == 1
    del view
    gc.collect()  # the view is garbage: its map stays open for `a`
    with pytest.raises(zerocam.MapConflict):
        x.map("readwrite")
    assert_orange(a, 16)
    del x
    gc.collect()  # the tensor and the preprocessor gone: `a` keeps them
    assert_orange(a, 16)
    del a
    gc.collect()
    b = pbo_export(Preprocessor(ModelInput(8, 8), device="gpu")(src).map("read"), kind)
    gc.collect()
    assert_orange(b, 8)


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


def test_readme_camera_to_model_runs():
    """README.md's "Camera → model input → a model" in Python, as written: ten
    frames of the pattern camera, each a 1x3x224x224 float32 input, each
    buffer imported once."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Camera → model input → a model") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("```", start)]
    assert len(code.strip().splitlines()) <= 20, "the README promises 20 lines at most"
    code += "assert x.shape == (1, 3, 224, 224) and x.dtype == 'float32', (x.shape, x.dtype)\n"
    out = run_script(code)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 11, out.stdout  # ten frames, then the stats
    for n, line in enumerate(lines[:10]):
        sequence, value = line.split()
        assert int(sequence) == n and np.isfinite(float(value)), line
    stats = ast.literal_eval(lines[10])  # the dict camera.stats() printed
    assert stats["frames"] == 10 and stats["cache"]["misses"] == 4, stats
