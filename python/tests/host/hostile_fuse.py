"""A FUSE server in plain Python over /dev/fuse that answers just enough for
one file to be opened, then never answers again: the hostile filesystem of
test_share_fuse.py (docs/sharing.md, "What a subscriber accepts").

It answers FUSE_INIT, FUSE_LOOKUP of its one file, FUSE_GETATTR (should the
kernel ask before the open) and FUSE_OPEN; from the first FUSE_OPEN on it
keeps reading requests and answers none, recording their opcodes. Its
attributes are never valid in the kernel's cache (attr_valid 0), so an
`fstat` after the open is a FUSE_GETATTR and an `fstatfs` a FUSE_STATFS,
each waited for forever — uninterruptibly once the request is read (state D,
SIGKILL pending) — until the connection is aborted. The open reply carries
FOPEN_NOFLUSH, so closing the fd sends no FUSE_FLUSH to wait for (the
last close's FUSE_RELEASE is not waited for either).

`HostileFuse(mountpoint)` mounts (mount(2) through ctypes, as root), runs the
server in a daemon thread, and `close()` (also on leaving a `with`) aborts the
connection — 1 into /sys/fs/fuse/connections/<dev>/abort, the fusectl
filesystem mounted there for the purpose if it was not — closes /dev/fuse
(which aborts it too), and detaches the mount (umount2 MNT_DETACH): every
process waiting on the server gets ENOTCONN and a pending SIGKILL takes
effect. Nothing here touches the mounted filesystem itself after the open
(the device number comes from /proc/self/mountinfo, never from a `stat`).
"""

import ctypes
import os
import select
import stat
import struct
import threading

FUSE_LOOKUP = 1
FUSE_FORGET = 2
FUSE_GETATTR = 3
FUSE_OPEN = 14
FUSE_STATFS = 17
FUSE_RELEASE = 18
FUSE_FLUSH = 25
FUSE_INIT = 26
FUSE_INTERRUPT = 36
FUSE_BATCH_FORGET = 42
FUSE_STATX = 52

NAMES = {
    FUSE_LOOKUP: "LOOKUP", FUSE_FORGET: "FORGET", FUSE_GETATTR: "GETATTR", FUSE_OPEN: "OPEN",
    15: "READ", FUSE_STATFS: "STATFS", FUSE_RELEASE: "RELEASE", FUSE_FLUSH: "FLUSH",
    FUSE_INIT: "INIT", 22: "GETXATTR", 34: "ACCESS", FUSE_INTERRUPT: "INTERRUPT",
    FUSE_BATCH_FORGET: "BATCH_FORGET", 47: "LSEEK", FUSE_STATX: "STATX",
}

# What a close or the end of the connection sends, waited for by nobody.
UNWAITED = {FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_RELEASE, FUSE_INTERRUPT}

