"""zerocam: zero-copy camera frames and tensors (V4L2, DMA-BUF) for Python.

>>> import numpy as np, zerocam
>>> t = zerocam.Tensor.image(64, 48, zerocam.PixelFormat.Rgb)
>>> with t.map() as view:      # the block is the access bracket
...     a = np.asarray(view)   # no copy: shape (48, 64, 3), the real strides
...     a[:] = 7               # write inside it
>>> view.mapped, int(a.sum())  # the map ended; the array keeps the memory
(False, 64512)
>>> with t.map("read") as view:
...     a = np.asarray(view)   # the old `a` is alive here: no conflict
>>> with zerocam.Camera.pattern("NV12", (320, 240)) as cam:
...     with cam.read() as frame:
...         y, uv = frame.planes  # numpy arrays over the frame's buffer
>>> pre = zerocam.Preprocessor(zerocam.ModelInput(64, 64, fit="letterbox"), device="cpu")
>>> x = pre(t)                 # a (1, 3, 64, 64) float32 Tensor from a ring of 3
>>> x.shape, pre.placement.offset
((1, 3, 64, 64), (0, 8))

On a DMA buffer of a non-coherent Arm board the ``with`` block is where
coherency holds (dma-buf sync START and END): write only inside a block. A
write to a kept array after its block can be lost — the next map's START
(yours, or any other code's read map) invalidates the CPU's cache on arm64,
dropping it — and a read after the block may miss what devices wrote since.
Writing to a kept array in one thread while zerocam reads the tensor in
another (a ``Preprocessor`` call, a device) is a data race, as with any numpy
array shared between threads: keep writes inside a block or synchronize.

CUDA (loaded at run time; ``zerocam.cuda_available()`` says whether it can be
used): ``t.cuda()`` and ``frame.cuda()`` map into device memory without a copy
and return a ``CudaArray`` (``__cuda_array_interface__``, ``__dlpack__``).
"""

from . import errors
from ._zerocam import (
    BUFFER_PROTOCOL,
    CAPSULE_NAME,
    CUDA,
    Camera,
    CpuAccess,
    Frame,
    HostPin,
    MapView,
    ModelInput,
    PixelFormat,
    Placement,
    Preprocessor,
    Recorder,
    Region,
    Tensor,
    __version__,
    cuda_available,
    cuda_info,
    cuda_stats,
    list_devices,
)
from .errors import (
    CudaError,
    CudaUnavailable,
    DeviceError,
    Disconnected,
    Error,
    InvalidArgument,
    MapConflict,
    NoFreeBuffer,
    Released,
    Timeout,
)

__all__ = [
    "BUFFER_PROTOCOL",
    "CAPSULE_NAME",
    "CUDA",
    "Camera",
    "CpuAccess",
    "CudaError",
    "CudaUnavailable",
    "DeviceError",
    "Disconnected",
    "Error",
    "Frame",
    "HostPin",
    "InvalidArgument",
    "MapConflict",
    "MapView",
    "ModelInput",
    "NoFreeBuffer",
    "PixelFormat",
    "Placement",
    "Preprocessor",
    "Recorder",
    "Region",
    "Released",
    "Tensor",
    "Timeout",
    "__version__",
    "cuda_available",
    "cuda_info",
    "cuda_stats",
    "errors",
    "list_devices",
]

if CUDA:  # built with the `cuda` feature (both wheels are)
    from ._zerocam import CudaArray  # noqa: F401

    __all__.append("CudaArray")
