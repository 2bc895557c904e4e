"""`zerocam serve --zenoh` as a ROS 2 client sees it, and `Camera("zenoh:KEY")`.

The publisher is the `zerocam` binary (`ZEROCAM_ZENOH_BIN`, built with
`cargo build -p zerocam-cli --features zenoh`); the client is independent of
zerocam's own decoder: the `eclipse-zenoh` package subscribes and the
`rosbags` package's type system reads the CDR, so a message layout that only
zerocam's decoder accepts fails here. Everything stays on loopback: the
server listens on 127.0.0.1 only, and the client is a peer with multicast
scouting and gossip off that connects to that one endpoint and listens
nowhere.
"""

import io
import os
import socket
import struct
import subprocess
import tempfile
import threading
import time

import pytest
from PIL import Image

import zerocam

pytestmark = pytest.mark.zenoh

# The client's packages (the test extra): missing, the tests fail (in the
# fixture) rather than skip, and the runs that deselect them still collect.
try:
    import zenoh
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore
except ImportError as e:
    MISSING = f"{e} (pip install eclipse-zenoh rosbags: the test extra)"
else:
    MISSING = None

PREFIX = "rt/pytest"
WIDTH, HEIGHT = 1280, 720

# foxglove_msgs/msg/CompressedVideo, as foxglove_msgs defines it: rosbags'
# stores carry only the ROS distributions' own packages.
COMPRESSED_VIDEO_MSG = """
builtin_interfaces/Time timestamp
string frame_id
uint8[] data
string format
"""


def _typestore():
    store = get_typestore(Stores.ROS2_HUMBLE)
    if "foxglove_msgs/msg/CompressedVideo" not in store.types:
        store.register(get_types_from_msg(COMPRESSED_VIDEO_MSG, "foxglove_msgs/msg/CompressedVideo"))
    return store


