"""CuPy without a GPU: what CuPy (cupy-cuda12x, pinned in python/ci.sh)
takes of zerocam's CUDA maps when it has no CUDA runtime to call, with the
driver test double as zerocam's driver (cuda_scenario.py).

CuPy imports on a machine without a driver. Its legacy importer,
`cupy.fromDlpack(capsule)`, builds an array on the capsule without a runtime
call, so a real consumer checks the capsule here: its pointer, shape, dtype
and strides, the consumed name, and that the map lives exactly as long as
CuPy's array. `cupy.asarray` reads `__cuda_array_interface__` and then needs
the runtime for the pointer's device, and `cupy.from_dlpack` needs it before
it calls `__dlpack__`: those are checked up to that point, so that a change
in either (or in what we export) is noticed. With a GPU,
test_cuda.py's test_torch_and_cupy_take_the_memory_when_present runs the
whole of each.

The scenarios hide any real device from CuPy's runtime
(`CUDA_VISIBLE_DEVICES=""`), so they mean the same on a machine with one.
"""

import textwrap

from cuda_scenario import scenario

CUPY = """
import warnings
import cupy
from cupy_backends.cuda.api.runtime import CUDARuntimeError
assert cupy.__version__ == "14.2.0", cupy.__version__  # the behaviour below is this one's

def from_capsule(capsule):
    \"\"\"CuPy's legacy importer (deprecated, and warns so).\"\"\"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cupy.fromDlpack(capsule)
"""


def cupy_scenario(code, library):
    """A scenario with CuPy imported (required, as jax is by test_jax.py)
    and no device for its runtime."""
    scenario(CUPY + textwrap.dedent(code), library, {"CUDA_VISIBLE_DEVICES": ""})


def test_cupy_imports_both_capsules_on_the_device_pointer(double):
    cupy_scenario(
        """
        for dtype in ("uint8", "int16", "float16", "float32"):
            t = Tensor((4, 6), dtype, mem="shm")
            item = np.dtype(dtype).itemsize
            for access in ("rw", "r"):
                for max_version, name in [(None, "dltensor"), ((1, 0), "dltensor_versioned")]:
                    with t.cuda(access) as c:
                        capsule = c.__dlpack__(stream=None, max_version=max_version)
                        a = from_capsule(capsule)
                        assert repr(capsule).startswith(f'<capsule object "used_{name}"'), capsule
                        assert a.data.ptr == c.device_ptr, (a.data.ptr, c.device_ptr)
                        assert a.shape == (4, 6) and a.dtype == np.dtype(dtype)
                        assert a.strides == (6 * item, item) and a.flags.c_contiguous
                        assert a.device.id == 0
                    del c, capsule
                    gc.collect()
                    # CuPy's array holds the capsule, and so the map.
                    with pytest.raises(zerocam.MapConflict):
                        t.map("w")
                    del a
                    gc.collect()
                    with t.map("w"):
                        pass

        # Padded rows and a view: CuPy's strides and pointer are the image's.
        img = Tensor.image(10, 4, PixelFormat.Rgb, mem="shm", row_stride=64)
        base = img.pin_host("read").ptr  # before the map: pinning takes a short read borrow
        with img.view((2, 1, 4, 2)).cuda("r") as c:
            a = from_capsule(c.__dlpack__(stream=None))
            assert a.shape == (2, 4, 3) and a.strides == (64, 3, 1), (a.shape, a.strides)
            assert a.data.ptr == base + 64 + 2 * 3
            assert not a.flags.c_contiguous
        del a, c
        gc.collect()
        with img.map("w"):
            pass
        """,
        double,
    )


def test_cupy_reads_the_interface_then_needs_the_runtime(double):
    cupy_scenario(
        """
        t = Tensor((4, 6), "float32", mem="shm")
        with t.cuda("r") as c:
            spy = Spy(c)
            with pytest.raises(CUDARuntimeError):
                cupy.asarray(spy)
            # CuPy read the interface (it parsed it, then asked the runtime
            # for the pointer's device): nothing else of ours.
            assert set(spy.read) == {"__cuda_array_interface__"}, spy.read
            del spy
        # It was read, so the end of the block cannot know that no consumer
        # holds the pointer: the map lives until the array object is gone.
        assert c.released
        with pytest.raises(zerocam.MapConflict):
            t.map("w")
        del c
        gc.collect()
        with t.map("w"):
            pass
        """,
        double,
    )


def test_cupy_from_dlpack_asks_the_runtime_before_the_capsule(double):
    cupy_scenario(
        """
        t = Tensor((4, 6), "float32", mem="shm")
        for access in ("rw", "r"):
            with t.cuda(access) as c:
                spy = Spy(c)
                with pytest.raises(CUDARuntimeError):
                    cupy.from_dlpack(spy)
                # It asked where the memory is, then the runtime for its device:
                # no capsule was made, so nothing holds the map past the block.
                assert set(spy.read) == {"__dlpack_device__"}, spy.read
                del spy
            with t.map("w"):
                pass
        """,
        double,
    )
