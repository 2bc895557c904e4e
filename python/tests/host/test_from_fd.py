"""Tensor.from_fd takes only memory that cannot shrink under its mapping, and
never treats an unchecked integer as a live fd: every bad fd is a typed error,
never a dead interpreter."""

import errno
import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import zerocam
from zerocam import Tensor

SEALABLE = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING


@pytest.fixture
def fds():
    """Closes the fds a test opened, whatever happens."""
    opened = []
    yield opened
    for fd in opened:
        os.close(fd)


def regular_file(fds, size):
    fd, path = tempfile.mkstemp()
    os.unlink(path)
    os.ftruncate(fd, size)
    fds.append(fd)
    return fd


def memfd(fds, size, flags=SEALABLE):
    fd = os.memfd_create("zerocam-test", flags)
    os.ftruncate(fd, size)
    fds.append(fd)
    return fd


def test_the_issue_example_raises_at_from_fd_instead_of_killing_the_interpreter():
    # The issue's example verbatim, in a child interpreter: it must end in a
    # traceback (exit 1), not SIGBUS (exit 135 / -SIGBUS).
    example = textwrap.dedent("""
        import os, tempfile
        import numpy as np
        import zerocam
        fd, path = tempfile.mkstemp(); os.ftruncate(fd, 1 << 20)          # an ordinary regular file
        t = zerocam.Tensor.from_fd(fd, [1024, 1024], "uint8")   # accepted, memory "shm"
        os.ftruncate(fd, 0)
        with t.map("read") as v: np.asarray(v)[1000].sum()      # SIGBUS: the interpreter dies (exit 135)
    """)
    run = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, (run.returncode, run.stderr)
    assert run.returncode != -signal.SIGBUS
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("zerocam.errors.InvalidArgument: fd "), last
    assert "SIGBUS" in last and "unchecked=True" in last, last


def test_a_regular_file_is_refused_naming_it(fds):
    fd = regular_file(fds, 1 << 20)
    with pytest.raises(zerocam.InvalidArgument) as e:
        Tensor.from_fd(fd, [1024, 1024], "uint8")
    msg = str(e.value)
    # mkstemp's folder is a disk here; a tmpfs /tmp would name a shm file.
    assert "regular file" in msg or "tmpfs" in msg, msg
    assert f"fd {fd} is a" in msg and "SIGBUS" in msg and "unchecked=True" in msg
    assert "F_SEAL_SHRINK" in msg and "dma-buf" in msg and "MFD_ALLOW_SEALING" in msg
    os.ftruncate(fd, 0)  # and nothing of ours maps it


def test_a_regular_file_is_taken_unchecked(fds):
    fd = regular_file(fds, 4096)
    os.pwrite(fd, b"unchecked", 0)
    t = Tensor.from_fd(fd, [4096], "uint8", unchecked=True)
    assert t.memory == "shm"
    with t.map("read") as v:
        assert bytes(np.asarray(v)[:9]) == b"unchecked"
    with pytest.raises(ValueError, match="too small"):
        Tensor.from_fd(fd, [4097], "uint8", unchecked=True)


def test_a_tmpfs_file_is_refused(fds):
    path = f"/dev/shm/zerocam-test-{os.getpid()}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    fds.append(fd)
    os.unlink(path)
    os.ftruncate(fd, 4096)
    with pytest.raises(zerocam.InvalidArgument, match=f"fd {fd} is a tmpfs or POSIX shared-memory"):
        Tensor.from_fd(fd, [16])


def test_a_memfd_without_allow_sealing_is_refused(fds):
    fd = memfd(fds, 4096, os.MFD_CLOEXEC)
    with pytest.raises(zerocam.InvalidArgument, match="memfd that cannot be sealed.*MFD_ALLOW_SEALING"):
        Tensor.from_fd(fd, [16])


def test_a_sealable_memfd_is_accepted_and_really_sealed(fds):
    fd = memfd(fds, 8192)
    t = Tensor.from_fd(fd, [8192])
    assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) == fcntl.F_SEAL_SHRINK
    with pytest.raises(PermissionError) as e:
        os.ftruncate(fd, 4096)
    assert e.value.errno == errno.EPERM
    os.ftruncate(fd, 16384)  # growing stays allowed
    with t.map("read") as v:
        assert np.asarray(v).shape == (8192,) and int(np.asarray(v)[8191]) == 0


