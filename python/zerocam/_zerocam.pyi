"""Type stubs of the zerocam extension module."""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any, Iterator, Literal, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str
CAPSULE_NAME: str
BUFFER_PROTOCOL: bool
CUDA: bool

Access = Literal["read", "write", "readwrite"]
Memory = Literal["mem", "shm", "dma"]
DTypeLike = Union[str, npt.DTypeLike]
RegionLike = Union["Region", Tuple[int, int, int, int]]

class PixelFormat:
    Rgb: PixelFormat
    Bgr: PixelFormat
    Rgba: PixelFormat
    Bgra: PixelFormat
    Grey: PixelFormat
    Yuyv: PixelFormat
    Uyvy: PixelFormat
    Nv12: PixelFormat
    Nv16: PixelFormat
    PlanarRgb: PixelFormat
    @property
    def name(self) -> str: ...
    @property
    def planes(self) -> int: ...
    def __int__(self) -> int: ...

class Region:
    x: int
    y: int
    width: int
    height: int
    def __init__(self, x: int, y: int, width: int, height: int) -> None: ...

class MapView:
    """A live CPU map; `numpy.asarray(view)` wraps it without a copy (and, in
    the cp311-abi3 wheel, `memoryview(view)`: the buffer protocol).

    Release rule: the `with` block is the access bracket. Leaving it (or
    `release()`, or the view's garbage collection) ends the map — CPU
    access, dma-buf sync END, access record — whatever arrays are alive, and
    releases the view (later uses raise `Released`). Every numpy array,
    memoryview and DLPack capsule made from the view is an export that keeps
    the tensor's memory (and a held frame) alive, not the map. A `"pbo"`
    map (memory mapped only while a map is open), and a map of a frame's
    buffer made after the frame's release (its borrow alone keeps the
    buffer from the driver), end with their last export instead, and their
    `release()` raises `MapConflict` while exports live. A sync END failing
    where it cannot be raised is a `RuntimeWarning`."""
    def __buffer__(self, flags: int) -> memoryview: ...
    def __enter__(self) -> MapView: ...
    def __exit__(self, *args: object) -> bool:
        """Releases the view and ends the map (a `"pbo"` map, or one of a
        released frame's buffer: with its last export)."""
    def release(self) -> None:
        """Ends the map now, as leaving the block; for a `"pbo"` map or one
        of a released frame's buffer, `MapConflict` (a `BufferError`) while
        exports live."""
    def __array__(self, dtype: Optional[DTypeLike] = None, copy: Optional[bool] = None) -> np.ndarray: ...
    def numpy(self) -> np.ndarray: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[Any] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """A capsule that is one more export of this view; a read map needs
        `max_version >= (1, 0)` (the read-only flag)."""
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def strides(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def ptr(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def access(self) -> Access: ...
    @property
    def released(self) -> bool:
        """Whether the view was released (end of its `with` block, `release()`)."""
    @property
    def mapped(self) -> bool:
        """Whether the map (the access bracket) is open: until the release
        (a `"pbo"` map, or one of a released frame's buffer: and its last
        export)."""
    @property
    def exports(self) -> int:
        """numpy arrays, memoryviews and DLPack capsules of the view alive now."""

class CpuAccess:
    def __enter__(self) -> CpuAccess: ...
    def __exit__(self, *args: object) -> bool: ...
    def end(self) -> None: ...
    @property
    def active(self) -> bool: ...

class HostPin:
    @property
    def ptr(self) -> int: ...
    @property
    def len(self) -> int: ...
    def __len__(self) -> int: ...
    @property
    def alignment(self) -> int: ...
    @property
    def access(self) -> Access: ...
    @property
    def released(self) -> bool: ...
    def cpu_access(self, access: Optional[Access] = None) -> CpuAccess: ...
    def release(self) -> None: ...
    def __enter__(self) -> HostPin: ...
    def __exit__(self, *args: object) -> bool: ...

class Tensor:
    def __init__(
        self,
        shape: Union[int, Sequence[int]],
        dtype: Optional[DTypeLike] = None,
        mem: Optional[Memory] = None,
        name: Optional[str] = None,
    ) -> None: ...
    @staticmethod
    def image(
        width: int,
        height: int,
        format: Union[PixelFormat, str, None] = None,
        mem: Optional[Memory] = None,
        access: Access = "readwrite",
        row_stride: Optional[int] = None,
        batch: Optional[int] = None,
    ) -> Tensor: ...
    @staticmethod
    def from_fd(
        fd: int,
        shape: Union[int, Sequence[int]],
        dtype: Optional[DTypeLike] = None,
        *,
        unchecked: bool = False,
    ) -> Tensor:
        """Import a dma-buf, or a memfd that cannot shrink, from a duplicate of `fd`.

        A memfd made with `MFD_ALLOW_SEALING` is sealed with `F_SEAL_SHRINK`
        first. Any other file raises `InvalidArgument` naming what it is (a
        regular file, a tmpfs or `/dev/shm` file, an unsealable memfd); a pipe,
        socket, device or directory raises `DeviceError` (errno `ENODEV`); a
        sealable memfd opened read-only `DeviceError` (errno `EPERM`); a closed
        fd number `DeviceError` (errno `EBADF`); a negative number or one above
        INT_MAX `InvalidArgument`.

        `unchecked=True` takes any mappable file as it is. The caller then
        guarantees that nobody truncates the file while the tensor, any view of
        it, or any map or array of those lives; otherwise the process dies of
        `SIGBUS`.
        """
    @staticmethod
    def from_zerocam(obj: Any) -> Tensor: ...
    @staticmethod
    def from_array(array: Any) -> Tensor:
        """A numpy array's own memory (C-contiguous, writable) as a writable
        tensor, without a copy: `Preprocessor(...)(frame, out=t)` writes it."""
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def strides(self) -> Optional[Tuple[int, ...]]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def format(self) -> Optional[PixelFormat]: ...
    @property
    def memory(self) -> str: ...
    @property
    def width(self) -> Optional[int]: ...
    @property
    def height(self) -> Optional[int]: ...
    @property
    def row_stride(self) -> Optional[int]: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def planes(self) -> int: ...
    @property
    def name(self) -> Optional[str]: ...
    @property
    def fd(self) -> Optional[int]: ...
    @property
    def buffer_id(self) -> int: ...
    @property
    def fd_identity(self) -> Optional[Tuple[int, int]]: ...
    def clone_fd(self) -> int: ...
    def view(self, region: RegionLike) -> Tensor: ...
    def batch(self, n: int) -> Tensor: ...
    def plane(self, i: int) -> Tensor: ...
    def map(self, access: Optional[Access] = None) -> MapView: ...
    def numpy(self) -> np.ndarray: ...
    def pin_host(self, access: Access = "readwrite") -> HostPin: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[Any] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __zerocam_tensor__(self) -> Any: ...
    def cuda(self, access: Optional[Literal["r", "rw", "read", "readwrite"]] = None) -> CudaArray: ...

class Frame:
    @property
    def sequence(self) -> int: ...
    @property
    def timestamp(self) -> float: ...
    @property
    def format(self) -> str: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def buffer_index(self) -> int: ...
    @property
    def color_spec(self) -> Tuple[Literal["bt601", "bt709"], Literal["limited", "full"]]: ...
    @property
    def planes(self) -> list[np.ndarray]: ...
    @property
    def tensor(self) -> Tensor: ...
    @property
    def released(self) -> bool: ...
    def cuda(self) -> CudaArray: ...
    def jpeg(self, quality: int = 85) -> bytes: ...
    def release(self) -> None: ...
    def __enter__(self) -> Frame: ...
    def __exit__(self, *args: object) -> bool: ...

class Camera:
    def __init__(
        self,
        device: Optional[str] = "/dev/video0",
        format: str = "NV12",
        size: Tuple[int, int] = (640, 480),
        fps: Optional[float] = None,
        buffers: int = 4,
        memory: Literal["mmap", "dmabuf"] = "mmap",
        controls: Optional[dict[str, Union[str, int]]] = None,
        timeout: float = 2.0,
        *,
        zenoh_connect: Optional[list[str]] = None,
        zenoh_listen: Optional[list[str]] = None,
        zenoh_config: Union[str, os.PathLike[str], None] = None,
    ) -> None: ...
    @staticmethod
    def pattern(
        format: str = "NV12",
        size: Tuple[int, int] = (640, 480),
        fps: Optional[float] = None,
        buffers: int = 4,
        timeout: float = 2.0,
        stamp: bool = False,
    ) -> Camera: ...
    def read(self, timeout: Optional[float] = None) -> Frame: ...
    def reconnect(self) -> None: ...
    def __iter__(self) -> Iterator[Frame]: ...
    def __next__(self) -> Frame: ...
    def __enter__(self) -> Camera: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
    def close(self) -> None: ...
    def set_control(self, name: str, value: Union[str, int]) -> None: ...
    def stats(self) -> dict[str, Any]: ...
    @property
    def format(self) -> Tuple[str, int, int]: ...
    @property
    def device(self) -> str: ...

Layout = Literal["nchw", "nhwc"]
ModelDType = Literal["float32", "float16", "int8", "uint8"]
FitName = Literal["stretch", "crop", "letterbox"]
Channels = Literal["rgb", "bgr"]
ColorLike = Optional[Tuple[Literal["bt601", "bt709"], Literal["limited", "full"]]]

class ModelInput:
    """A model's input tensor: size, layout, element type, normalization
    (`(p / 255 - mean) / std`, RGB order) or quantization
    (`round(x / scale) + zero_point`), fit, channel order and batch. Bad
    values raise `InvalidArgument` naming them."""
    def __init__(
        self,
        width: int,
        height: int,
        layout: Layout = "nchw",
        dtype: Union[ModelDType, DTypeLike] = "float32",
        mean: Union[float, Sequence[float], None] = None,
        std: Union[float, Sequence[float], None] = None,
        scale: Optional[float] = None,
        zero_point: Optional[int] = None,
        fit: FitName = "stretch",
        pad: Tuple[int, int, int] = (114, 114, 114),
        channels: Channels = "rgb",
        batch: int = 1,
        resample: Literal["bilinear", "area"] = "bilinear",
    ) -> None: ...
    @property
    def resample(self) -> Literal["bilinear", "area"]: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def batch(self) -> int: ...
    @property
    def layout(self) -> Layout: ...
    @property
    def dtype(self) -> ModelDType: ...
    @property
    def mean(self) -> Optional[Tuple[float, float, float]]: ...
    @property
    def std(self) -> Optional[Tuple[float, float, float]]: ...
    @property
    def scale(self) -> Optional[float]: ...
    @property
    def zero_point(self) -> Optional[int]: ...
    @property
    def fit(self) -> FitName: ...
    @property
    def pad(self) -> Tuple[int, int, int]: ...
    @property
    def channels(self) -> Channels: ...
    @property
    def shape(self) -> Tuple[int, int, int, int]:
        """`(batch, 3, height, width)` (nchw) or `(batch, height, width, 3)` (nhwc)."""

class Placement:
    """Where a source landed in a model input, and the way back."""
    @property
    def scale(self) -> Tuple[float, float]:
        """Model pixels per frame pixel `(sx, sy)`."""
    @property
    def offset(self) -> Tuple[int, int]:
        """The letterbox's offsets `(x, y)` in model pixels (0 for the other fits)."""
    @property
    def source(self) -> Tuple[float, float, float, float]: ...
    @property
    def target(self) -> Tuple[int, int, int, int]: ...
    def to_frame(self, x: float, y: float) -> Tuple[float, float]: ...
    def to_frame_box(self, box: Sequence[float]) -> Tuple[float, float, float, float]: ...

class Preprocessor:
    """Frames or tensors into a `ModelInput` on `device` ("auto": the GPU
    where it is real hardware, else the CPU; "gpu"; "cpu"), each result a
    `Tensor` of a ring of `ring` destinations. Up to `ring` results may be
    held at once (a `Tensor`, an open map, a numpy array or DLPack capsule
    of it holds one); with all held a call raises `NoFreeBuffer`."""
    def __init__(
        self,
        model_input: ModelInput,
        device: Literal["auto", "gpu", "cpu"] = "auto",
        ring: int = 3,
        threads: Optional[int] = None,
    ) -> None: ...
    def __call__(
        self,
        source: Union[Frame, Tensor, Sequence[Union[Frame, Tensor]]],
        crop: Union[None, RegionLike, list[Optional[RegionLike]]] = None,
        color: ColorLike = None,
        out: Optional[Tensor] = None,
    ) -> Tensor:
        """The model input: a ring tensor, or `out` written in place. A
        list of sources is a batch (one a camera), each read with its own
        crop (a list of them) and its frame's own colour spec."""
    @property
    def threads(self) -> int: ...
    @property
    def model_input(self) -> ModelInput: ...
    @property
    def device(self) -> Literal["gpu", "cpu"]: ...
    @property
    def device_reason(self) -> str: ...
    @property
    def ring(self) -> int: ...
    @property
    def held(self) -> int: ...
    @property
    def placement(self) -> Optional[Placement]: ...
    @property
    def letterbox(self) -> Optional[Placement]: ...
    @property
    def placements(self) -> list[Placement]: ...
    def stats(self) -> dict[str, int]:
        """gpu_images, cpu_images, cpu_fallbacks, tensors_allocated; on the
        GPU also gpu_imports, gpu_import_hits, gpu_uploads, gpu_readbacks."""

def list_devices() -> list[dict[str, Any]]: ...

class CudaArray:
    """A tensor or frame mapped into CUDA device memory (`Tensor.cuda()`, `Frame.cuda()`)."""

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    @property
    def device_ptr(self) -> int: ...
    @property
    def host_ptr(self) -> Optional[int]: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def strides(self) -> Optional[Tuple[int, ...]]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def path(self) -> Literal["host-registered", "egl-image", "gl-buffer", "staged"]: ...
    @property
    def access(self) -> Literal["read", "readwrite"]: ...
    @property
    def stream(self) -> int: ...
    @property
    def planes(self) -> list[dict[str, Any]]: ...
    @property
    def released(self) -> bool: ...
    def synchronize(self) -> None: ...
    def copy_to_host(self, offset: int = 0, nbytes: Optional[int] = None) -> bytes: ...
    def release(self) -> None: ...
    def __enter__(self) -> CudaArray: ...
    def __exit__(self, *args: object) -> bool: ...

def cuda_available() -> bool: ...
def cuda_info() -> Optional[dict[str, Any]]: ...
def cuda_stats() -> Optional[dict[str, Any]]: ...

class Recorder:
    """Frames into a video file (``.mp4``, or a bare ``.h264``, ``.hevc``,
    ``.mjpeg`` or ``.fwht`` stream): a hardware encoder when one is present,
    else (H.264) OpenH264 in software. A context
    manager: the end of the block closes the file."""

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        codec: Optional[Literal["h264", "hevc", "mjpeg", "fwht"]] = None,
        encoder: str = "auto",
        bitrate: Optional[int] = None,
        gop: Optional[int] = None,
        fps: int = 30,
    ) -> None: ...
    def write(self, frame: Frame) -> None:
        """Encodes ``frame``, taking its lease: ``frame`` is released by the call."""
    def close(self) -> None: ...
    @property
    def stats(self) -> dict[str, int]:
        """frames, samples, bytes, copied_frames, imports, packets, finished."""
    @property
    def encoder(self) -> str: ...
    @property
    def path(self) -> os.PathLike[str]: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Recorder: ...
    def __exit__(self, *args: object) -> bool: ...
