"""zerocam's exceptions.

Every exception zerocam raises derives from :class:`Error` and from the
standard exception a caller would expect, so ``except ValueError`` and
``except zerocam.Error`` both work:

========================  ==========================================================
class                     raised for
========================  ==========================================================
``InvalidArgument``       bad arguments (``ValueError``): shapes, dtypes, regions,
                          formats, sizes, unknown controls
``DeviceError``           the kernel refused (``OSError``, with ``errno``): open,
                          ioctl, mmap, dma-buf sync, allocation
``Disconnected``          the camera went away, or a publisher's frames
                          (``Camera("unix:PATH")``) ended: it stopped, its
                          camera is gone, or it died (a ``DeviceError``)
``Timeout``               no frame within the timeout (``TimeoutError``)
``MapConflict``           a map, pin bracket or export conflicts with one open
                          now (a ``with`` block not yet left, a tensor's DLPack
                          consumer, a frame's plane arrays, a device), or
                          ``MapView.release()`` is called while arrays still
                          use a map that ends with its last export (a
                          ``"pbo"`` map, a frame's buffer mapped after the
                          frame's release) (``BufferError``)
``Released``              a map, pin or frame used after it was released
                          (``ValueError``)
``NoFreeBuffer``          the caller holds every buffer of the camera, or every
                          result of a ``Preprocessor``'s ring (``RuntimeError``)
``CudaError``             a CUDA driver call failed (``RuntimeError``; ``name`` and
                          ``code`` are the driver's ``cuGetErrorName`` and
                          ``CUresult``, ``call`` the entry point), or memory
                          CUDA cannot take
``CudaUnavailable``       no usable CUDA driver library (``library`` names the one
                          tried) or no CUDA device (a ``CudaError``)
========================  ==========================================================
"""


class Error(Exception):
    """Base class of every zerocam exception."""


class InvalidArgument(Error, ValueError):
    """A bad argument; the message names the value."""


class DeviceError(Error, OSError):
    """A device or kernel failure; ``errno`` holds the kernel's error number."""


class Disconnected(DeviceError):
    """The camera went away (unplugged, driver unbound: ``errno`` ``ENODEV``),
    or the publisher of a ``Camera("unix:PATH")`` stopped, lost its camera or
    died (``errno`` ``ECONNRESET``, or ``None`` after its goodbye);
    ``Camera.reconnect()`` connects to a publisher again."""


class Timeout(Error, TimeoutError):
    """No frame came within the timeout."""


class MapConflict(Error, BufferError):
    """A map conflicts with a live map, device borrow or buffer export."""


class Released(Error, ValueError):
    """A map, pin or frame was used after its release."""


class NoFreeBuffer(Error, RuntimeError):
    """Every buffer of the camera (release a frame), or every result of a
    ``Preprocessor``'s ring (drop a result), is held by the caller."""


class CudaError(Error, RuntimeError):
    """A CUDA driver call failed, or memory cannot reach CUDA that way.

    ``call`` is the driver entry point (``"cuMemHostRegister_v2"``), ``name``
    its ``cuGetErrorName`` (``"CUDA_ERROR_INVALID_VALUE"``) and ``code`` the
    ``CUresult``; all three are ``None`` when no driver call failed.
    """

    def __init__(self, message, name=None, code=None, call=None):
        super().__init__(message)
        self.name = name
        self.code = code
        self.call = call


class CudaUnavailable(CudaError):
    """CUDA cannot be used here: the driver library (``library``: the path or
    soname tried, ``libcuda.so.1`` or ``$ZEROCAM_CUDA_LIBRARY``) is missing,
    cannot be loaded or lacks an entry point (``reason`` says which), or the
    driver reports no device."""

    def __init__(self, message, library=None, reason=None):
        super().__init__(message)
        self.library = library
        self.reason = reason


__all__ = [
    "Error",
    "InvalidArgument",
    "DeviceError",
    "Disconnected",
    "Timeout",
    "MapConflict",
    "Released",
    "NoFreeBuffer",
    "CudaError",
    "CudaUnavailable",
]
