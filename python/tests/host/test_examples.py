"""python/examples/capture.py on the host: the pattern source stands in."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "capture.py"


def test_capture_example_runs_on_the_pattern_source():
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--frames", "12"], capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    assert "built-in pattern source" in lines[0], out
    assert sum(line.startswith("frame ") for line in lines) == 12, out
    assert "12 frames" in lines[-1] and "imports 4 (= 4 buffers x 1 planes), cache hits 8" in lines[-1], out
