"""CPU time per frame of a Python loop that reads each frame as numpy:
zerocam vs OpenCV's VideoCapture vs linuxpy, on the same vivid device, NV12,
in one run. Run in the kernel lab by python/bench/run.sh; prints a Markdown
table and one JSON line per row.

CPU time is the process's user + system time (time.process_time) over the
measured frames, divided by their number: what the loop costs this process,
waiting excluded. Each loop touches one pixel of the array so the frame is
really taken as numpy; none processes the image.
"""

import json
import os
import sys
import time

import numpy as np

DEVICE = os.environ.get("BENCH_DEVICE", "/dev/video0")
FRAMES = int(os.environ.get("BENCH_FRAMES", "300"))
WARMUP = 10
SIZES = [(640, 480), (1280, 720)]


def measure(frames):
    """Runs the generator `frames` (yielding numpy arrays): warm-up, then FRAMES frames."""
    it = iter(frames)
    for _ in range(WARMUP):
        next(it)
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(FRAMES):
        next(it)
    c1, w1 = time.process_time(), time.perf_counter()
    return (c1 - c0) / FRAMES, FRAMES / (w1 - w0)


def zerocam_frames(w, h):
    import zerocam

    with zerocam.Camera(DEVICE, "NV12", (w, h), fps=60.0, buffers=4) as cam:
        for frame in cam:
            with frame:
                y, uv = frame.planes  # numpy arrays over the dma-buf, no copy
                int(y[0, 0])
                del y, uv
                yield None


def zerocam_bare_frames(w, h):
    """The floor: frames dequeued and re-queued, no numpy array made."""
    import zerocam

    with zerocam.Camera(DEVICE, "NV12", (w, h), fps=60.0, buffers=4) as cam:
        for frame in cam:
            frame.release()
            yield None


def opencv_frames(w, h, convert):
    import cv2

    cap = cv2.VideoCapture(DEVICE, cv2.CAP_V4L2)
    cap.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter_fourcc(*"NV12"))
    cap.set(cv2.CAP_PROP_FRAME_WIDTH, w)
    cap.set(cv2.CAP_PROP_FRAME_HEIGHT, h)
    cap.set(cv2.CAP_PROP_FPS, 60)
    cap.set(cv2.CAP_PROP_BUFFERSIZE, 4)
    if not convert:
        cap.set(cv2.CAP_PROP_CONVERT_RGB, 0)
    try:
        while True:
            ok, img = cap.read()
            if not ok:
                raise RuntimeError("cv2.VideoCapture.read failed")
            int(img.flat[0])
            yield None
    finally:
        cap.release()


def linuxpy_frames(w, h):
    from linuxpy.video.device import Device, VideoCapture

    with Device(DEVICE) as dev:
        cap = VideoCapture(dev, size=4)
        cap.set_format(w, h, "NV12")
        cap.set_fps(60)
        with cap:
            for frame in cap:
                a = np.frombuffer(frame.data, dtype=np.uint8)
                int(a[0])
                yield None


def main():
    runs = [
        ("zerocam (NV12 planes, mmap + dma-buf)", zerocam_frames),
        ("zerocam, frame only (no numpy; the floor)", zerocam_bare_frames),
        ("OpenCV VideoCapture (NV12 → BGR, default)", lambda w, h: opencv_frames(w, h, True)),
        ("OpenCV VideoCapture (CONVERT_RGB=0, raw)", lambda w, h: opencv_frames(w, h, False)),
        ("linuxpy VideoCapture (frame.data → numpy)", linuxpy_frames),
    ]
    rows = []
    for w, h in SIZES:
        for name, make in runs:
            try:
                cpu, fps = measure(make(w, h))
                rows.append(dict(library=name, size=f"{w}x{h}", cpu_us=cpu * 1e6, fps=fps))
            except Exception as e:  # a library that cannot run is reported, not hidden
                rows.append(dict(library=name, size=f"{w}x{h}", error=f"{type(e).__name__}: {e}"))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(f"{FRAMES} frames per row after {WARMUP} warm-up, {DEVICE}, Python {sys.version.split()[0]}")
    print("| size | library | CPU per frame (µs) | fps | vs zerocam |")
    print("| --- | --- | ---: | ---: | ---: |")
    for size in {r["size"]: 0 for r in rows}:
        base = next((r for r in rows if r["size"] == size and r["library"].startswith("zerocam") and "cpu_us" in r), None)
        for r in rows:
            if r["size"] != size:
                continue
            if "error" in r:
                print(f"| {size} | {r['library']} | error: {r['error']} | | |")
                continue
            ratio = f"{r['cpu_us'] / base['cpu_us']:.1f}×" if base else ""
            print(f"| {size} | {r['library']} | {r['cpu_us']:.0f} | {r['fps']:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
