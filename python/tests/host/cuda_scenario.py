"""The scenarios of the Python CUDA tests: a fresh interpreter whose CUDA
driver is the test double (cuda/tests/double/: one integrated device whose
device pointers are the host addresses), or a library that does not exist.

The driver is loaded once per process, so every scenario runs in its own
interpreter with `ZEROCAM_CUDA_LIBRARY` naming the library. The scenario
loads the same .so with ctypes to read the double's counters (`zcd_count`)
and violations (`zcd_violations`). The double is built once per session with
rustc (on PATH in CI), as cuda/tests/common/double.rs builds it for the Rust
tests.
"""

import os
import pathlib
import subprocess
import sys
import textwrap
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]
DOUBLE_SOURCES = ROOT / "cuda" / "tests" / "double"
NO_DRIVER = "/nonexistent/libcuda.so.1"


def build_double():
    """The double, `target/tmp/cuda-double-py/libcuda_double.so`: built when
    missing or older than its sources (to a temporary name, then renamed, so
    a parallel session never loads a half-written library)."""
    out = ROOT / "target" / "tmp" / "cuda-double-py"
    library = out / "libcuda_double.so"
    newest = max(p.stat().st_mtime for p in DOUBLE_SOURCES.iterdir())
    if library.exists() and library.stat().st_mtime > newest:
        return library
    out.mkdir(parents=True, exist_ok=True)
    temporary = out / f"libcuda_double.{os.getpid()}.{time.time_ns()}.so.tmp"
    rustc = os.environ.get("RUSTC", "rustc")
    cmd = [rustc, "--edition", "2021", "--crate-type", "cdylib", "--crate-name", "cuda_double", "-O"]
    cmd += [str(DOUBLE_SOURCES / "cuda_double.rs"), "-o", str(temporary)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, f"building the CUDA test double failed:\n{built.stderr}"
    os.replace(temporary, library)
    return library


# Run before every scenario: the double's controls and a few helpers.
PRELUDE = """\
import ctypes, gc, os
import numpy as np
import pytest
import zerocam
from zerocam import Camera, PixelFormat, Tensor

D = ctypes.CDLL(os.environ["ZEROCAM_CUDA_LIBRARY"])
D.zcd_count.restype = ctypes.c_uint64
D.zcd_count.argtypes = [ctypes.c_char_p]
D.zcd_live_host_registrations.restype = ctypes.c_uint64
D.zcd_violations.restype = ctypes.c_size_t
D.zcd_violations.argtypes = [ctypes.c_char_p, ctypes.c_size_t]

def count(name):
    return D.zcd_count(name.encode())

def violations():
    n = D.zcd_violations(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    D.zcd_violations(buf, n + 1)
    return [v for v in buf.value.decode().split("\\n") if v]

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]

class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]

DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]

class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor),
    ]

ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
ctypes.pythonapi.PyCapsule_SetName.restype = ctypes.c_int
ctypes.pythonapi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

def managed(capsule, name):
    kind = DLManagedTensorVersioned if name == b"dltensor_versioned" else DLManagedTensor
    address = ctypes.pythonapi.PyCapsule_GetPointer(capsule, name)
    return address, kind.from_address(address)

def consume(capsule, name):
    \"\"\"What a consumer does when done: rename the capsule, call the deleter.\"\"\"
    address, m = managed(capsule, name)
    ctypes.pythonapi.PyCapsule_SetName(capsule, b"used_" + name)
    m.deleter(address)

class Spy:
    \"\"\"Forwards to a CudaArray and records the names read and the calls.\"\"\"
    def __init__(self, inner):
        self.inner, self.read, self.called = inner, [], []
    def __getattr__(self, name):
        self.read.append(name)
        value = getattr(self.inner, name)
        if not callable(value):
            return value
        def call(*args, **kwargs):
            self.called.append(name)
            return value(*args, **kwargs)
        return call
"""

EPILOGUE = """
assert violations() == [], violations()
print("scenario ok")
"""


def scenario(code, library, env=None, interpreter=sys.executable):
    """Runs `code` after the prelude in a fresh `interpreter` whose CUDA
    driver is `library` (and whose environment has `env` added); fails with
    its output unless it ran to the end."""
    env = dict(os.environ, **(env or {}), ZEROCAM_CUDA_LIBRARY=str(library))
    script = PRELUDE + textwrap.dedent(code)
    if library != NO_DRIVER:
        script += EPILOGUE
    else:
        script = script.replace('D = ctypes.CDLL(os.environ["ZEROCAM_CUDA_LIBRARY"])', "D = None")
        script = "\n".join(line for line in script.splitlines() if not line.startswith("D.zcd"))
        script += '\nprint("scenario ok")\n'
    out = subprocess.run([interpreter, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.rstrip().endswith("scenario ok"), out.stdout + out.stderr
    return out
