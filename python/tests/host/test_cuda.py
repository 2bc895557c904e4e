"""CUDA: `Tensor.cuda()`, `Frame.cuda()` and `CudaArray`, against the CUDA
driver test double, so no GPU is needed: each test a scenario in a fresh
interpreter (cuda_scenario.py says how).
"""

import os
import subprocess
import sys
import textwrap

import pytest

from cuda_scenario import NO_DRIVER, ROOT, scenario


def test_without_a_driver_cuda_is_unavailable_and_names_the_library():
    scenario(
        f"""
        assert zerocam.cuda_available() is False
        assert zerocam.cuda_info() is None
        t = Tensor(16, mem="shm")
        for call in (t.cuda, lambda: t.cuda("r")):
            with pytest.raises(zerocam.CudaUnavailable, match="{NO_DRIVER}") as e:
                call()
            assert e.value.library == "{NO_DRIVER}" and e.value.reason
            assert isinstance(e.value, zerocam.CudaError) and isinstance(e.value, zerocam.Error)
        with Camera.pattern("GREY", (64, 32)) as cam, cam.read() as frame:
            with pytest.raises(zerocam.CudaUnavailable, match="{NO_DRIVER}"):
                frame.cuda()
        with t.map("w"):  # the CPU side is untouched
            pass
        """,
        NO_DRIVER,
    )


def test_a_driver_without_devices_is_unavailable(double):
    scenario(
        """
        D.zcd_set_device_count(0)
        assert zerocam.cuda_available() is False and zerocam.cuda_info() is None
        with pytest.raises(zerocam.CudaUnavailable, match="no CUDA device 0"):
            Tensor(16, mem="shm").cuda()
        """,
        double,
    )


def test_cuda_info_describes_the_double(double):
    scenario(
        """
        assert zerocam.cuda_available()
        info = zerocam.cuda_info()
        assert info["name"] == "zerocam test double", info
        assert info["compute_capability"] == (8, 7)
        assert info["integrated"] is True and info["driver_version"] == 12080
        assert info["ordinal"] == 0 and info["library"] == os.environ["ZEROCAM_CUDA_LIBRARY"]
        assert info["host_register"] is True and info["unknown_attributes"] == []
        """,
        double,
    )


def test_cuda_array_interface_fields(double):
    scenario(
        """
        t = Tensor((4, 6), "uint8", mem="shm")
        ptr = t.pin_host("read").ptr  # before the map: pinning takes a short read borrow
        with t.cuda() as c:
            cai = c.__cuda_array_interface__
            assert cai == {
                "shape": (4, 6), "typestr": "|u1", "data": (ptr, False),
                "strides": None, "version": 3, "stream": c.stream,
            }, cai
            assert c.stream != 0 and c.device_ptr == c.host_ptr == ptr
            assert c.path == "host-registered" and c.access == "readwrite" and c.nbytes == 24
            assert c.shape == (4, 6) and c.strides == (6, 1) and c.dtype == "uint8"
            assert c.planes == [{"device_ptr": ptr, "pitch": 6, "shape": (4, 6), "nbytes": 24}]
        assert c.released
        with pytest.raises(zerocam.Released):
            c.__cuda_array_interface__
        with pytest.raises(zerocam.Released):
            c.device_ptr

        for dtype, typestr in [("float32", "<f4"), ("float16", "<f2"), ("int16", "<i2")]:
            f = Tensor((3, 5), dtype, mem="shm")
            with f.cuda("r") as c:
                cai = c.__cuda_array_interface__
                assert cai["typestr"] == typestr and cai["shape"] == (3, 5)
                assert cai["data"][1] is True and cai["strides"] is None, cai
                assert c.access == "read"

        img = Tensor.image(10, 4, PixelFormat.Rgb, mem="shm", row_stride=64)
        base = img.pin_host("read").ptr
        with img.cuda() as c:
            assert c.__cuda_array_interface__["strides"] == (64, 3, 1)
        # The interface was read: the map ends with `c` (a consumer may hold it).
        del c
        view = img.view((2, 1, 4, 2))  # x, y, width, height
        with view.cuda("r") as c:
            cai = c.__cuda_array_interface__
            assert cai["shape"] == (2, 4, 3) and cai["strides"] == (64, 3, 1), cai
            assert cai["data"] == (base + 64 + 2 * 3, True)
        """,
        double,
    )


