"""torch without CUDA: what Debian's CPU-only torch (python3-torch, 1.13 on
bookworm; tests/setup installs it) takes of zerocam's CUDA maps, with the
driver test double as zerocam's driver (cuda_scenario.py).

Debian's torch runs under Debian's interpreter, so the scenarios run
`/usr/bin/python3` with only this zerocam package added to its path (Debian's
numpy, not the venv's). torch 1.13 is from before DLPack 1.0: it asks for the
legacy capsule and knows no other, the consumer a read map's legacy capsule
is for. A CPU-only build parses a capsule into a CUDA tensor before it finds
it has no CUDA, so the capsule's ownership is tested for real: the tensor
dies with the error and its deleter ends the map. `from_dlpack(obj)` and
`as_tensor` read only what they must before they need CUDA.

With a GPU, test_cuda.py's test_torch_and_cupy_take_the_memory_when_present
runs the whole of each.
"""

import pathlib
import textwrap

import pytest

import zerocam
from cuda_scenario import scenario

DEBIAN_PYTHON = "/usr/bin/python3"

TORCH = """
import sys
import torch
from torch.utils.dlpack import from_dlpack
assert not torch.cuda.is_available()
"""


@pytest.fixture
def torch_scenario(double, tmp_path):
    """Runs a scenario under Debian's interpreter with torch imported and this
    zerocam package (the one pytest imported) on its path."""
    (tmp_path / "zerocam").symlink_to(pathlib.Path(zerocam.__file__).parent)
    env = {"PYTHONPATH": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}

    def run(code):
        scenario(TORCH + textwrap.dedent(code), double, env, DEBIAN_PYTHON)

    return run


def test_torch_takes_the_legacy_capsule_and_its_tensor_ends_the_map(torch_scenario):
    torch_scenario(
        """
        t = Tensor((4, 6), "float32", mem="shm")
        for access in ("rw", "r"):
            with t.cuda(access) as c:
                capsule = c.__dlpack__(stream=None)
                with pytest.raises(RuntimeError, match="not compiled with CUDA"):
                    from_dlpack(capsule)
                # torch parsed it into a CUDA tensor (the capsule is used) and
                # only then found it has no CUDA: that tensor died with the
                # error, and its deleter gave the capsule's share of the map back.
                assert repr(capsule).startswith('<capsule object "used_dltensor"'), capsule
                del capsule
            with t.map("w"):
                pass
        """
    )


def test_torch_refuses_the_versioned_capsule_and_the_capsule_frees_its_map(torch_scenario):
    torch_scenario(
        """
        t = Tensor((4, 6), "float32", mem="shm")
        with t.cuda("r") as c:
            capsule = c.__dlpack__(stream=None, max_version=(1, 0))
            with pytest.raises(RuntimeError, match="invalid capsule"):
                from_dlpack(capsule)
            assert repr(capsule).startswith('<capsule object "dltensor_versioned"'), capsule
            with pytest.raises(zerocam.MapConflict):
                c.release()  # the capsule still holds the map
            del capsule  # never consumed: its destructor ends its share
            c.release()
        with t.map("w"):
            pass
        """
    )


def test_torch_from_dlpack_asks_where_the_memory_is_before_the_capsule(torch_scenario):
    torch_scenario(
        """
        t = Tensor((4, 6), "float32", mem="shm")
        with t.cuda() as c:
            spy = Spy(c)
            with pytest.raises(AssertionError, match="not compiled with CUDA"):
                from_dlpack(spy)
            # It looked for `__dlpack__` and asked the device (kDLCUDA), then
            # needed a CUDA stream to pass: no capsule was made.
            assert spy.called == ["__dlpack_device__"], spy.called
            del spy
        with t.map("w"):
            pass
        """
    )


def test_torch_as_tensor_refuses_a_read_map_and_keeps_a_failed_arrays_reference(torch_scenario):
    torch_scenario(
        """
        t = Tensor((4, 6), "float32", mem="shm")
        with t.cuda("r") as c:
            spy = Spy(c)
            # torch takes no read-only interface (torch 2 neither): a read map
            # goes to torch by DLPack.
            with pytest.raises(TypeError, match="read only flag is not supported"):
                torch.as_tensor(spy, device="cuda")
            assert set(spy.read) == {"__cuda_array_interface__"}, spy.read
            del spy
        del c
        gc.collect()
        with t.map("w"):  # refused before torch took anything
            pass

        with t.cuda("rw") as c:
            before = sys.getrefcount(c)
            with pytest.raises(RuntimeError, match="without ATen_cuda"):
                torch.as_tensor(c, device="cuda")
            # torch took a reference for its tensor's deleter, then failed
            # before the tensor existed: the reference is never given back.
            assert sys.getrefcount(c) == before + 1
        # The interface was read, so the map waits for the CudaArray, which
        # torch keeps: the map lives on (docs/cuda.md says so).
        assert c.released
        del c
        gc.collect()
        with pytest.raises(zerocam.MapConflict):
            t.map("w")
        """
    )
