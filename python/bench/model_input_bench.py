"""Model-input preprocessing per frame, side by side in one run: zerocam's CPU
path against OpenCV + numpy at the same thread counts, and against a memset
of the output (the floor: no path writes its output faster), then a batch of
four cameras against four single calls.

    python python/bench/model_input_bench.py [FRAMES]

The work, a detector's input from a camera frame: a 1280x720 NV12 frame,
centre crop to the model's square (the letterbox: the whole frame, bars
above and below), resized to 640x640, then
- `u8 NHWC`: 640x640x3 uint8 RGB (a quantized model's input);
- `f32 NCHW ImageNet`: 1x3x640x640 float32, ImageNet mean/std;
- `i8 NHWC quantized`: int8, scale 1/255, zero point -128;
- `f32 letterbox`: 1x3x640x640 float32 0..1, bars of 114 (YOLO);
- `f32 NCHW area`: as `f32 NCHW ImageNet` with area resampling
  (OpenCV: `INTER_AREA`).

OpenCV + numpy does what a Python user writes: `cvtColor(NV12 -> RGB)`, the
crop as a slice, `resize`, then `astype`, `/255`, `- mean`, `/ std`,
`transpose`. zerocam runs `zerocam.Preprocessor(..., threads=n)` writing into
a preallocated numpy array (`out=`). OpenCV runs on `cv2.setNumThreads(n)`
(numpy's element-wise steps are single-threaded whatever n is). The memset
is `ctypes.memset` of the output's bytes.

Each figure is the median wall time per frame (ms) over FRAMES frames
(default 100) after a warm-up, each implementation's frames in a block, the
blocks of one row back to back. zerocam's Python heap per frame (`tracemalloc`) is
printed too; its Rust-side allocations (0 per frame, on every thread) are
counted by `cargo run --release -p zerocam-preprocess --example
model_input_bench`.
"""

import ctypes
import os
import statistics
import sys
import time
import tracemalloc

import numpy as np

W, H, SIDE = 1280, 720, 640
MEAN = np.array((0.485, 0.456, 0.406), np.float32)
STD = np.array((0.229, 0.224, 0.225), np.float32)
WARMUP = 5
X0 = (W - H) // 2


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


def cases(cv2, zerocam):
    """(name, zerocam ModelInput, numpy dtype, OpenCV + numpy code)."""

    def rgb(nv12, inter=cv2.INTER_LINEAR):
        crop = cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12)[:, X0 : X0 + H]
        return cv2.resize(crop, (SIDE, SIDE), interpolation=inter)

    def imagenet(x):
        x = (x.astype(np.float32) / 255.0 - MEAN) / STD
        return np.ascontiguousarray(x.transpose(2, 0, 1))[None]

    def letterbox(nv12):
        small = cv2.resize(cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12), (SIDE, 360),
                           interpolation=cv2.INTER_LINEAR)
        padded = cv2.copyMakeBorder(small, 140, 140, 0, 0, cv2.BORDER_CONSTANT,
                                    value=(114, 114, 114))
        return np.ascontiguousarray((padded.astype(np.float32) / 255).transpose(2, 0, 1))[None]

    MI = zerocam.ModelInput
    return [
        ("u8 NHWC", MI(SIDE, SIDE, layout="nhwc", dtype="uint8", fit="crop"), np.uint8,
         lambda f: rgb(f)[None]),
        ("f32 NCHW ImageNet", MI(SIDE, SIDE, mean=tuple(MEAN), std=tuple(STD), fit="crop"),
         np.float32, lambda f: imagenet(rgb(f))),
        ("i8 NHWC quantized", MI(SIDE, SIDE, layout="nhwc", dtype="int8", scale=1 / 255,
                                 zero_point=-128, fit="crop"), np.int8,
         lambda f: (rgb(f).astype(np.int16) - 128).astype(np.int8)[None]),
        ("f32 letterbox", MI(SIDE, SIDE, fit="letterbox"), np.float32, letterbox),
        ("f32 NCHW area", MI(SIDE, SIDE, mean=tuple(MEAN), std=tuple(STD), fit="crop",
                             resample="area"), np.float32,
         lambda f: imagenet(rgb(f, cv2.INTER_AREA))),
    ]