def test_a_buffer_is_registered_once_over_1000_maps(double):
    scenario(
        """
        t = Tensor((480, 640), "uint8", mem="shm")
        pointers = set()
        for i in range(1000):
            with t.cuda("r" if i % 2 else "rw") as c:
                pointers.add(c.device_ptr)
        assert len(pointers) == 1
        assert count("cuMemHostRegister_v2") == 1, count("cuMemHostRegister_v2")
        assert count("cuMemHostUnregister") == 0
        del t, c
        gc.collect()
        # The registration goes once its tensor is gone (swept by the next map).
        Tensor(16, mem="shm").cuda().release()
        assert count("cuMemHostUnregister") == 1
        """,
        double,
    )


def test_copy_to_host_reads_what_the_cpu_wrote(double):
    scenario(
        """
        t = Tensor(64, "uint8", mem="shm")
        with t.map() as v:
            np.asarray(v)[:] = np.arange(64, dtype=np.uint8)
        with t.cuda("r") as c:
            assert c.copy_to_host() == bytes(range(64))
            assert c.copy_to_host(10, 4) == bytes([10, 11, 12, 13])
            with pytest.raises(zerocam.InvalidArgument):
                c.copy_to_host(60, 8)
        """,
        double,
    )


def test_a_failed_driver_call_is_a_cuda_error_with_its_name(double):
    scenario(
        """
        D.zcd_fail_next.argtypes = [ctypes.c_char_p, ctypes.c_int]
        t = Tensor(64, "uint8", mem="shm")
        D.zcd_fail_next(b"cuMemHostRegister_v2", 2)  # CUDA_ERROR_OUT_OF_MEMORY
        with pytest.raises(zerocam.CudaError, match="CUDA_ERROR_OUT_OF_MEMORY") as e:
            t.cuda()
        assert type(e.value) is zerocam.CudaError and isinstance(e.value, RuntimeError)
        assert (e.value.name, e.value.code, e.value.call) == (
            "CUDA_ERROR_OUT_OF_MEMORY", 2, "cuMemHostRegister_v2")
        with t.cuda() as c:  # nothing was kept: the next map registers
            D.zcd_fail_next(b"cuStreamSynchronize", 999)
            with pytest.raises(zerocam.CudaError) as e:
                c.synchronize()
            assert e.value.code == 999 and e.value.call == "cuStreamSynchronize"
        with t.map("w"):
            pass
        """,
        double,
    )


def test_a_cuda_map_is_a_device_borrow(double):
    scenario(
        """
        t = Tensor(256, "uint8", mem="shm")
        c = t.cuda()  # readwrite
        with pytest.raises(zerocam.MapConflict):
            t.map("w")
        with pytest.raises(zerocam.MapConflict):
            t.map("read")
        with pytest.raises(zerocam.MapConflict):
            t.cuda()  # a second writer
        c.release()
        c.release()  # idempotent
        with t.map("w"):
            pass
        r = t.cuda("r")
        with t.map("read"), t.cuda("r"):  # readers share
            pass
        with pytest.raises(zerocam.MapConflict):
            t.map("w")
        del r
        gc.collect()
        with t.map("w") as v:  # a CPU map open: a readwrite CUDA map conflicts
            with pytest.raises(zerocam.MapConflict):
                t.cuda()
        """,
        double,
    )


def test_arrays_of_an_ended_map_allow_a_device_destination_and_see_its_writes(double):
    scenario(
        """
        t = Tensor((4, 16), "uint8", mem="shm")
        with t.map() as v:
            a = np.asarray(v)
            a[:] = 1
            with pytest.raises(zerocam.MapConflict):
                t.cuda()  # beside the open bracket: refused
        with t.cuda() as c:  # `a` keeps the memory, not the map: allowed
            # The double's device pointers are the host addresses: the device writes.
            ctypes.memset(c.device_ptr, 9, c.nbytes)
            c.synchronize()
            assert a[3, 15] == 9  # the array sees the device's writes
        assert (a == 9).all()
        """,
        double,
    )


