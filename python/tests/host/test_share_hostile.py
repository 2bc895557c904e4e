"""Camera("unix:PATH") against a hostile publisher written with plain sockets
and SCM_RIGHTS, each case reproduced the way it was found: too many fds in one
message, a listener that never accepts, a message cut by a timeout, sparse
terabyte memfds, a file grown on reconnect, a hugetlbfs memfd with a punched
hole. Each is a typed error (or the right frame), with this process's fd
count and address space flat afterwards (docs/sharing.md, "What a subscriber
accepts")."""

import ctypes
import fcntl
import os
import socket
import struct
import threading
import time

import numpy as np
import pytest

import zerocam
from zerocam import Camera

from test_share import Publisher, goodbye, message, released_id

NV12 = struct.unpack("<I", b"NV12")[0]


def nv12_size(w, h):
    return w * h * 3 // 2


def fmt(w, h):
    size = nv12_size(w, h)
    return struct.pack("<IIIBBBBI", NV12, w, h, 1, 1, 1, 0, 0) + struct.pack("<IIII", w, size, 0, 0)


def welcome(buffers, w=64, h=32, max_leases=2):
    return message(0x101, struct.pack("<IHH", 2000, max_leases, buffers) + fmt(w, h))


def frame(frame_id, buffer, fds, length, w=64, h=32):
    body = struct.pack("<QIIQQIBBH", frame_id, buffer, frame_id * 10, 1_000_000 * (frame_id + 1),
                       nv12_size(w, h), 0, 0, 1 if fds else 0, 0)
    body += fmt(w, h) + struct.pack("<QII", length, 0, 0) + struct.pack("<QII", 0, 0, 0)
    return message(0x102, body)


def rights(fds):
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]


def sealed_memfd(size, fill=None, name="zerocam-hostile"):
    """A memfd of `size` bytes sealed against shrinking only (it can grow):
    (the writable fd, a read-only reopening)."""
    fd = os.memfd_create(name, os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if fill is not None:
        os.pwrite(fd, bytes([fill]) * size, 0)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    return fd, os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)


def wait_closed(conn):
    """Waits until the subscriber drops the connection (EOF, or a reset when
    it closed with bytes unread)."""
    try:
        conn.recv(1)
    except ConnectionResetError:
        pass


def open_fds():
    return len(os.listdir("/proc/self/fd"))


def vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize")


SIZE = nv12_size(64, 32)


def fds_naming(needle):
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if needle in os.readlink(f"/proc/self/fd/{name}"):
                count += 1
        except OSError:
            pass  # the listing's own fd, gone
    return count


def test_250_fds_in_one_message_are_all_closed(tmp_path):
    path = tmp_path / "cam.sock"
    rounds = 8
    name = f"zerocam-250-{os.getpid()}"
    baseline = open_fds()
    rw, ro = sealed_memfd(4096, name=name)
    closed = threading.Semaphore(0)

    def script(n, conn):
        conn.sendall(welcome(3))
        fds = [os.dup(ro) for _ in range(250)]
        conn.sendmsg([frame(0, 0, True, SIZE)], rights(fds))
        for fd in fds:
            os.close(fd)
        closed.release()
        wait_closed(conn)

    publisher = Publisher(path, script, connections=rounds)
    with Camera(f"unix:{path}", timeout=5.0) as cam:
        for n in range(rounds):
            if n:
                cam.reconnect()
            with pytest.raises(zerocam.Error, match="250 fds came with one message"):
                cam.read()
            assert closed.acquire(timeout=10)  # the publisher's own copies closed
            assert fds_naming(name) == 2, f"round {n}: only the publisher's two fds of the memfd"
    publisher.join()
    os.close(rw)
    os.close(ro)
    assert fds_naming(name) == 0
    assert open_fds() <= baseline, f"fds {baseline} -> {open_fds()} over {rounds} connections of 250 fds"


def test_a_listener_that_never_accepts_is_a_timeout():
    path = f"/tmp/zerocam-never-accepts-{os.getpid()}.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(0)
        filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        filler.connect(path)  # the backlog is full now
        started = time.monotonic()
        with pytest.raises(zerocam.Timeout):
            Camera(f"unix:{path}")
        took = time.monotonic() - started
        assert 4.5 < took < 8, f"took {took:.1f} s (the connect timeout is 5 s)"
        filler.close()
    finally:
        listener.close()
        os.unlink(path)


