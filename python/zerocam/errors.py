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
``MapConflict``           a map, pin bracket or export conflicts with a live one
                          (also a map kept open past its ``with`` block by numpy
                          arrays or DLPack consumers), or ``MapView.release()``
                          is called while they still use it (``BufferError``)
``Released``              a map, pin or frame used after it was released
                          (``ValueError``)
``NoFreeBuffer``          the caller holds every buffer of the camera, or every
                          result of a ``Preprocessor``'s ring (``RuntimeError``)
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


__all__ = [
    "Error",
    "InvalidArgument",
    "DeviceError",
    "Disconnected",
    "Timeout",
    "MapConflict",
    "Released",
    "NoFreeBuffer",
]