def test_dlpack_device_and_capsules_read_through_ctypes(double):
    scenario(
        """
        t = Tensor((3, 5), "float32", mem="shm")
        ptr = t.pin_host("read").ptr
        with t.cuda() as c:
            # kDLCUDA with the device pointer (what torch and CuPy import);
            # kDLCUDAHost with the page-locked CPU address when asked for.
            assert c.__dlpack_device__() == (2, 0)
            for name, kwargs, device, data in [
                (b"dltensor", {}, (2, 0), c.device_ptr),
                (b"dltensor_versioned", {"max_version": (1, 0)}, (2, 0), c.device_ptr),
                (b"dltensor", {"dl_device": (3, 0)}, (3, 0), ptr),
            ]:
                cap = c.__dlpack__(**kwargs)
                _, m = managed(cap, name)
                d = m.dl_tensor
                assert d.data == data and (d.device.device_type, d.device.device_id) == device
                assert d.ndim == 2 and [d.shape[0], d.shape[1]] == [3, 5]
                assert [d.strides[0], d.strides[1]] == [5, 1]
                assert (d.dtype.code, d.dtype.bits, d.dtype.lanes) == (2, 32, 1)
                if name == b"dltensor_versioned":
                    assert (m.major, m.minor, m.flags) == (1, 0, 0)
                del cap
            gc.collect()

            # stream: -1 asks for no synchronization, anything else gets one.
            before = count("cuStreamSynchronize")
            c.__dlpack__(stream=-1)
            assert count("cuStreamSynchronize") == before
            c.__dlpack__()
            c.__dlpack__(stream=c.stream)
            assert count("cuStreamSynchronize") == before + 2
            with pytest.raises(ValueError):
                c.__dlpack__(stream=0)
            with pytest.raises(BufferError):
                c.__dlpack__(dl_device=(1, 0))
            with pytest.raises(BufferError):
                c.__dlpack__(copy=True)
            c.__dlpack__(dl_device=(3, 0), copy=False)

        # A read map: the versioned capsule is flagged read-only; a consumer
        # that passes no max_version gets the legacy capsule (no flag to set).
        with t.cuda("r") as r:
            _, m = managed(r.__dlpack__(max_version=(1, 0)), b"dltensor_versioned")
            assert m.flags & 1
            legacy = r.__dlpack__()
            _, m = managed(legacy, b"dltensor")
            assert m.dl_tensor.data == r.device_ptr
            del legacy
        """,
        double,
    )


def test_the_deleter_ends_the_map(double):
    scenario(
        """
        t = Tensor(64, "uint8", mem="shm")
        # A consumer's deleter ends a map the array no longer holds.
        with t.cuda() as c:
            cap = c.__dlpack__(max_version=(1, 0))
        assert c.released
        with pytest.raises(zerocam.MapConflict):
            t.map("w")  # the capsule holds the readwrite map
        consume(cap, b"dltensor_versioned")
        with t.map("w"):
            pass
        del cap

        # An unconsumed capsule's destructor does the same.
        with t.cuda() as c:
            cap = c.__dlpack__()
        with pytest.raises(zerocam.MapConflict):
            t.map("w")
        del cap
        gc.collect()
        with t.map("w"):
            pass

        # An explicit release refuses while a capsule lives, and changes nothing.
        c = t.cuda()
        cap = c.__dlpack__()
        with pytest.raises(zerocam.MapConflict, match="DLPack"):
            c.release()
        assert not c.released and c.device_ptr
        del cap
        gc.collect()
        c.release()
        with t.map("w"):
            pass

        # Unconsumed capsules by the hundred: every map ends.
        for _ in range(100):
            with t.cuda() as c:
                c.__dlpack__()
                c.__dlpack__(max_version=(1, 0))
        gc.collect()
        with t.map("w"):
            pass
        assert count("cuMemHostRegister_v2") == 1
        """,
        double,
    )


def test_frames_register_each_buffer_once(double):
    scenario(
        """
        with Camera.pattern("NV12", (64, 32), buffers=4) as cam:
            seen = set()
            for _ in range(100):
                with cam.read() as frame:
                    shape = frame.tensor.shape
                    with frame.cuda() as c:
                        seen.add(frame.buffer_index)
                        assert c.access == "read" and c.path == "host-registered"
                        assert c.shape == shape and len(c.planes) == 2
                        y, uv = c.planes
                        assert y["shape"] == (32, 64) and uv["shape"][0] == 16
                        assert uv["device_ptr"] == y["device_ptr"] + y["pitch"] * 32
                        assert c.__cuda_array_interface__["data"][1] is True
                        assert c.copy_to_host(0, 64) == frame.planes[0][0].tobytes()
            assert seen == {0, 1, 2, 3}
        assert count("cuMemHostRegister_v2") == 4, count("cuMemHostRegister_v2")
        frame = Camera.pattern("GREY", (64, 32)).read()
        frame.release()
        with pytest.raises(zerocam.Released):
            frame.cuda()
        """,
        double,
    )


