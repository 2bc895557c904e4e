"""python/examples/capture.py on vivid, in the kernel lab."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "capture.py"


def test_capture_example_on_vivid():
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "/dev/video0", "--frames", "20"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = out.splitlines()
    assert lines[0] == "/dev/video0: NV12 640x480", out
    assert sum(line.startswith("frame ") for line in lines) == 20, out
    assert "imports 4 (= 4 buffers x 1 planes)" in lines[-1], out
