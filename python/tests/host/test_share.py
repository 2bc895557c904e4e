"""Camera("unix:PATH"): a publisher's frames, from an in-test publisher that
speaks the sharing protocol (docs/sharing.md) with struct and SCM_RIGHTS over
a real socket, lending read-only memfds."""

import errno
import fcntl
import os
import socket
import struct
import threading

import numpy as np
import pytest

import zerocam
from zerocam import Camera

W, H, BPL = 64, 32, 64
SIZE = BPL * H * 3 // 2  # NV12 in one buffer
NV12 = struct.unpack("<I", b"NV12")[0]
FORMAT = struct.pack("<IIIBBBBI", NV12, W, H, 1, 1, 1, 0, 0) + struct.pack("<IIII", BPL, SIZE, 0, 0)


def message(kind, body):
    return b"ZCSH" + struct.pack("<HHI", 1, kind, len(body)) + body


def welcome(buffers, max_leases=2):
    return message(0x101, struct.pack("<IHH", 2000, max_leases, buffers) + FORMAT)


def frame(frame_id, buffer, fds):
    body = struct.pack("<QIIQQIBBH", frame_id, buffer, frame_id * 10, 1_000_000 * (frame_id + 1),
                       SIZE, 0, 0, 1 if fds else 0, 0)
    body += FORMAT + struct.pack("<QII", SIZE, 0, 0) + struct.pack("<QII", 0, 0, 0)
    return message(0x102, body)


def goodbye(reason):
    return message(0x103, struct.pack("<BBH", reason, 0, 0))


def recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def client_message(sock):
    magic, version, kind, length = struct.unpack("<4sHHI", recv_exactly(sock, 12))
    assert (magic, version) == (b"ZCSH", 1)
    return kind, recv_exactly(sock, length)


def released_id(sock):
    kind, body = client_message(sock)
    assert kind == 2, f"a Release, got kind {kind}"
    return struct.unpack("<Q", body)[0]


def read_only_memfd(fill):
    """A sealed memfd of one NV12 frame filled with `fill`, re-opened read-only."""
    fd = os.memfd_create("zerocam-test", os.MFD_ALLOW_SEALING)
    os.write(fd, bytes([fill]) * SIZE)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    ro = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
    os.close(fd)
    return ro


class Publisher:
    """Listens at `path`; `script(conn)` serves each connection in a thread."""

    def __init__(self, path, script, connections=1):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen()
        self.errors = []

        def serve():
            try:
                for n in range(connections):
                    conn, _ = self.sock.accept()
                    with conn:
                        kind, body = client_message(conn)
                        assert kind == 1, "Hello first"
                        script(n, conn)
            except Exception as e:  # reported by join()
                self.errors.append(e)

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def join(self):
        self.thread.join(10)
        self.sock.close()
        assert not self.errors, self.errors


def test_a_publishers_frames_are_a_camera(tmp_path):
    path = tmp_path / "cam.sock"
    fds = [read_only_memfd(10 + i) for i in range(2)]

    def script(n, conn):
        conn.sendall(welcome(2))
        for i in range(4):
            data = frame(i, i % 2, i < 2)
            anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fds[i % 2]))] if i < 2 else []
            conn.sendmsg([data], anc)
            assert released_id(conn) == i
        conn.sendall(goodbye(2))  # SourceGone

    publisher = Publisher(path, script)
    with Camera(f"unix:{path}") as cam:
        assert cam.device == f"unix:{path}"
        assert cam.format == ("NV12", W, H)
        for i in range(4):
            with cam.read() as f:
                y, uv = f.planes
                assert (f.sequence, f.timestamp) == (i * 10, (i + 1) / 1000)
                assert y.shape == (H, W) and uv.shape == (H // 2, W)
                assert not y.flags.writeable
                assert np.all(y == 10 + i % 2) and np.all(uv == 10 + i % 2)
                del y, uv
        st = cam.stats()
        assert st["cache"]["misses"] == st["buffers"] * st["planes"] == 2
        with pytest.raises(zerocam.Disconnected) as e:
            cam.read()
        assert isinstance(e.value, zerocam.DeviceError)
        assert "camera is gone" in str(e.value)
    publisher.join()
    for fd in fds:
        os.close(fd)


def test_a_dead_publisher_is_disconnected_and_reconnect_imports_nothing(tmp_path):
    path = tmp_path / "cam.sock"
    fd = read_only_memfd(7)

    def script(n, conn):
        conn.sendall(welcome(1, max_leases=1))
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))]
        conn.sendmsg([frame(n, 0, True)], anc)
        assert released_id(conn) == n
        # then the publisher dies: EOF, no goodbye

    publisher = Publisher(path, script, connections=2)
    with Camera(f"unix:{path}", timeout=5.0) as cam:
        cam.read().release()
        with pytest.raises(zerocam.Disconnected) as e:
            cam.read()
        assert e.value.errno == errno.ECONNRESET
        cam.reconnect()
        with cam.read() as f:
            assert np.all(f.planes[0] == 7)
        st = cam.stats()
        assert (st["cache"]["misses"], st["cache"]["hits"]) == (1, 1), "the same file: a cache hit"
    publisher.join()
    os.close(fd)


def test_no_publisher_and_bad_arguments_are_typed(tmp_path):
    with pytest.raises(zerocam.DeviceError) as e:
        Camera(f"unix:{tmp_path / 'nobody.sock'}")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(zerocam.InvalidArgument, match="no controls"):
        Camera(f"unix:{tmp_path / 'x.sock'}", controls={"brightness": 1})
    with pytest.raises(zerocam.InvalidArgument, match="reconnect"):
        Camera.pattern().reconnect()


def test_a_hostile_publisher_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "cam.sock"
    r, w = os.pipe()

    def script(n, conn):
        conn.sendall(welcome(2))
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", r))]
        conn.sendmsg([frame(0, 0, True)], anc)  # a pipe, not memory

    publisher = Publisher(path, script)
    with Camera(f"unix:{path}") as cam:
        with pytest.raises(zerocam.Error, match="buffer 0, plane 0"):
            cam.read()
        with pytest.raises(zerocam.Disconnected, match="reconnect"):
            cam.read()
    publisher.join()
    os.close(r)
    os.close(w)


def test_no_fd_growth_over_2000_frames(tmp_path):
    path = tmp_path / "cam.sock"
    fds = [read_only_memfd(i) for i in range(3)]
    frames = 2000

    def script(n, conn):
        conn.sendall(welcome(3))
        for i in range(frames):
            anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fds[i % 3]))] if i < 3 else []
            conn.sendmsg([frame(i, i % 3, i < 3)], anc)
            assert released_id(conn) == i

    publisher = Publisher(path, script)
    with Camera(f"unix:{path}") as cam:
        for i in range(3):
            cam.read().release()  # the buffers' fds came: the subscriber keeps one per plane
        before = len(os.listdir("/proc/self/fd"))
        for i in range(3, frames):
            with cam.read() as f:
                assert f.sequence == i * 10
        after = len(os.listdir("/proc/self/fd"))
        assert after <= before, f"fds {before} -> {after} over {frames} frames"
        assert cam.stats()["cache"]["misses"] == 3
    publisher.join()
    for fd in fds:
        os.close(fd)
