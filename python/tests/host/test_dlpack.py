"""DLPack: numpy takes the memory without a copy, and gives it back."""

import gc

import numpy as np
import pytest

import zerocam
from zerocam import Tensor

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float16", "float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_dlpack_is_zero_copy(dtype):
    t = Tensor((4, 6), dtype, mem="shm")
    pin = t.pin_host("read")  # before the export: pinning takes a short read borrow
    a = np.from_dlpack(t)
    assert a.dtype == np.dtype(dtype) and a.shape == (4, 6)
    assert a.ctypes.data == pin.ptr
    a[2, 3] = 7
    del a
    gc.collect()
    assert t.numpy()[2, 3] == 7


def test_dlpack_device_and_padded_strides():
    t = Tensor.image(10, 4, zerocam.PixelFormat.Rgb, mem="mem", row_stride=64)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert a.strides == (64, 3, 1)


def test_dlpack_export_holds_a_map():
    t = Tensor(16, "uint8", mem="shm")
    a = np.from_dlpack(t)
    with pytest.raises(zerocam.MapConflict):
        t.map()
    del a
    gc.collect()
    with t.map():
        pass


def test_unconsumed_capsules_are_freed():
    t = Tensor(16, mem="shm")
    for _ in range(100):
        t.__dlpack__()
        t.__dlpack__(max_version=(1, 0))
    gc.collect()
    with t.map():  # every capsule's map ended
        pass


def test_dlpack_refuses_other_devices_and_copies():
    t = Tensor(4)
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        t.__dlpack__(copy=True)
