#!/usr/bin/env bash
# CUDA on a real NVIDIA GPU: run on any Linux machine with the NVIDIA driver
# (libcuda.so.1) and, for GL interop, EGL (the driver's libEGL_nvidia through
# libglvnd). Needs no CUDA toolkit: zerocam loads the driver at run time.
#
#   bash tests/device/cuda.sh [FRAMES]
#
# Build first where building is cheap (a GPU machine's time is counted):
# `cargo build --release -p zerocam-cuda --example cuda_check -p zerocam-cli
# --bin zerocam` and `pip install ./python` into python/.venv; the script
# builds only what is missing. Then, in this order, one JSON line per check
# ({"check": ..., "ok": true|false, ...}), so the output can be pasted as the
# record (docs/cuda.md):
#
#  1. egl: the GL thread CUDA interop uses is on NVIDIA's EGL (zerocam doctor);
#  2. attributes: 91 (host pointer is the device pointer), 99 (host register
#     supported), 113 (read-only host register), and those the driver does
#     not know;
#  3. host registration: a shared-memory tensor, two heap tensors in one page,
#     a read-only map, and a DMA-heap tensor (expected refused on a discrete
#     GPU, so the staged path), each read back with copy_to_host against the
#     CPU's bytes;
#  4. gl_buffer: a GPU Preprocessor's result (a PBO) mapped and read back at
#     once against the CPU's map of it;
#  5. cupy / torch: "rw" and "r" maps through __cuda_array_interface__ and
#     DLPack (torch's as_tensor refuses a read-only interface: checked as
#     refused), each followed by torch.cuda.synchronize() (where installed);
#  6. cuda_check: the cached map against re-registering and cuMemcpyHtoD, at
#     720p and 4K (its own JSON lines), and `zerocam probe`'s CUDA section.
#
# Exit status: 0 all passed, 1 a check failed, 2 no CUDA on this machine.
# `bash tests/device/cuda.sh --check-setup` runs only the set-up step below.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The build (cargo) and python/.venv (Python's venv: tests/setup --python); on
# a CUDA machine only (the NVIDIA driver is the machine's, not a package).
setup() { bash tests/setup --python --need cargo python3 has_python_venv; }
if [[ ${1:-} == --check-setup ]]; then
    setup
    exit 0
fi
frames=${1:-1000}
failed=0
step() { printf '\n=== %s (%s)\n' "$1" "$(date +%T)" >&2; }

if ! ldconfig -p | grep -q 'libcuda.so.1 '; then
    echo "no libcuda.so.1 on this machine: not a CUDA machine" >&2
    exit 2
fi
setup
command -v nvidia-smi >/dev/null && nvidia-smi -L >&2 || true

step "build what is missing (release)"
bin=target/release
if [[ ! -x $bin/zerocam || ! -x $bin/examples/cuda_check ]]; then
    cargo build --release -q -p zerocam-cuda --example cuda_check -p zerocam-cli --bin zerocam
fi
py=python/.venv/bin/python
# -I: not the checkout's zerocam/ folder (the facade crate), which an import
# from the checkout's root would take for a namespace package.
if [[ ! -x $py ]] || ! $py -I -c 'import zerocam; zerocam.Camera' 2>/dev/null; then
    python3 -m venv python/.venv
    python/.venv/bin/pip install -q "maturin>=1.5,<2" "numpy>=1.22"
    python/.venv/bin/pip install -q ./python
fi

step "1. the EGL CUDA interop runs on"
$bin/zerocam doctor --json --frames 1 | $py -c '
import json, sys
egl = next(c for c in json.load(sys.stdin)["checks"] if c["name"] == "EGL")
print(json.dumps({"check": "egl", "ok": "NVIDIA" in egl["detail"], "detail": egl["detail"]}))
' || failed=1

step "2-5. attributes, host registration, GL buffer interop, CuPy and torch"
$py - <<'PY' || failed=1
import json, sys
import numpy as np
import zerocam
from zerocam import ModelInput, Preprocessor, Tensor

failed = False

def emit(check, ok, **detail):
    global failed
    failed |= not ok
    print(json.dumps({"check": check, "ok": bool(ok), **detail}), flush=True)

def attempt(check, f):
    try:
        f()
    except Exception as e:  # the record says what failed, and the run goes on
        emit(check, False, error=f"{type(e).__name__}: {e}")

info = zerocam.cuda_info()
if info is None:
    emit("attributes", False, error="zerocam.cuda_info() is None: CUDA unavailable")
    sys.exit(1)
emit("attributes", True, name=info["name"], integrated=info["integrated"],
     driver=info["driver_version"],
     attr91_host_pointer_is_device_pointer=info["host_pointer_is_device_pointer"],
     attr99_host_register=info["host_register"],
     attr113_read_only_host_register=info["read_only_host_register"],
     unknown=info["unknown_attributes"])

