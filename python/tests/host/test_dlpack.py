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


class Versioned:
    """Asks for the versioned capsule explicitly, whatever the consumer asks."""

    def __init__(self, source):
        self.source = source
        self.names = []

    def __dlpack_device__(self):
        return self.source.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        kwargs["max_version"] = (1, 0)
        cap = self.source.__dlpack__(**kwargs)
        self.names.append(repr(cap).split('"')[1])
        return cap


def test_numpy_consumes_the_versioned_capsule():
    t = Tensor((3, 5), "float32", mem="shm")
    pin = t.pin_host("read")
    src = Versioned(t)
    a = np.from_dlpack(src)
    assert src.names == ["dltensor_versioned"]
    assert a.ctypes.data == pin.ptr and a.flags.writeable
    a[2, 4] = 1.25
    del a
    assert t.numpy()[2, 4] == 1.25


def test_versioned_capsule_falls_back_to_read_only_beside_a_read_map():
    t = Tensor(16, "uint8", mem="shm")
    with t.map("read") as v:
        keep = np.asarray(v)
        x = np.from_dlpack(Versioned(t))  # a read-write map conflicts: a read-only export
        assert not x.flags.writeable and x.ctypes.data == keep.ctypes.data
        with pytest.raises(BufferError):
            t.__dlpack__()  # the legacy capsule cannot be read-only: the conflict is raised
    # `keep` outlives the block but not its read map; x's read map is open.
    with pytest.raises(BufferError):
        t.__dlpack__()
    del x
    y = np.from_dlpack(Versioned(t))  # beside `keep`: read-write again
    assert y.flags.writeable and y.ctypes.data == keep.ctypes.data
