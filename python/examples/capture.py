"""Capture frames into numpy without a copy, and into torch when it is installed.

    python python/examples/capture.py [DEVICE] [--frames N]

With no DEVICE and no camera, the built-in pattern source stands in. DEVICE
``unix:SOCKET`` subscribes to a ``zerocam serve`` publisher instead: the same
frames another process (a Rust model, a recorder) reads from the same camera,
each buffer imported once (examples/share-demo runs both). Each frame's
planes are numpy arrays over the driver's buffer (read-only); the mean luma of
the frame's centre is the stand-in for inference. With torch installed, the
frame tensor goes to ``torch.from_dlpack`` as well (no copy either).
"""

import argparse
import sys
import time

import numpy as np

import zerocam


def open_camera(device):
    if device is None:
        devices = zerocam.list_devices()
        device = devices[0] if devices else None
    if device is not None and device.startswith("unix:"):
        print(f"{device}: a publisher's frames, in its format")
        return zerocam.Camera(device=device)
    if device is None or device == "pattern":
        print("no camera given and none found: using the built-in pattern source (NV12 640x480)")
        return zerocam.Camera.pattern("NV12", (640, 480))
    print(f"{device}: NV12 640x480")
    return zerocam.Camera(device=device, format="NV12", size=(640, 480), buffers=4)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device", nargs="?")
    parser.add_argument("--frames", type=int, default=30)
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401  (optional)
    except ImportError:
        torch = None

    with open_camera(args.device) as cam:
        start = time.perf_counter()
        for _ in range(args.frames):
            with cam.read(timeout=5.0) as frame:
                y, uv = frame.planes  # views of the buffer, not copies
                h, w = y.shape
                centre = y[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4]
                line = f"frame {frame.sequence:4d}  mean Y {float(np.mean(centre)):6.1f}"
                if torch is not None:
                    t = torch.from_dlpack(frame.tensor)
                    line += f"  torch {tuple(t.shape)} {t.dtype}"
                print(line)
        stats = cam.stats()
    elapsed = time.perf_counter() - start
    cache = stats["cache"]
    print(
        f"{stats['frames']} frames in {elapsed:.2f} s: imports {cache['misses']} "
        f"(= {stats['buffers']} buffers x {stats['planes']} planes), cache hits {cache['hits']}, "
        f"dropped {stats['dropped']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