def filled(t, seed):
    with t.map("w") as m:
        a = np.asarray(m)
        a[...] = (np.arange(a.size) * seed % 251).astype(np.uint8).reshape(a.shape)
        return a.tobytes()

def cpu_bytes(t):
    with t.map("r") as m:
        return np.asarray(m).tobytes()

def read_back(check, t, access, expect_path=None):
    cpu = filled(t, 7) if access != "r" else cpu_bytes(t)
    with t.cuda(access) as c:
        same = c.copy_to_host(0, c.nbytes) == cpu[: c.nbytes]
        ok = same and (expect_path is None or c.path == expect_path)
        emit(check, ok, path=c.path, access=c.access, nbytes=c.nbytes, same_bytes=same)

attempt("host_shm", lambda: read_back("host_shm", Tensor(1 << 20, "uint8", mem="shm"), "rw"))
def two_in_a_page():
    # Small heap tensors (64-byte aligned) share pages; NVIDIA's driver
    # registers whole pages, so the second registration meets the first.
    pool = [Tensor(64, "uint8", mem="mem") for _ in range(256)]
    page = {}
    for t in pool:
        page.setdefault(t.pin_host("read").ptr >> 12, []).append(t)
    pair = next((ts for ts in page.values() if len(ts) >= 2), None)
    if pair is None:
        emit("host_mem_one_page", False, error="the allocator put no two tensors in one page")
        return
    a, b = pair[:2]
    read_back("host_mem_a", a, "rw")
    read_back("host_mem_b_same_page", b, "rw")
    with a.cuda("rw") as ca, b.cuda("rw") as cb:
        emit("host_mem_one_page_both_mapped", True, a=hex(ca.device_ptr), b=hex(cb.device_ptr))
attempt("host_mem_one_page", two_in_a_page)
def read_only():
    t = Tensor(1 << 16, "uint8", mem="shm")
    filled(t, 3)
    read_back("host_read_only", t, "r")
attempt("host_read_only", read_only)
def heap():
    t = Tensor(1 << 20, "uint8", mem="dma")
    filled(t, 5)
    expected = None if info["integrated"] else "staged"
    read_back("host_dma_heap", t, "r", expect_path=expected)
    emit("staged_counted", True, stats=zerocam.cuda_stats())
attempt("host_dma_heap", heap)

def gl_buffer():
    src = Tensor.image(1280, 720, "NV12", mem="shm")
    filled(src, 11)
    pre = Preprocessor(ModelInput(640, 640), device="gpu")
    out = pre(src)
    with out.cuda("r") as c:
        dev = c.copy_to_host(0, c.nbytes)  # at once: ordered on the map's stream
        path = c.path
    cpu = cpu_bytes(out)
    emit("gl_buffer", path == "gl-buffer" and dev == cpu, path=path, nbytes=len(dev))
attempt("gl_buffer", gl_buffer)

def consumers():
    t = Tensor.image(640, 480, "RGB", mem="shm")
    cpu = np.frombuffer(filled(t, 13), np.uint8).reshape(480, 640, 3)
    try:
        import cupy
        for access in ("rw", "r"):
            with t.cuda(access) as c:
                g = cupy.asarray(c)
                emit(f"cupy_{access}", bool((cupy.asnumpy(g) == cpu).all()))
                del g
    except ImportError:
        emit("cupy", True, skipped="cupy not installed")
    try:
        import torch
        if not torch.cuda.is_available():
            emit("torch", False, error="torch.cuda.is_available() is False")
            return
        for access in ("rw", "r"):
            with t.cuda(access) as c:
                d = torch.from_dlpack(c)
                ok = bool((d.cpu().numpy() == cpu).all())
                if access == "rw":
                    x = torch.as_tensor(c, device="cuda")
                    ok = ok and bool((x.cpu().numpy() == cpu).all())
                    del x
                else:
                    # torch takes no read-only __cuda_array_interface__.
                    try:
                        torch.as_tensor(c, device="cuda")
                        ok = False
                    except TypeError as e:
                        ok = ok and "read only" in str(e)
                torch.cuda.synchronize()
                emit(f"torch_{access}", ok, consumers="DLPack, __cuda_array_interface__ (refused for r)")
                del d
    except ImportError:
        emit("torch", True, skipped="torch not installed")
attempt("consumers", consumers)
sys.exit(1 if failed else 0)
PY

step "6. the benchmark (cuda_check) and zerocam probe"
$bin/examples/cuda_check "$frames" || failed=1
$bin/zerocam probe | sed -n '/^CUDA/,$p'

exit $failed