def test_releasing_a_frame_defers_its_buffer_while_the_cuda_map_lives(double):
    scenario(
        """
        with Camera.pattern("GREY", (64, 32), buffers=3) as cam:
            frame = cam.read()
            index = frame.buffer_index
            c = frame.cuda()
            before = c.copy_to_host()
            frame.release()  # succeeds at once, as with plane arrays
            assert frame.released
            with pytest.raises(zerocam.Released):
                frame.tensor
            for _ in range(6):  # capture goes on in the other buffers
                with cam.read() as f:
                    assert f.buffer_index != index
            assert c.copy_to_host() == before  # not redrawn under the map
            c.release()
            seen = set()
            for _ in range(6):
                with cam.read() as f:
                    seen.add(f.buffer_index)
            assert index in seen  # back in rotation once the map ended

            # A dropped frame (no release) with a live map: the same.
            frame = cam.read()
            index = frame.buffer_index
            c = frame.cuda()
            del frame
            gc.collect()
            for _ in range(6):
                with cam.read() as f:
                    assert f.buffer_index != index
            del c
            gc.collect()
            seen = set()
            for _ in range(6):
                with cam.read() as f:
                    seen.add(f.buffer_index)
            assert index in seen
        """,
        double,
    )


def test_torch_and_cupy_take_the_memory_when_present():
    """Needs a GPU: the real driver (`libcuda.so.1`) and torch or CuPy with
    CUDA. Where any is missing (this host) the scenario checks nothing more
    than that it runs."""
    code = """
    import importlib.util
    if zerocam.cuda_available():
        t = Tensor((4, 6), "float32", mem="shm")
        with t.map() as v:
            np.asarray(v)[:] = np.arange(24, dtype=np.float32).reshape(4, 6)
        want = np.arange(24, dtype=np.float32).reshape(4, 6)
        if importlib.util.find_spec("torch"):
            import torch
            if torch.cuda.is_available():
                with t.cuda() as c:
                    x = torch.as_tensor(c, device="cuda")  # __cuda_array_interface__
                    assert (x.cpu().numpy() == want).all()
                    del x
                with t.cuda("r") as c:
                    # torch takes no read-only interface (test_torch.py): DLPack.
                    with pytest.raises(TypeError, match="read only"):
                        torch.as_tensor(c, device="cuda")
                for access in ("rw", "r"):
                    with t.cuda(access) as c:
                        assert c.__dlpack_device__()[0] == 2  # kDLCUDA (always, by default)
                        y = torch.from_dlpack(c)
                        assert (y.cpu().numpy() == want).all()
                        del y
        if importlib.util.find_spec("cupy"):
            import cupy
            with t.cuda("r") as c:
                assert (cupy.asnumpy(cupy.asarray(c)) == want).all()
            with t.cuda() as c:
                if c.__dlpack_device__()[0] == 2:  # kDLCUDA (always, by default)
                    assert (cupy.asnumpy(cupy.from_dlpack(c)) == want).all()
    """
    env = {k: v for k, v in os.environ.items() if k != "ZEROCAM_CUDA_LIBRARY"}
    script = "import numpy as np, pytest, zerocam\nfrom zerocam import Tensor\n" + textwrap.dedent(code)
    script += '\nprint("scenario ok")\n'
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.rstrip().endswith("scenario ok"), out.stdout + out.stderr


def test_a_gpu_preprocessors_result_maps_through_its_gl_thread(double):
    """A model input made on the GPU (a PBO of the Preprocessor's GL thread,
    llvmpipe here) reaches CUDA by GL buffer interop: registered once over
    many results, the ring still reused, and a CPU result by host registration."""
    scenario(
        """
        from zerocam import ModelInput, Preprocessor
        D.zcd_set_gl_buffer_size.argtypes = [ctypes.c_uint, ctypes.c_size_t]
        D.zcd_set_gl_buffer_size(0, 3 * 16 * 16 * 4)  # every GL buffer: one f32 NCHW input
        src = Tensor.image(64, 48, "NV12", mem="shm")
        for device, path, register in [
            ("gpu", "gl-buffer", "cuGraphicsGLRegisterBuffer"),
            ("cpu", "host-registered", "cuMemHostRegister_v2"),
        ]:
            before = count(register)
            pre = Preprocessor(ModelInput(16, 16), device=device, ring=2)
            for _ in range(10):
                out = pre(src)
                with out.cuda("r") as c:
                    assert c.path == path, (device, c.path)
                    assert c.shape == (1, 3, 16, 16) and c.nbytes == 3 * 16 * 16 * 4
                del out
            assert count(register) - before == 1, (device, count(register) - before)
            del pre
            gc.collect()
        """,
        double,
    )