def test_a_sealable_memfd_given_read_only_is_a_typed_error(fds):
    fd = memfd(fds, 4096)
    ro = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    fds.append(ro)
    with pytest.raises(zerocam.DeviceError) as e:
        Tensor.from_fd(ro, [16])
    assert e.value.errno == errno.EPERM and f"fd {ro} is a memfd" in str(e.value) and "read-only" in str(e.value)
    assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) == 0, "a failed import adds no seal"
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    t = Tensor.from_fd(ro, [16])  # sealed by its owner: taken, read-only
    with pytest.raises(zerocam.MapConflict, match="read-only"):
        t.map("readwrite")


@pytest.mark.parametrize("kind", ["pipe", "socket", "character device"])
def test_unmappable_fds_are_enodev_even_unchecked(fds, kind):
    if kind == "pipe":
        r, w = os.pipe()
        fds += [r, w]
        fd = r
    elif kind == "socket":
        a, b = socket.socketpair()
        fds += [a.detach(), b.detach()]
        fd = fds[-2]
    else:
        fd = os.open("/dev/null", os.O_RDWR)
        fds.append(fd)
    for unchecked in (False, True):
        with pytest.raises(zerocam.DeviceError) as e:
            Tensor.from_fd(fd, [16], unchecked=unchecked)
        assert e.value.errno == errno.ENODEV and f"fd {fd} is a {kind}" in str(e.value)


def test_a_closed_fd_number_is_ebadf():
    fd = os.open("/dev/null", os.O_RDONLY)
    os.close(fd)
    for number in (fd, 987654):
        with pytest.raises(zerocam.DeviceError) as e:
            Tensor.from_fd(number, [4])
        assert isinstance(e.value, OSError) and e.value.errno == errno.EBADF
        assert f"fd {number}" in str(e.value)


@pytest.mark.parametrize("number", [-1, -(2**31), 2**31, 2**63, 2**64 + 3])
def test_numbers_that_cannot_be_fds_are_invalid_arguments(number):
    with pytest.raises(zerocam.InvalidArgument, match=f"fd {number} is (negative|out of range)"):
        Tensor.from_fd(number, [4])


def test_a_non_integer_fd_is_a_type_error():
    with pytest.raises(TypeError, match="fd must be an int, not str"):
        Tensor.from_fd("3", [4])


def test_a_capsule_over_a_regular_file_or_a_closed_fd_is_refused(fds):
    from test_tensor import CapsuleStruct, _capsule_new

    import ctypes

    class Producer:
        def __init__(self, fd):
            self.s = CapsuleStruct(abi=1, fd=fd, code=1, bits=8, lanes=1, ndim=1)
            self.s.shape[0], self.s.strides[0] = 16, 1
            self.cap = _capsule_new()(ctypes.addressof(self.s), b"zerocam.tensor.v1", None)

        def __zerocam_tensor__(self):
            return self.cap

    with pytest.raises(zerocam.InvalidArgument, match="SIGBUS"):
        Tensor.from_zerocam(Producer(regular_file(fds, 4096)))
    with pytest.raises(zerocam.DeviceError) as e:
        Tensor.from_zerocam(Producer(987654))
    assert e.value.errno == errno.EBADF
    with pytest.raises(zerocam.InvalidArgument, match="negative"):
        Tensor.from_zerocam(Producer(-1))
    u = Tensor.from_zerocam(Producer(memfd(fds, 16)))  # a sealable memfd: sealed, taken
    assert u.shape == (16,) and fcntl.fcntl(fds[-1], fcntl.F_GET_SEALS) == fcntl.F_SEAL_SHRINK


def test_no_fd_is_left_open_by_the_refusals(fds):
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        for fd in (regular_file(fds, 64), memfd(fds, 64, os.MFD_CLOEXEC)):
            with pytest.raises(zerocam.InvalidArgument):
                Tensor.from_fd(fd, [4])
        with pytest.raises(zerocam.DeviceError):
            Tensor.from_fd(987654, [4])
        for fd in fds:
            os.close(fd)
        fds.clear()
    assert len(os.listdir("/proc/self/fd")) == before
