"""Tensors on the host: every dtype, padded strides, maps, exports, pins."""

import ctypes
import gc

import numpy as np
import pytest

import zerocam
from zerocam import PixelFormat, Region, Tensor

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float16", "float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mem", ["mem", "shm"])
def test_every_dtype_maps_zero_copy(dtype, mem):
    t = Tensor((3, 5, 2), dtype, mem=mem)
    assert t.shape == (3, 5, 2) and t.dtype == dtype and t.memory == mem
    with t.map() as view:
        a = np.asarray(view)
        assert a.dtype == np.dtype(dtype) and a.shape == (3, 5, 2)
        assert a.strides == view.strides == t.strides
        assert a.ctypes.data == view.ptr  # the mapped address itself
        assert not a.any()  # zeroed
        a[...] = np.arange(30).reshape(3, 5, 2).astype(dtype)
        del a
    with t.map("read") as view:
        b = np.asarray(view)
        assert (b == np.arange(30).reshape(3, 5, 2).astype(dtype)).all()
        del b


def test_numpy_dtype_objects_and_bad_dtypes():
    assert Tensor(4, np.float32).dtype == "float32"
    assert Tensor([2, 2], np.dtype("int16")).dtype == "int16"
    with pytest.raises(ValueError, match="complex64"):
        Tensor(4, "complex64")
    with pytest.raises(zerocam.InvalidArgument, match=r"\[2, -1\]"):
        Tensor([2, -1])
    with pytest.raises(ValueError, match="empty"):
        Tensor([])
    with pytest.raises(ValueError, match="gpu"):
        Tensor(4, mem="gpu")


def test_padded_row_stride_is_published_not_reshaped():
    t = Tensor.image(100, 20, PixelFormat.Rgb, mem="shm", row_stride=320)
    assert t.shape == (20, 100, 3) and t.row_stride == 320
    assert t.strides == (320, 3, 1)
    with t.map() as view:
        a = np.asarray(view)
        assert a.strides == (320, 3, 1)
        a[:, :, 0] = np.arange(20, dtype=np.uint8)[:, None]
        a[:, :, 1] = np.arange(100, dtype=np.uint8)[None, :]
        del a
    # the raw bytes: row r starts r*320 bytes in, padding untouched
    raw = Tensor.from_fd(t.fd, [20 * 320], "uint8")
    with raw.map("read") as view:
        b = np.asarray(view)
        assert b[5 * 320] == 5 and b[5 * 320 + 3 * 7 + 1] == 7
        assert not b[5 * 320 + 300 : 6 * 320].any()
        del b


def test_read_map_rejects_writes():
    t = Tensor((4, 4), "uint8", mem="shm")
    with t.map("read") as view:
        a = np.asarray(view)
        assert view.readonly and not a.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            a[0, 0] = 1
        del a


def test_use_after_release_raises():
    t = Tensor((2, 3), "int32")
    with t.map() as view:
        pass
    for use in (np.asarray, lambda v: v.shape, lambda v: v.ptr, lambda v: v.numpy()):
        with pytest.raises(zerocam.Released):
            use(view)
    view.release()  # idempotent


def test_writable_maps_conflict():
    t = Tensor((4, 4), "uint8", mem="shm")
    with t.map():
        with pytest.raises(BufferError, match="conflict|overlap|map"):
            t.map()
        with pytest.raises(zerocam.MapConflict):
            Tensor.from_fd(t.fd, [16], "uint8").map("read")


def test_write_through_one_view_is_seen_through_another():
    t = Tensor.image(64, 48, PixelFormat.Rgb, mem="shm")
    crop = t.view(Region(8, 4, 16, 8))
    assert crop.shape == (8, 16, 3) and crop.buffer_id == t.buffer_id
    with crop.map() as v:
        a = np.asarray(v)
        a[:] = 200
        del a
    other = Tensor.from_fd(t.clone_fd(), (48, 64, 3), "uint8")
    assert other.fd_identity == t.fd_identity
    with other.map("read") as v:
        b = np.asarray(v)
        assert (b[4:12, 8:24] == 200).all()
        assert b[:4].sum() == 0 and b[12:].sum() == 0
        del b
    with pytest.raises(ValueError, match="out of bounds"):
        t.view((60, 0, 10, 10))