FOPEN_NOFLUSH = 1 << 5
ROOT_ID, FILE_ID = 1, 2
IN_HEADER = struct.Struct("<IIQQIIIHH")  # fuse_in_header, 40 bytes
OUT_HEADER = struct.Struct("<IiQ")  # fuse_out_header, 16 bytes
READ_BUFFER = 1 << 17  # at least FUSE_MIN_READ_BUFFER (8 KiB) + max_write
FUSECTL = "/sys/fs/fuse/connections"
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def _mount(source, target, fstype, flags=0, data=None):
    if _libc.mount(source.encode(), target.encode(), fstype.encode(), flags,
                   data.encode() if data is not None else None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount -t {fstype} {source} {target}: {os.strerror(e)}")


def _attr(ino, mode, size):
    """fuse_attr (88 bytes): ino, size, blocks, a/m/ctime, their nsecs, mode,
    nlink, uid, gid, rdev, blksize, flags."""
    return struct.pack("<QQQQQQIIIIIIIIII", ino, size, (size + 511) // 512, 0, 0, 0, 0, 0, 0,
                       mode, 1, 0, 0, 0, 4096, 0)


def mount_device(mountpoint):
    """The kernel's dev_t of the mount at `mountpoint`, read from
    /proc/self/mountinfo (no call into the filesystem), or None."""
    found = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == mountpoint:  # the last one mounted there
                major, minor = map(int, fields[2].split(":"))
                found = (major << 20) | minor  # the kernel's MKDEV: fusectl's name
    return found


class HostileFuse:
    """A FUSE mount at `mountpoint` (an empty directory) with one regular
    file `name` of `size` bytes, answered until its first open and never
    after. `path` is the file; `unanswered` the opcodes read and left
    unanswered, in order."""

    def __init__(self, mountpoint, name="frame", size=4096):
        self.mountpoint = os.path.realpath(mountpoint)
        self.path = os.path.join(self.mountpoint, name)
        self.name, self.size = name.encode(), size
        self.unanswered = []
        self.opened = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._fusectl_mounted = False
        self._dev = None
        self._fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        try:
            _mount("zerocam-fuse-test", self.mountpoint, "fuse", MS_NOSUID | MS_NODEV,
                   f"fd={self._fd},rootmode=40000,user_id=0,group_id=0")
        except BaseException:
            os.close(self._fd)
            raise
        self._mounted = True
        self._dev = mount_device(self.mountpoint)
        self._thread = threading.Thread(target=self._serve, name="hostile-fuse", daemon=True)
        self._thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def unanswered_names(self, ignore=UNWAITED):
        with self._lock:
            return [NAMES.get(op, str(op)) for op in self.unanswered if op not in ignore]

    def _reply(self, unique, body=b"", error=0):
        os.write(self._fd, OUT_HEADER.pack(OUT_HEADER.size + len(body), error, unique) + body)

    def _serve(self):
        poll = select.poll()
        poll.register(self._fd, select.POLLIN)
        while not self._stop.is_set():
            if not poll.poll(100):
                continue
            try:
                data = os.read(self._fd, READ_BUFFER)
            except OSError:  # ENODEV: aborted or unmounted; EINTR, ENOENT: a request gone
                if self._stop.is_set():
                    return
                continue
            _, opcode, unique, nodeid, *_ = IN_HEADER.unpack_from(data)
            body = data[IN_HEADER.size:]
            if self.opened.is_set():
                with self._lock:
                    self.unanswered.append(opcode)
                continue
            try:
                self._answer(opcode, unique, nodeid, body)
            except OSError:
                pass  # the request was interrupted meanwhile (ENOENT)

    def _answer(self, opcode, unique, nodeid, body):
        if opcode == FUSE_INIT:
            major, minor = struct.unpack_from("<II", body)
            # fuse_init_out, 64 bytes: 7.31, max_readahead 0, no flags,
            # max_background 1, congestion 1, max_write 4096, time_gran 1.
            self._reply(unique, struct.pack("<IIIIHHIIHHII6I", 7, min(minor, 31), 0, 0, 1, 1,
                                            4096, 1, 0, 0, 0, 0, *[0] * 6))
        elif opcode == FUSE_LOOKUP and nodeid == ROOT_ID and body.rstrip(b"\0") == self.name:
            # fuse_entry_out: nodeid, generation, entry_valid, attr_valid (0 s:
            # never cached), their nsecs, the attributes.
            self._reply(unique, struct.pack("<QQQQII", FILE_ID, 1, 0, 0, 0, 0)
                        + _attr(FILE_ID, stat.S_IFREG | 0o444, self.size))
        elif opcode == FUSE_LOOKUP:
            self._reply(unique, error=-2)  # ENOENT
        elif opcode == FUSE_GETATTR:
            mode, size = (stat.S_IFREG | 0o444, self.size) if nodeid == FILE_ID else (stat.S_IFDIR | 0o755, 0)
            self._reply(unique, struct.pack("<QII", 0, 0, 0) + _attr(nodeid, mode, size))
        elif opcode == FUSE_OPEN and nodeid == FILE_ID:
            self.opened.set()  # before the reply: nothing after it is answered
            self._reply(unique, struct.pack("<QIi", 1, FOPEN_NOFLUSH, 0))
        elif opcode in UNWAITED:
            pass
        else:
            self._reply(unique, error=-38)  # ENOSYS

    def abort(self):
        """Ends every request waiting on this server (ENOTCONN), through
        fusectl (mounted at /sys/fs/fuse/connections first if it is not)."""
        if self._dev is None:
            return
        abort = os.path.join(FUSECTL, str(self._dev), "abort")
        if not os.path.exists(abort) and not os.path.ismount(FUSECTL) and os.path.isdir(FUSECTL):
            try:
                _mount("fusectl", FUSECTL, "fusectl")
                self._fusectl_mounted = True
            except OSError:
                pass  # closing /dev/fuse aborts it too
        try:
            with open(abort, "w") as f:
                f.write("1")
        except OSError:
            pass

    def close(self):
        self._stop.set()
        try:
            self.abort()
        finally:
            self._thread.join(5)
            if self._fd is not None:
                os.close(self._fd)  # its last fd: the connection is aborted
                self._fd = None
            if self._mounted:
                _libc.umount2(self.mountpoint.encode(), MNT_DETACH)
                self._mounted = False
            if self._fusectl_mounted:
                _libc.umount2(FUSECTL.encode(), MNT_DETACH)
                self._fusectl_mounted = False