def zerocam_source(zerocam, nv12):
    src = zerocam.Tensor.image(W, H, "NV12", mem="mem")
    for i, rows in enumerate((nv12[:H], nv12[H:])):
        with src.plane(i).map("write") as view:
            np.asarray(view)[...] = rows.reshape(np.asarray(view).shape)
    return src


def medians(runs, frames):
    """Median ms per call of each of `runs`, each run `frames` times in a
    block after a warm-up (alternating them frame by frame would hand one
    the other's threads still spinning: OpenCV's pool busy-waits after a
    parallel call)."""
    out = []
    for run in runs:
        for _ in range(WARMUP):
            run()
        t = []
        for _ in range(frames):
            t0 = time.perf_counter()
            run()
            t.append((time.perf_counter() - t0) * 1e3)
        out.append(statistics.median(t))
    return out


def heap_per_call(run):
    """Python heap bytes one call allocates and keeps, at its peak."""
    run()
    tracemalloc.start()
    run()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return max(peak - before, 0)


def main():
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    import cv2

    import zerocam

    nv12 = nv12_frame()
    src = zerocam_source(zerocam, nv12)
    color = ("bt601", "limited")  # what COLOR_YUV2RGB_NV12 assumes
    cores = len(os.sched_getaffinity(0))
    counts = sorted({1, 2, cores})
    print(f"1280x720 NV12 -> 640x640, median ms per frame over {frames} frames, "
          f"{cores} cores, OpenCV {cv2.__version__}, numpy {np.__version__}")
    print("| output | threads | OpenCV + numpy | zerocam | zerocam speed-up | memset | "
          "zerocam / memset | zerocam Python heap B/frame |")
    print("|---|---|---|---|---|---|---|---|")
    for name, mi, dtype, opencv in cases(cv2, zerocam):
        out = np.zeros(mi.shape, dtype)
        dst = zerocam.Tensor.from_array(out)
        for n in counts:
            cv2.setNumThreads(n)
            pre = zerocam.Preprocessor(mi, device="cpu", threads=n)

            def zc(pre=pre):
                pre(src, color=color, out=dst)

            def memset():
                ctypes.memset(out.ctypes.data, 0, out.nbytes)

            cv, z, m = medians([lambda: opencv(nv12), zc, memset], frames)
            label = f"{n} (all)" if n == cores else str(n)
            print(f"| {name} | {label} | {cv:.2f} | {z:.2f} | {cv / z:.1f}x | {m:.3f} | "
                  f"{z / m:.1f}x | {heap_per_call(zc)} |")

    # Four cameras into one batched input, against four calls of batch 1.
    print()
    print(f"4 cameras (the same frame four times), {cores} threads: one batch-4 call "
          "against four batch-1 calls, median ms per set of four")
    print("| output | batch of 4 | 4 single calls |")
    print("|---|---|---|")
    for name, mi, dtype, _ in cases(cv2, zerocam)[:2]:
        kw = dict(width=SIDE, height=SIDE, fit="crop")
        if dtype == np.uint8:
            kw.update(layout="nhwc", dtype="uint8")
        else:
            kw.update(mean=tuple(MEAN), std=tuple(STD))
        four = zerocam.ModelInput(batch=4, **kw)
        batch = zerocam.Preprocessor(four, device="cpu", threads=cores)
        single = zerocam.Preprocessor(mi, device="cpu", threads=cores)
        bout = zerocam.Tensor.from_array(np.zeros(four.shape, dtype))
        sout = [zerocam.Tensor.from_array(np.zeros(mi.shape, dtype)) for _ in range(4)]
        cams = [src] * 4

        def one_call():
            batch(cams, color=color, out=bout)

        def four_calls():
            for o in sout:
                single(src, color=color, out=o)

        b, s = medians([one_call, four_calls], max(frames // 4, 10))
        print(f"| {name} | {b:.2f} | {s:.2f} |")


if __name__ == "__main__":
    main()
