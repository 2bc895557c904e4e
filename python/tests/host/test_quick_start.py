"""The reference's quick start, its read map, its pin_host paragraph and its
capsule example, run as written (see tests/reference_snippets.py): one name
for the frame across blocks, as capture loops have it. The `with` block is the
access bracket; arrays made in it keep the memory, not the map."""

import ctypes
import gc
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import zerocam
from zerocam import Tensor

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from reference_snippets import (  # noqa: E402 - after the path it is found on
    CAPSULE,
    PIN_HOST,
    QUICK_START,
    READ_MAP,
    SCRIPT,
    SETUP,
)


def test_the_reference_runs_as_one_script():
    out = subprocess.run([sys.executable, "-W", "error", "-c", SCRIPT], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    assert lines[0] == "(1080, 1920, 3) RGB uint8", out.stdout
    ptr, length, alignment = lines[1].split()
    assert int(ptr, 16) % 64 == 0 and int(length) == 1920 * 1080 * 3 and alignment == "64"
    assert len(lines) == 2


def test_the_second_block_maps_while_the_first_frame_lives():
    scope = {}
    exec(QUICK_START, scope)  # noqa: S102 - the reference itself
    tensor, first = scope["tensor"], scope["frame"]
    assert (first == 128).all() and first.flags.writeable
    exec(READ_MAP, scope)  # noqa: S102 - `frame` (= first) is alive as it runs
    second = scope["frame"]
    assert second is not first and not second.flags.writeable
    assert second.ctypes.data == first.ctypes.data  # the same memory
    assert (second == 128).all()
    first[0, 0] = (1, 2, 3)  # after both blocks: still the tensor's memory
    assert second[0, 0].tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="read-only"):
        second[0, 0] = 0
    exec(PIN_HOST, scope)  # noqa: S102
    assert scope["pin"].released
    assert tensor.numpy()[0, 0].tolist() == [1, 2, 3] and (tensor.numpy()[1:] == 128).all()


def test_the_pin_is_the_address_of_the_arrays():
    scope = {}
    exec(QUICK_START, scope)  # noqa: S102
    first = scope["frame"]
    exec(READ_MAP, scope)  # noqa: S102
    pin = scope["tensor"].pin_host("readwrite")  # beside both arrays
    assert pin.ptr == scope["frame"].ctypes.data == first.ctypes.data
    assert pin.len == scope["tensor"].nbytes
    with pin.cpu_access("write"):  # the pin's own bracket: no other is open
        ctypes.memset(pin.ptr, 9, 6)
    assert first[0, :2].tolist() == [[9, 9, 9], [9, 9, 9]] and first[0, 2].tolist() == [128] * 3
    with scope["tensor"].map() as view:  # while a bracket is open, a second one conflicts
        with pytest.raises(zerocam.MapConflict):
            pin.cpu_access("read")
        with pytest.raises(zerocam.MapConflict):
            scope["tensor"].map("read")
    pin.release()


def test_the_capsule_example_takes_the_branch_for_the_protocol():
    scope = {}
    exec(QUICK_START + SETUP, scope)  # noqa: S102
    taken = []
    tracing = CAPSULE.replace("    ...\n", "    taken.append(True)\n", 1).replace("    ...\n", "    taken.append(False)\n", 1)
    assert tracing.count("taken.append") == 2 and "..." not in tracing.replace("zerocam.*", "")
    exec(tracing, dict(scope, taken=taken))  # noqa: S102
    assert taken == [True], "CORRECT is taken, WRONG is not, for another module's tensor"
    exec(CAPSULE, scope)  # noqa: S102 - and verbatim, with `...` as the bodies
    obj, tensor, frame = scope["obj"], scope["tensor"], scope["frame"]
    u = Tensor.from_zerocam(obj)  # the frame of the first block is still alive
    assert u.fd_identity == tensor.fd_identity and u.shape == tensor.shape
    with u.map("read") as v:
        assert np.asarray(v)[5, 7].tolist() == [128] * 3
    assert isinstance(tensor, zerocam.Tensor) and frame.flags.writeable


def test_the_array_outlives_the_tensor_and_the_view():
    for mem in ("shm", "mem"):
        t = Tensor((64, 32), "uint16", mem=mem)
        with t.map() as view:
            a = np.asarray(view)
            a[:] = 3
        del t, view
        gc.collect()
        assert (a == 3).all()  # read: the storage and its mapping are kept by `a`
        a[:] = 40000  # write
        assert int(a.sum()) == 40000 * 64 * 32
        b = a[10:20].copy()
        del a
        gc.collect()
        assert (b == 40000).all()
