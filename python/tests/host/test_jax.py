"""DLPack with a real consumer: jax (CPU). `jax.numpy.from_dlpack` takes
zerocam tensors and map views without a copy — the jax array's buffer is the
mapped address — sees writes made through zerocam, consumes the versioned
capsule as well as the legacy one, and holds the map until it dies.

XLA's CPU client imports only 64-byte-aligned data without a copy (it copies
other data, or raises with copy=False); zerocam's buffers are 64-byte aligned,
so whole tensors and aligned batches go zero-copy. It refuses non-compact
strides (padded rows) with an error. python/ci.sh installs jax into its venv."""

import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import zerocam
from zerocam import PixelFormat, Tensor

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float16", "float32"]


class Versioned:
    """Hands the consumer the versioned capsule: jax's from_dlpack calls
    `__dlpack__(stream=...)` without max_version, and so gets the legacy one."""

    def __init__(self, source):
        self.source = source
        self.capsules = []

    def __dlpack_device__(self):
        return self.source.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        cap = self.source.__dlpack__(max_version=(1, 0), **kwargs)
        self.capsules.append(repr(cap))
        return cap


@pytest.mark.parametrize("dtype", DTYPES)
def test_jax_takes_a_tensor_without_a_copy(dtype):
    t = Tensor((4, 6), dtype, mem="shm")
    pin = t.pin_host("read")  # before the export: pinning takes a short read borrow
    j = jnp.from_dlpack(t, copy=False)
    assert j.dtype == np.dtype(dtype) and j.shape == (4, 6)
    assert j.unsafe_buffer_pointer() == pin.ptr  # the mapped address itself
    with pytest.raises(zerocam.MapConflict):
        t.map()  # the jax array holds the capsule's read-write map
    del j
    gc.collect()
    with t.map():
        pass


def test_a_write_through_zerocam_is_seen_through_jax():
    t = Tensor((4, 16), "float32", mem="shm")
    with t.map() as v:
        a = np.asarray(v)
        j = jnp.from_dlpack(v, copy=False)  # one more export of the same map
        assert j.unsafe_buffer_pointer() == v.ptr and v.exports == 2
        a[1, 2] = 5.0
        assert float(j[1, 2]) == 5.0
    a[3, :] = 1.5  # after the block: the map ended, both still hold the memory
    assert float(j.sum()) == 5.0 + 16 * 1.5
    assert v.released and not v.mapped
    del a
    assert v.exports == 1  # jax still holds it
    with t.map() as w:  # jax keeps the memory, not the map
        np.asarray(w)[0, 0] = 2.0
    assert float(j[0, 0]) == 2.0
    del j
    assert v.exports == 0


def test_jax_takes_the_legacy_capsule_and_refuses_the_versioned_one():
    t = Tensor((8, 8), "uint16", mem="shm")
    with t.map() as v:
        np.asarray(v)[:] = np.arange(64, dtype=np.uint16).reshape(8, 8)
    # jax 0.10's importer takes only "dltensor" capsules: handed a versioned
    # one, it refuses without consuming it, and the capsule's own destructor
    # ends its export (numpy consumes the versioned capsule: test_dlpack.py).
    pin = t.pin_host("read")
    src = Versioned(t)
    with pytest.raises(jax.errors.JaxRuntimeError, match='name "dltensor", got "dltensor_versioned"'):
        jnp.from_dlpack(src)
    assert "dltensor_versioned" in src.capsules[0]
    with t.map() as v:  # no map left behind by the refused capsule
        j = jnp.from_dlpack(v, copy=False)  # jax's own request: the legacy capsule
        assert j.unsafe_buffer_pointer() == pin.ptr
    assert int(j[7, 7]) == 63 and not v.mapped and v.exports == 1
    del j
    assert v.exports == 0


def test_a_read_map_goes_to_jax_by_no_capsule():
    # The legacy capsule cannot say read-only (a consumer could write through
    # it): refused. jax takes no versioned capsule. Neither leaves a map.
    t = Tensor(64, "uint8", mem="shm")
    with t.map("read") as v:
        with pytest.raises(BufferError, match="max_version"):
            jnp.from_dlpack(v)
        with pytest.raises(jax.errors.JaxRuntimeError, match="dltensor_versioned"):
            jnp.from_dlpack(Versioned(v))
        assert v.exports == 0
    assert not v.mapped
    j = jnp.from_dlpack(t)  # the tensor's own capsule maps it read-write
    del j
    with t.map("write"):
        pass


def test_alignment_decides_between_zero_copy_and_a_copy():
    # A batch element 64 bytes in: aligned, zero-copy.
    aligned = Tensor((3, 64), "uint8", mem="shm")
    pin = aligned.pin_host("read")
    j = jnp.from_dlpack(aligned.batch(1), copy=False)
    assert j.unsafe_buffer_pointer() == pin.ptr + 64
    del j
    # 40 bytes in: XLA copies it (and refuses with copy=False).
    odd = Tensor((3, 40), "uint8", mem="shm")
    with odd.batch(1).map() as v:
        np.asarray(v)[:] = 9
    pin = odd.pin_host("read")
    with pytest.raises(ValueError, match="aligned to 64"):
        jnp.from_dlpack(odd.batch(1), copy=False)
    copied = jnp.from_dlpack(odd.batch(1))
    assert copied.unsafe_buffer_pointer() != pin.ptr + 40 and (np.asarray(copied) == 9).all()
    with odd.map():  # the copy holds no map: the capsule was deleted after copying
        pass


def test_padded_rows_are_refused_and_the_map_ends():
    t = Tensor.image(10, 4, PixelFormat.Rgb, mem="shm", row_stride=64)
    with pytest.raises(jax.errors.JaxRuntimeError, match="compact"):
        jnp.from_dlpack(t)
    with t.map():  # jax deleted the capsule: no map left behind
        pass


def test_float64_is_zero_copy_with_x64_only():
    t = Tensor(8, "float64", mem="shm")
    pin = t.pin_host("read")
    with jax.enable_x64(True):
        j = jnp.from_dlpack(t, copy=False)
        assert j.dtype == np.float64 and j.unsafe_buffer_pointer() == pin.ptr
    del j
    # Without x64, jax turns float64 into a float32 copy (even with copy=False).
    j = jnp.from_dlpack(t)
    assert j.dtype == np.float32 and j.unsafe_buffer_pointer() != pin.ptr
    del j
    with t.map():
        pass
