"""JPEG of one 1080p NV12 frame at quality 85, side by side in one run:
zerocam's `frame.jpeg()` against OpenCV and Pillow.

    python python/bench/jpeg_vs_opencv.py [ITERATIONS]

Needs `opencv-python-headless` and `pillow` in the venv (the bench only; not
test requirements). The frame is frame 0 of the pattern source (NV12,
1920x1080, BT.601 limited range), held for the whole run.

- zerocam: `frame.jpeg(85)` — libjpeg-turbo from the YCbCr planes (the
  chroma split and the range expansion, then the compression); the bytes
  object included.
- OpenCV: what an OpenCV user writes for a camera frame,
  `cvtColor(nv12, COLOR_YUV2BGR_NV12)` then `imencode(".jpg", bgr,
  [IMWRITE_JPEG_QUALITY, 85])`; also `imencode` alone, from a BGR image
  already converted. With `cv2.setNumThreads(1)` and the default threads
  (cvtColor is parallel; zerocam's encoder is one thread).
- Pillow: `Image.fromarray(rgb).save(buf, "JPEG", quality=85)`, from an RGB
  image already converted (Pillow cannot read NV12), and with OpenCV's
  conversion before it.

Prints min and median ms per frame and the JPEG sizes; the ratio is
OpenCV's median (cvtColor + imencode) over zerocam's.
"""

import io
import statistics
import sys
import time

import cv2
import numpy as np
from PIL import Image, features

import zerocam

W, H, QUALITY = 1920, 1080, 85
WARMUP = 5


def timed(fn, n):
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1e3, statistics.median(times) * 1e3


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    print(f"JPEG of a {W}x{H} NV12 pattern frame, quality {QUALITY}, {n} iterations")
    print(f"OpenCV {cv2.__version__}, Pillow {Image.__version__} "
          f"(libjpeg-turbo {features.version('libjpeg_turbo')}), {cv2.getNumberOfCPUs()} CPUs")
    with zerocam.Camera.pattern("NV12", (W, H)) as cam, cam.read() as frame:
        y, uv = frame.planes
        nv12 = np.ascontiguousarray(np.concatenate([y, uv]))
        bgr = cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12)
        rgb = cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12)
        params = [cv2.IMWRITE_JPEG_QUALITY, QUALITY]

        def opencv():
            ok, buf = cv2.imencode(".jpg", cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12), params)
            assert ok
            return buf

        def opencv_encode_only():
            return cv2.imencode(".jpg", bgr, params)[1]

        def pillow(rgb=rgb):
            out = io.BytesIO()
            Image.fromarray(rgb).save(out, "JPEG", quality=QUALITY)
            return out.getvalue()

        def pillow_with_conversion():
            return pillow(cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12))

        def zc():
            return frame.jpeg(QUALITY)

        sizes = {
            "zerocam": len(zc()),
            "opencv": len(opencv()),
            "pillow": len(pillow()),
        }
        rows = []
        for threads in (1, cv2.getNumberOfCPUs()):
            cv2.setNumThreads(threads)
            rows.append((f"OpenCV cvtColor+imencode, {threads} thread(s)", timed(opencv, n)))
            rows.append((f"OpenCV imencode only (BGR given), {threads} thread(s)",
                         timed(opencv_encode_only, n)))
            rows.append((f"Pillow cvtColor+save, {threads} OpenCV thread(s)",
                         timed(pillow_with_conversion, n)))
        rows.append(("Pillow save only (RGB given)", timed(pillow, n)))
        zc_time = timed(zc, n)
        rows.append(("zerocam frame.jpeg()", zc_time))
    for name, (lo, med) in rows:
        print(f"{name:52} min {lo:7.2f} ms  median {med:7.2f} ms")
    print("JPEG bytes:", ", ".join(f"{k} {v}" for k, v in sizes.items()))
    for name, (_, med) in rows:
        if name.startswith("OpenCV cvtColor+imencode"):
            print(f"{name} / zerocam: {med / zc_time[1]:.2f}x")


if __name__ == "__main__":
    main()