def test_batch_and_planes():
    b = Tensor((3, 4, 5), "float32", mem="mem")
    assert b.batch(2).shape == (4, 5)
    with pytest.raises(ValueError, match="3"):
        b.batch(3)
    nv = Tensor.image(32, 16, "NV12", mem="shm")
    assert nv.shape == (24, 32) and nv.planes == 2 and nv.format == PixelFormat.Nv12
    assert nv.plane(0).shape == (16, 32) and nv.plane(1).shape == (8, 32)
    batched = Tensor.image(8, 4, PixelFormat.Grey, mem="shm", batch=3)
    assert batched.shape == (3, 4, 8, 1) and batched.strides == (32, 8, 1, 1)
    assert batched.batch(1).shape == batched.shape[1:]


def test_from_fd_errors_name_the_values():
    with pytest.raises(OSError) as e:
        Tensor.from_fd(987654, [4])
    assert e.value.errno == 9 and "987654" in str(e.value)
    t = Tensor(16, mem="shm")
    with pytest.raises(ValueError, match="too small"):
        Tensor.from_fd(t.fd, [1000])


def test_heap_tensor_has_no_fd():
    t = Tensor(8, mem="mem")
    assert t.fd is None and t.fd_identity is None
    with pytest.raises(ValueError):
        t.clone_fd()


def test_pin_host_is_stable_across_maps():
    t = Tensor((16, 16), "uint8", mem="shm")
    pin = t.pin_host("readwrite")
    assert pin.len == 256 and pin.alignment == 64
    with t.map() as v:
        assert v.ptr == pin.ptr
    with t.map("read") as v:
        assert v.ptr == pin.ptr
    with pin.cpu_access("read") as bracket:
        assert bracket.active
        with pytest.raises(zerocam.MapConflict):
            t.map("write")  # the bracket is a read borrow
    assert not bracket.active
    del t
    gc.collect()
    assert pin.ptr  # still valid: the pin holds the buffer
    pin.release()
    with pytest.raises(zerocam.Released):
        pin.ptr
    ro = Tensor(8, mem="mem").pin_host("read")
    with pytest.raises(ValueError, match="write"):
        ro.cpu_access("write")


def test_capsule_round_trip_shares_the_buffer():
    t = Tensor.image(40, 30, PixelFormat.Rgb, mem="shm", row_stride=128)
    cap = t.__zerocam_tensor__()
    assert type(cap).__name__ == "PyCapsule" and zerocam.CAPSULE_NAME in repr(cap)
    u = Tensor.from_zerocam(t)
    assert u.fd_identity == t.fd_identity and u.strides == t.strides and u.shape == t.shape
    arr = Tensor((5, 6), "float64", mem="shm")
    v = Tensor.from_zerocam(arr)
    with arr.map() as m:
        a = np.asarray(m)
        a[1, 2] = 4.5
        del a
    assert v.numpy()[1, 2] == 4.5
    with pytest.raises(BufferError, match="dlpack"):
        Tensor(4, mem="mem").__zerocam_tensor__()


def test_capsule_round_trip_keeps_the_batch():
    t = Tensor.image(8, 4, PixelFormat.Rgb, mem="shm", row_stride=32, batch=3)
    assert t.shape == (3, 4, 8, 3) and t.strides == (128, 32, 3, 1)
    u = Tensor.from_zerocam(t)
    assert (u.shape, u.strides, u.format, u.row_stride) == (t.shape, t.strides, t.format, 32)
    with t.batch(2).map() as m:
        np.asarray(m)[1, 2] = 7
    assert u.batch(2).numpy()[1, 2].tolist() == [7, 7, 7]
    assert not u.batch(1).numpy().any()


class CapsuleStruct(ctypes.Structure):
    """`struct zerocam_tensor_v1`, for producing capsules from Python."""

    _fields_ = [("abi", ctypes.c_uint32), ("fd", ctypes.c_int32), ("code", ctypes.c_uint8),
                ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16), ("ndim", ctypes.c_uint32),
                ("offset", ctypes.c_uint64), ("shape", ctypes.c_int64 * 8),
                ("strides", ctypes.c_int64 * 8), ("format", ctypes.c_char * 16),
                ("width", ctypes.c_uint32), ("height", ctypes.c_uint32), ("row_stride", ctypes.c_uint32)]


def _capsule_new():
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new


class ImageProducer:
    """A foreign module's image tensor: a capsule over `buf`'s fd (float32 samples)."""

    def __init__(self, buf, fmt, width, height, row_stride, shape, strides):
        self.s = CapsuleStruct(abi=1, fd=buf.fd, code=2, bits=32, lanes=1, ndim=len(shape),
                               format=fmt, width=width, height=height, row_stride=row_stride)
        for i, (d, st) in enumerate(zip(shape, strides)):
            self.s.shape[i], self.s.strides[i] = d, st
        self.cap = _capsule_new()(ctypes.addressof(self.s), b"zerocam.tensor.v1", None)

    def __zerocam_tensor__(self):
        return self.cap


