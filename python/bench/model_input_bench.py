"""Model-input preprocessing per frame, side by side in one run:
zerocam (CPU, and GPU where a GL renderer exists) against OpenCV + numpy.

    python python/bench/model_input_bench.py [FRAMES]

The work, a detector's input from a camera frame: a 1280x720 NV12 frame, centre crop to the model's
square, bilinear resize to 640x640, then either
- `f32`: 1x3x640x640 float32, normalized with ImageNet mean/std (NCHW), or
- `u8`: 640x640x3 uint8 RGB (NHWC).

OpenCV + numpy does what a Python user writes: `cvtColor(NV12 -> RGB)`, the
crop as a slice, `resize(INTER_LINEAR)`, then for f32 `astype`, `/255`,
`- mean`, `/ std` and `transpose`. zerocam runs `zerocam.Preprocessor`.
Both run with the same number of threads: OpenCV's `cv2.setNumThreads(n)`
(zerocam's CPU path is single-threaded, so it runs alone at n = 1 and is
compared at n = 1 and n = 2 as the issue does).

Per case it prints min and median wall time per frame (ms) and the Python
heap allocated per frame in steady state (`tracemalloc`, bytes, after the
warm-up): OpenCV allocates its intermediate images each frame; zerocam's
ring of destinations does not. Rust-side allocations of zerocam are counted
by `cargo run --release -p zerocam-preprocess --example model_input_bench`.
"""

import statistics
import sys
import time
import tracemalloc

import numpy as np

W, H, SIDE = 1280, 720, 640
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
WARMUP = 5


def nv12_frame():
    """A deterministic 1280x720 NV12 frame: smooth gradients plus noise."""
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:H, 0:W]
    y = (16 + (xx * 200 // W + yy * 19 // H) % 220).astype(np.uint8)
    y = np.clip(y.astype(np.int16) + rng.integers(-8, 9, y.shape), 16, 235).astype(np.uint8)
    cy, cx = np.mgrid[0 : H // 2, 0 : W // 2]
    u = (64 + cx * 128 // (W // 2)).astype(np.uint8)
    v = (192 - cy * 128 // (H // 2)).astype(np.uint8)
    uv = np.stack([u, v], axis=-1).reshape(H // 2, W)
    return np.concatenate([y, uv], axis=0)  # (H * 3 / 2, W), what cv2 takes


def opencv_f32(cv2, nv12):
    rgb = cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12)
    x0 = (W - H) // 2
    crop = rgb[:, x0 : x0 + H]
    small = cv2.resize(crop, (SIDE, SIDE), interpolation=cv2.INTER_LINEAR)
    x = small.astype(np.float32) / 255.0
    x = (x - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))[None]


def opencv_u8(cv2, nv12):
    rgb = cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12)
    x0 = (W - H) // 2
    return cv2.resize(rgb[:, x0 : x0 + H], (SIDE, SIDE), interpolation=cv2.INTER_LINEAR)


def zerocam_source(zerocam, nv12):
    src = zerocam.Tensor.image(W, H, "NV12", mem="mem")
    for i, rows in enumerate((nv12[:H], nv12[H:])):
        with src.plane(i).map("write") as view:
            np.asarray(view)[...] = rows.reshape(np.asarray(view).shape)
    return src


def timed(run, frames):
    """min and median ms per call, and Python heap bytes allocated per call."""
    for _ in range(WARMUP):
        run()
    times = []
    for _ in range(frames):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    tracemalloc.start()
    run()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return min(times), statistics.median(times), max(peak - before, 0)


def main():
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    import cv2

    nv12 = nv12_frame()
    rows = []
    for threads in (1, 2):
        cv2.setNumThreads(threads)
        rows.append(("OpenCV + numpy", threads, "f32", timed(lambda: opencv_f32(cv2, nv12), frames)))
        rows.append(("OpenCV", threads, "u8", timed(lambda: opencv_u8(cv2, nv12), frames)))

    import zerocam

    src = zerocam_source(zerocam, nv12)
    f32 = zerocam.ModelInput(SIDE, SIDE, dtype="float32", mean=MEAN, std=STD, fit="crop")
    u8 = zerocam.ModelInput(SIDE, SIDE, layout="nhwc", dtype="uint8", fit="crop")
    color = ("bt601", "limited")  # what COLOR_YUV2RGB_NV12 assumes
    for device in ("cpu", "gpu"):
        for name, mi in (("f32", f32), ("u8", u8)):
            try:
                pre = zerocam.Preprocessor(mi, device=device)
            except zerocam.Error as e:  # no EGL: the GPU rows say so
                print(f"zerocam {device}: not measured ({e})", file=sys.stderr)
                break

            def run(pre=pre):
                pre(src, color=color)

            label = f"zerocam {device}" + (" (llvmpipe)" if device == "gpu" else "")
            rows.append((label, 1, name, timed(run, frames)))

    print(f"1280x720 NV12 -> centre crop -> 640x640, {frames} frames per row, "
          f"OpenCV {cv2.__version__}, numpy {np.__version__}")
    print("| output | implementation | threads | min ms | median ms | Python heap bytes/frame |")
    print("|---|---|---|---|---|---|")
    for out in ("f32", "u8"):
        for label, threads, name, (lo, med, heap) in rows:
            if name == out:
                print(f"| {out} | {label} | {threads} | {lo:.2f} | {med:.2f} | {heap} |")


if __name__ == "__main__":
    main()