TYPES = None if MISSING else _typestore()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`zerocam serve pattern --zenoh` on 127.0.0.1:`port`, its output in a file
    (a pipe nobody reads would fill up and stall it)."""

    def __init__(self, binary, port):
        self.port = port
        self.endpoint = f"tcp/127.0.0.1:{port}"
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [binary, "serve", "pattern", "--zenoh", "--listen", self.endpoint,
             "--topic", PREFIX, "--fps", "30"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
        )

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def check_alive(self):
        if self.proc.poll() is not None:
            pytest.fail(
                f"zerocam serve --zenoh exited with {self.proc.returncode} (a binary "
                f"without the cargo feature zenoh?):\n{self.output()}"
            )

    def wait_listening(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        pytest.fail(f"zerocam serve --zenoh did not listen on {self.endpoint}:\n{self.output()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="module")
def server():
    if MISSING:
        pytest.fail(MISSING)
    binary = os.environ.get("ZEROCAM_ZENOH_BIN")
    if not binary:
        pytest.fail(
            "ZEROCAM_ZENOH_BIN is not set: build `cargo build -p zerocam-cli --features zenoh` "
            "and set it to target/debug/zerocam (python/ci.sh does)"
        )
    if not os.access(binary, os.X_OK):
        pytest.fail(f"ZEROCAM_ZENOH_BIN={binary} is not an executable")
    s = Server(binary, _free_port())
    try:
        s.wait_listening()
        yield s
    finally:
        s.stop()


def _session(endpoint):
    """A peer that reaches `endpoint` and nothing else: no multicast scouting,
    no gossip (which would hand it the server's other locators), no listener."""
    conf = zenoh.Config()
    conf.insert_json5("mode", '"peer"')
    conf.insert_json5("scouting/multicast/enabled", "false")
    conf.insert_json5("scouting/gossip/enabled", "false")
    conf.insert_json5("connect/endpoints", f'["{endpoint}"]')
    conf.insert_json5("listen/endpoints", "[]")
    return zenoh.open(conf)


def _numbers(sample):
    """The attachment zerocam puts on every sample: publisher instance,
    capture sequence, sample number on its topic (u32, u32, u64, little-endian)."""
    assert sample.attachment is not None, f"{sample.key_expr}: no attachment"
    raw = sample.attachment.to_bytes()
    assert len(raw) == 16, f"{sample.key_expr}: a {len(raw)}-byte attachment"
    return struct.unpack("<IIQ", raw)


class Collector:
    """Raw samples per topic, as they come (decoded later: the callback runs
    on Zenoh's thread and must keep up with 30 fps)."""

    def __init__(self, session, topics):
        self.lock = threading.Lock()
        self.samples = {t: [] for t in topics}
        self.subscribers = [
            session.declare_subscriber(f"{PREFIX}/{t}", self._callback(t)) for t in topics
        ]

    def _callback(self, topic):
        def on_sample(sample):
            entry = (_numbers(sample), sample.payload.to_bytes())
            with self.lock:
                self.samples[topic].append(entry)

        return on_sample

    def count(self, topic):
        with self.lock:
            return len(self.samples[topic])

    def get(self, topic):
        with self.lock:
            return list(self.samples[topic])

    def wait(self, server, want, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            server.check_alive()
            if all(self.count(t) >= n for t, n in want.items()):
                return
            time.sleep(0.05)
        got = {t: self.count(t) for t in want}
        pytest.fail(f"wanted {want} samples in {timeout} s, got {got}:\n{server.output()}")

    def close(self):
        for s in self.subscribers:
            s.undeclare()


def _stamp(msg):
    return (msg.header.stamp.sec, msg.header.stamp.nanosec)


def _seconds(stamp):
    # As Rust's Duration::as_secs_f64 computes it, so that a frame's
    # timestamp compares equal, not merely close.
    return float(stamp[0]) + float(stamp[1]) / 1e9


def _nal_types(annexb):
    """The NAL unit types of an H.264 Annex B byte stream."""
    types = []
    i = annexb.find(b"\x00\x00\x01")
    while i >= 0 and i + 3 < len(annexb):
        types.append(annexb[i + 3] & 0x1F)
        i = annexb.find(b"\x00\x00\x01", i + 3)
    return types


def test_ros2_client_decodes_the_topics(server):
    session = _session(server.endpoint)
    try:
        got = Collector(session, ["jpeg", "camera_info", "h264"])
        got.wait(server, {"jpeg": 30, "camera_info": 30, "h264": 1})
        got.close()
    finally:
        session.close()

    now = time.time()
    jpegs = {}
    instances = set()
    for (instance, sequence, _number), payload in got.get("jpeg"):
        msg = TYPES.deserialize_cdr(payload, "sensor_msgs/msg/CompressedImage")
        assert msg.format == "jpeg"
        assert msg.header.frame_id == "camera"
        stamp = _stamp(msg)
        assert abs(_seconds(stamp) - now) < 10, f"stamp {stamp} is not near now ({now})"
        assert sequence not in jpegs, f"capture sequence {sequence} twice"
        jpegs[sequence] = (stamp, msg.data)
        instances.add(instance)
    assert len(instances) == 1, f"one publisher, {len(instances)} instances"

    # One JPEG fully decoded (Pillow, not zerocam): the pattern's size.
    stamp, data = jpegs[min(jpegs)]
    with Image.open(io.BytesIO(bytes(data))) as img:
        assert img.format == "JPEG"
        assert img.size == (WIDTH, HEIGHT)
        img.load()

    # Stamps increase with the capture sequence.
    ordered = [jpegs[s][0] for s in sorted(jpegs)]
    assert all(a < b for a, b in zip(ordered, ordered[1:])), ordered

    # CameraInfo: the pattern's size, no calibration; the same frame's
    # (same capture sequence) stamp is the JPEG's.
    matched = 0
    for (_instance, sequence, _number), payload in got.get("camera_info"):
        info = TYPES.deserialize_cdr(payload, "sensor_msgs/msg/CameraInfo")
        assert (info.width, info.height) == (WIDTH, HEIGHT)
        assert list(info.k) == [0.0] * 9
        assert info.header.frame_id == "camera"
        if sequence in jpegs:
            assert _stamp(info) == jpegs[sequence][0], f"sequence {sequence}"
            matched += 1
    assert matched >= 10, f"only {matched} camera_info samples matched a jpeg by sequence"

    # H.264 (foxglove CompressedVideo): the stream opens with SPS/PPS.
    _numbers_h264, payload = got.get("h264")[0]
    video = TYPES.deserialize_cdr(payload, "foxglove_msgs/msg/CompressedVideo")
    assert video.format == "h264"
    assert video.frame_id == "camera"
    assert abs(_seconds((video.timestamp.sec, video.timestamp.nanosec)) - now) < 10
    nals = _nal_types(bytes(video.data))
    assert 7 in nals, f"first h264 sample: NAL types {nals}, no SPS (7)"


def test_camera_reads_the_topic(server):
    # The same topic through rosbags, to match each frame's timestamp with
    # the message's stamp by capture sequence.
    session = _session(server.endpoint)
    try:
        got = Collector(session, ["jpeg"])
        got.wait(server, {"jpeg": 1})
        frames = []
        with zerocam.Camera(f"zenoh:{PREFIX}/jpeg", zenoh_connect=[server.endpoint],
                            timeout=10.0) as cam:
            for _ in range(30):
                with cam.read() as frame:
                    assert frame.format == "RGB"
                    assert (frame.width, frame.height) == (WIDTH, HEIGHT)
                    # Not kept: a live array keeps its map, and the source
                    # refuses to decode into a buffer something still reads.
                    assert [p.shape for p in frame.planes] == [(HEIGHT, WIDTH, 3)]
                    frames.append((frame.sequence, frame.timestamp))
            stats = cam.stats()
        # The last frame's sample may still be on its way to the collector.
        time.sleep(0.5)
        got.close()
    finally:
        session.close()

    sequences = [s for s, _ in frames]
    assert sequences == list(range(sequences[0], sequences[0] + 30)), (sequences, stats)
    stamps = {}
    for (_instance, sequence, _number), payload in got.get("jpeg"):
        msg = TYPES.deserialize_cdr(payload, "sensor_msgs/msg/CompressedImage")
        stamps[sequence] = _seconds(_stamp(msg))
    for sequence, timestamp in frames:
        assert sequence in stamps, f"frame {sequence}: no sample of that sequence came to rosbags"
        assert timestamp == stamps[sequence], f"frame {sequence}"