def test_a_consumer_that_speaks_only_the_legacy_capsule_takes_a_read_map(double):
    scenario(
        """
        class LegacyConsumer:
            \"\"\"What torch and CuPy before DLPack 1.0 do: `__dlpack__(stream=...)`
            without max_version, then the legacy capsule's deleter when done.\"\"\"
            def __init__(self, obj):
                self.capsule = obj.__dlpack__(stream=None)
                self.address, self.m = managed(self.capsule, b"dltensor")

            def close(self):
                ctypes.pythonapi.PyCapsule_SetName(self.capsule, b"used_dltensor")
                self.m.deleter(self.address)

        t = Tensor(256, "uint8", mem="shm")
        with t.cuda("r") as r:
            consumer = LegacyConsumer(r)
            assert consumer.m.dl_tensor.data == r.device_ptr
            assert consumer.m.dl_tensor.device.device_type == 2  # kDLCUDA
        assert r.released
        with pytest.raises(zerocam.MapConflict):
            t.map("w")  # the capsule still holds the read map
        consumer.close()
        with t.map("w"):
            pass
        """,
        double,
    )


def test_release_never_unmaps_under_a_cuda_array_interface_consumer(double):
    scenario(
        """
        class InterfaceView:
            \"\"\"What CuPy's `asarray` and torch's `as_tensor` keep: the object
            and the device pointer its `__cuda_array_interface__` gave.\"\"\"
            def __init__(self, obj):
                self.owner = obj
                self.ptr = obj.__cuda_array_interface__["data"][0]

        t = Tensor(4096, "uint8", mem="shm")
        c = t.cuda()
        view = InterfaceView(c)
        c.release()
        assert c.released
        with pytest.raises(zerocam.Released):
            c.__cuda_array_interface__
        # The view may still use the memory: the map lives on.
        with pytest.raises(zerocam.MapConflict):
            t.map("w")
        del view, c
        gc.collect()
        with t.map("w"):
            pass

        # The same at the end of a `with` block.
        with t.cuda() as c:
            view = InterfaceView(c)
        assert c.released
        with pytest.raises(zerocam.MapConflict):
            t.map("w")
        del view, c
        gc.collect()
        with t.map("w"):
            pass

        # An array whose interface was never read ends its map at release.
        c = t.cuda()
        c.release()
        with t.map("w"):
            pass
        """,
        double,
    )


def test_a_fork_child_has_no_cuda_and_says_why(double):
    scenario(
        """
        t = Tensor(4096, "uint8", mem="shm")
        c = t.cuda("r")
        assert zerocam.cuda_available()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            ok = not zerocam.cuda_available()
            try:
                Tensor(64, mem="shm").cuda()
                ok = False
            except zerocam.CudaUnavailable as e:
                ok = ok and "fork" in str(e) and str(parent) in str(e)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # The parent's handle and map are untouched.
        assert zerocam.cuda_available() and c.copy_to_host(0, 4) == bytes(4)
        c.release()
        """,
        double,
    )


def test_a_buffer_the_driver_refuses_is_staged_and_counted(double):
    scenario(
        """
        D.zcd_fail_next.argtypes = [ctypes.c_char_p, ctypes.c_int]
        t = Tensor(4096, "uint8", mem="shm")
        with t.map("w") as m:
            np.asarray(m)[:] = 6
        # The driver refuses the registration (as NVIDIA's refuses pages it
        # cannot pin): a read map is copied to the device instead.
        D.zcd_fail_next(b"cuMemHostRegister_v2", 1)
        for _ in range(3):
            with t.cuda("r") as c:
                assert c.path == "staged" and c.host_ptr is None
                assert c.copy_to_host(0, 16) == bytes([6] * 16)
        s = zerocam.cuda_stats()
        assert s["staged"]["imports"] == 1 and s["staged"]["hits"] == 2, s
        assert s["staged_copies"] == 3 and s["staged_bytes"] == 3 * 4096, s
        assert count("cuMemHostRegister_v2") == 1
        """,
        double,
    )