def test_half_a_header_across_a_timeout_then_the_rest_resumes(tmp_path):
    path = tmp_path / "cam.sock"
    _, ro = sealed_memfd(SIZE, fill=99)
    timed_out, sent = threading.Event(), threading.Event()

    def script(n, conn):
        conn.sendall(welcome(3))
        data = frame(0, 0, True, SIZE)
        conn.sendmsg([data[:6]], rights([ro]))  # half a header, the fd with it
        timed_out.wait(10)
        conn.sendall(data[6:])
        sent.set()
        assert released_id(conn) == 0

    publisher = Publisher(path, script)
    with Camera(f"unix:{path}", timeout=0.05) as cam:
        with pytest.raises(zerocam.Timeout):
            cam.read()
        timed_out.set()
        sent.wait(10)
        with cam.read() as f:
            assert f.sequence == 0
            assert np.all(f.planes[0] == 99)
    publisher.join()


def test_sparse_4_tib_memfds_are_refused_or_mapped_only_for_their_span(tmp_path):
    path = tmp_path / "cam.sock"
    tib4 = 4 << 40
    files = [sealed_memfd(tib4) for _ in range(3)]

    def script(n, conn):
        if n == 0:  # a 4 TiB span
            conn.sendall(welcome(3))
            conn.sendmsg([frame(0, 0, True, tib4)], rights([files[0][1]]))
            wait_closed(conn)
        else:  # a frame's span of each 4 TiB file
            conn.sendall(welcome(3, max_leases=3))
            for i in range(3):
                conn.sendmsg([frame(i, i, True, SIZE)], rights([files[i][1]]))
                assert released_id(conn) == i

    publisher = Publisher(path, script, connections=2)
    before = vm_size()
    with Camera(f"unix:{path}", timeout=5.0) as cam:
        with pytest.raises(zerocam.Error, match="more than a frame's"):
            cam.read()
        cam.reconnect()
        for i in range(3):
            with cam.read() as f:
                assert f.planes[0].shape == (32, 64)
        grown = vm_size() - before
        assert grown < 1 << 30, f"address space grew {grown} bytes"
    publisher.join()
    for rw, ro in files:
        os.close(rw)
        os.close(ro)


def test_a_file_grown_for_a_larger_format_on_reconnect_is_imported_again(tmp_path):
    path = tmp_path / "cam.sock"
    rw, ro = sealed_memfd(SIZE, fill=5)

    def script(n, conn):
        if n == 0:
            conn.sendall(welcome(1, max_leases=1))
            conn.sendmsg([frame(0, 0, True, SIZE)], rights([ro]))
        else:
            big = nv12_size(128, 64)
            os.ftruncate(rw, big)
            conn.sendall(welcome(1, 128, 64, max_leases=1))
            conn.sendmsg([frame(1, 0, True, big, 128, 64)], rights([ro]))
        released_id(conn)

    publisher = Publisher(path, script, connections=2)
    with Camera(f"unix:{path}", timeout=5.0) as cam:
        with cam.read() as f:
            assert f.planes[0].shape == (32, 64)
        cam.reconnect()
        with cam.read() as f:
            assert f.planes[0].shape == (64, 128), "the grown file, not the old import"
        assert cam.stats()["cache"]["misses"] == 2
    publisher.join()
    os.close(rw)
    os.close(ro)


NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"


def test_a_hugetlbfs_memfd_with_a_punched_hole_is_refused(tmp_path):
    try:
        fd = os.memfd_create("zerocam-hugetlb", os.MFD_ALLOW_SEALING | os.MFD_HUGETLB)
    except OSError as e:
        pytest.skip(f"no hugetlbfs memfds here: {e}")
    was = None
    with open(NR_HUGEPAGES) as f:
        now = f.read().strip()
    if now == "0" and os.geteuid() == 0:
        with open(NR_HUGEPAGES, "w") as f:
            f.write("1")
        was = now
    path = tmp_path / "cam.sock"
    try:
        huge = 2 << 20
        os.ftruncate(fd, huge)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
        if libc.fallocate(fd, 0, 0, huge) == 0:  # a page from the pool, then punched out
            punch_hole_keep_size = 0x02 | 0x01
            assert libc.fallocate(fd, punch_hole_keep_size, 0, huge) == 0
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)

        def script(n, conn):
            conn.sendall(welcome(3))
            conn.sendmsg([frame(0, 0, True, SIZE)], rights([fd]))
            wait_closed(conn)

        publisher = Publisher(path, script)
        before_fds, before_vm = open_fds(), vm_size()
        with Camera(f"unix:{path}", timeout=5.0) as cam:
            with pytest.raises(zerocam.Error, match="hugetlbfs"):
                cam.read()
        publisher.join()
        assert open_fds() <= before_fds
        assert vm_size() <= before_vm + (64 << 20)
    finally:
        os.close(fd)
        if was is not None:
            with open(NR_HUGEPAGES, "w") as f:
                f.write(was)