def test_capsule_round_trip_keeps_padded_planes():
    # PLANAR_RGB, 4x2 float32 samples, rows 16 bytes, planes 64 bytes apart (32 needed)
    buf = Tensor(64, "float32", mem="shm")
    u = Tensor.from_zerocam(ImageProducer(buf, b"PLANAR_RGB", 4, 2, 16, (3, 2, 4), (64, 16, 4)))
    assert (u.shape, u.strides, u.dtype, u.format) == ((3, 2, 4), (64, 16, 4), "float32", PixelFormat.PlanarRgb)
    again = Tensor.from_zerocam(u)  # and out again through our own export
    assert (again.shape, again.strides, again.dtype) == (u.shape, u.strides, u.dtype)
    with buf.map() as m:
        np.asarray(m)[32] = 2.5  # byte 128: plane 2, row 0, column 0
    assert again.plane(2).numpy()[0, 0] == 2.5 and u.plane(1).numpy()[0, 0] == 0


def test_capsule_image_with_inconsistent_strides_is_refused():
    buf = Tensor(64, "float32", mem="shm")
    # GREY 8x4 float32 rows of 32 bytes claim a 40-byte row stride in `strides`
    bad = ImageProducer(buf, b"GREY", 8, 4, 32, (4, 8, 1), (40, 4, 4))
    with pytest.raises(zerocam.InvalidArgument, match=r"shape \[4, 8, 1\] and strides \[32, 4, 4\].*strides \[40, 4, 4\]"):
        Tensor.from_zerocam(bad)


# Run with the cp311-abi3 wheel (the real buffer protocol); python/ci.sh
# deselects them by marker (-m "not buffer_protocol") for the cp39-abi3 wheel,
# which has none.
needs_buffer_protocol = pytest.mark.buffer_protocol


@needs_buffer_protocol
@pytest.mark.parametrize("dtype,fmt", [("uint8", "B"), ("int16", "h"), ("float16", "e"), ("float32", "f"), ("float64", "d")])
def test_buffer_protocol_shape_strides_format(dtype, fmt):
    t = Tensor((3, 4), dtype, mem="shm")
    with t.map() as view:
        m = memoryview(view)
        assert m.format == fmt and m.shape == (3, 4) and m.strides == t.strides
        assert not m.readonly and view.exports == 1
        a = np.asarray(m)
        assert a.ctypes.data == view.ptr
        del a
        m.release()
        assert view.exports == 0


@needs_buffer_protocol
def test_buffer_protocol_padded_and_read_only():
    t = Tensor.image(10, 4, PixelFormat.Rgb, mem="shm", row_stride=64)
    with t.map("read") as view:
        m = memoryview(view)
        assert m.strides == (64, 3, 1) and m.readonly
        with pytest.raises(TypeError):
            m[0, 0, 0] = 1
        view.release()  # ends the map now; the memoryview keeps the memory
        assert not view.mapped and view.exports == 1 and m[3, 9, 2] == 0
        m.release()
        assert view.exports == 0
    with t.map() as view:
        np.asarray(view)[:] = 5
        assert bytes(view) == b"\x05" * 120  # the elements, the padding skipped
    with t.map() as view:
        pass
    with pytest.raises(zerocam.Released):
        memoryview(view)


def test_foreign_capsules_are_checked_not_trusted():
    t = Tensor(64, mem="shm")
    new = _capsule_new()
    keep = []

    class Producer:
        def __init__(self, **fields):
            s = CapsuleStruct(abi=1, fd=t.fd, code=1, bits=8, lanes=1, ndim=1)
            s.shape[0], s.strides[0] = 64, 1
            for k, v in fields.items():
                if k in ("shape", "strides"):
                    getattr(s, k)[0] = v
                else:
                    setattr(s, k, v)
            keep.append(s)
            self.cap = new(ctypes.addressof(s), b"zerocam.tensor.v1", None)

        def __zerocam_tensor__(self):
            return self.cap

    assert Tensor.from_zerocam(Producer()).shape == (64,)
    for bad in (dict(shape=-1), dict(shape=0), dict(strides=-8), dict(ndim=9), dict(abi=2), dict(bits=7)):
        with pytest.raises(ValueError):
            Tensor.from_zerocam(Producer(**bad))
    with pytest.raises(OSError):
        Tensor.from_zerocam(Producer(fd=999999))

    class Wrong:
        def __zerocam_tensor__(self):
            return new(ctypes.addressof(keep[0]), b"something.else", None)

    with pytest.raises(ValueError):
        Tensor.from_zerocam(Wrong())
