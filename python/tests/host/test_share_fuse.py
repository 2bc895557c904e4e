"""Camera("unix:PATH") lent the fd of a file on a FUSE filesystem whose
server answers the open and nothing after it (hostile_fuse.py): an `fstat`
or `fstatfs` of that fd waits forever, unkillably (state D), so a subscriber
must tell it from memory without a call into the file's filesystem —
`F_GET_SEALS`, then /proc/self/fdinfo (docs/sharing.md, "What a subscriber
accepts"). The subscriber runs in a child interpreter with a hard timeout,
and the FUSE connection is aborted and the mount detached whatever happens,
so a regression fails the test instead of hanging it."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from hostile_fuse import HostileFuse
from test_share import Publisher
from test_share_hostile import SIZE, frame, rights, wait_closed, welcome

ROUNDS = 3

# The subscriber: ROUNDS connections, each lent the FUSE fd with a frame;
# one JSON line per round, then one with the process's fds.
SUBSCRIBER = r"""
import json, os, sys, time
import zerocam

path, mountpoint, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])

def fds_on(prefix):
    n = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{name}").startswith(prefix)
        except OSError:
            pass  # the listing's own fd, gone
    return n

before = len(os.listdir("/proc/self/fd"))
with zerocam.Camera(f"unix:{path}", timeout=5.0) as cam:
    for n in range(rounds):
        if n:
            cam.reconnect()
        started = time.monotonic()
        try:
            cam.read().release()
            out = {"frame": True}
        except zerocam.Error as e:
            out = {"error": type(e).__name__, "message": str(e)}
        out["took"] = time.monotonic() - started
        out["fuse_fds"] = fds_on(mountpoint + "/")
        print(json.dumps(out), flush=True)
print(json.dumps({"fds_before": before, "fds_after": len(os.listdir("/proc/self/fd")),
                  "fuse_fds": fds_on(mountpoint + "/")}), flush=True)
"""


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def open_in_thread(path, timeout):
    """`path` opened read-only in a thread, or None when the open has not
    returned within `timeout` (the thread stays until the connection is
    aborted)."""
    box = {}

    def run():
        try:
            box["fd"] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            box["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if "error" in box:
        raise box["error"]
    return box.get("fd")


@pytest.fixture
def fuse_file(tmp_path):
    """(the server, a read-only fd of its one file); the connection aborted
    and the mount detached afterwards, also when the test fails."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse here")
    if os.geteuid() != 0:
        pytest.skip("mounting a FUSE filesystem takes root")
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    fs = HostileFuse(str(mountpoint), size=SIZE)
    fd = None
    try:
        fd = open_in_thread(fs.path, timeout=5)
        assert fd is not None, f"open of {fs.path} did not return in 5 s (the server answers the open)"
        assert fs.opened.is_set()
        yield fs, fd
    finally:
        fs.close()
        if fd is not None:
            os.close(fd)  # FOPEN_NOFLUSH, and aborted anyway: no FUSE_FLUSH to wait for


def test_the_fuse_servers_file_hangs_a_naive_fstat_and_fstatfs_unkillably(fuse_file):
    """The hazard itself, so the test below is known to meet it: `fstat` and
    `fstatfs` of the file never return, a SIGKILL leaves them in state D, and
    only aborting the connection ends them."""
    fs, fd = fuse_file
    children = [subprocess.Popen([sys.executable, "-c", f"import os; os.{call}({fd})"], pass_fds=(fd,),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for call in ("fstat", "fstatvfs")]
    try:
        time.sleep(1.0)
        assert [c.poll() for c in children] == [None, None], "fstat/fstatfs returned: the server answered"
        for c in children:
            c.kill()
        time.sleep(0.5)
        states = [proc_state(c.pid) for c in children]
        assert [c.poll() for c in children] == [None, None], f"killed (states {states}): not unkillable"
        assert states == ["D", "D"]
        assert sorted(fs.unanswered_names()) == ["GETATTR", "STATFS"]
    finally:
        fs.abort()
        codes = [c.wait(10) for c in children]
    assert codes == [-9, -9], "the SIGKILL took effect once the connection was aborted"


def test_a_fuse_file_that_never_answers_is_refused_at_once(fuse_file, tmp_path):
    fs, fd = fuse_file
    path = tmp_path / "cam.sock"

    def script(n, conn):
        conn.sendall(welcome(1, max_leases=1))
        conn.sendmsg([frame(n, 0, True, SIZE)], rights([fd]))
        wait_closed(conn)

    publisher = Publisher(path, script, connections=ROUNDS)
    child = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, str(path), fs.mountpoint, str(ROUNDS)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        state = proc_state(child.pid)
        unanswered = fs.unanswered_names()
        fs.abort()  # a process in state D takes its SIGKILL only now
        child.kill()
        out, err = child.communicate(timeout=10)
        pytest.fail(f"the subscriber hung (state {state}) on the FUSE file: the server was sent "
                    f"{unanswered}; it printed {out!r} {err[-2000:]!r}")
    finally:
        unanswered = fs.unanswered_names()
    publisher.join()
    assert child.returncode == 0, err
    assert unanswered == [], f"calls reached the FUSE server: {unanswered}"
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == ROUNDS + 1, out
    for n, got in enumerate(lines[:ROUNDS]):
        assert got.get("error") == "Error", f"round {n}: {got}"
        assert "neither a dma-buf nor shmem" in got["message"], got["message"]
        assert fs.path in got["message"], got["message"]
        assert got["took"] < 2.0, f"round {n}: refused after {got['took']:.1f} s"
        assert got["fuse_fds"] == 0, f"round {n}: the FUSE fd left open"
    end = lines[ROUNDS]
    assert end["fuse_fds"] == 0
    assert end["fds_after"] <= end["fds_before"], f"fds {end['fds_before']} -> {end['fds_after']}"
