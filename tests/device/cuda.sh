#!/usr/bin/env bash
# CUDA on a real NVIDIA GPU: run on any Linux machine with the NVIDIA driver
# (libcuda.so.1) and, for path (c), EGL (the driver's libEGL_nvidia through
# libglvnd, surfaceless). Needs no CUDA toolkit: zerocam loads the driver at
# run time.
#
#   bash tests/device/cuda.sh [FRAMES]
#
# 1. builds zerocam-cuda and its real-GPU check (release);
# 2. runs the check: paths (a) host registration and (c) GL buffer interop
#    move real pixels (read back with cuMemcpyDtoH, equal to the CPU's / GL's),
#    one registration per buffer over FRAMES maps, then the benchmark: the
#    cached map against registering every frame and against cuMemcpyHtoD, at
#    720p and 4K (one JSON line each);
# 3. `zerocam probe`'s CUDA section;
# 4. Python: builds the wheel into python/.venv when missing and hands
#    `Tensor.cuda()` to CuPy and torch through __cuda_array_interface__ /
#    DLPack where they are installed (said when they are not).
# Exit status: 0 all passed, 1 a check failed, 2 no CUDA on this machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
frames=${1:-1000}
step() { printf '\n=== %s (%s)\n' "$1" "$(date +%T)"; }

step "nvidia driver"
if ! ldconfig -p | grep -q 'libcuda.so.1 '; then
    echo "no libcuda.so.1 on this machine: not a CUDA machine" >&2
    exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L || true

step "build (release)"
cargo build --release -q -p zerocam-cuda --example cuda_check -p zerocam-cli --bin zerocam

step "paths (a) and (c), registration counts, benchmark"
target/release/examples/cuda_check "$frames"

step "zerocam probe"
target/release/zerocam probe | sed -n '/^CUDA/,$p'

step "python: __cuda_array_interface__ and DLPack"
py=python/.venv/bin/python
if [[ ! -x $py ]] || ! $py -c 'import zerocam' 2>/dev/null; then
    python3 -m venv python/.venv
    python/.venv/bin/pip install -q "maturin>=1.5,<2" "numpy>=1.22"
    python/.venv/bin/pip install -q ./python
fi
$py - <<'PY'
import numpy as np
import zerocam

print("cuda_available:", zerocam.cuda_available(), zerocam.cuda_info())
t = zerocam.Tensor.image(640, 480, "RGB", memory="shm")
with t.map() as m:
    a = np.asarray(m)
    a[...] = (np.arange(a.size) % 251).astype(np.uint8).reshape(a.shape)
    cpu = a.copy()
c = t.cuda("r")
cai = c.__cuda_array_interface__
print("cuda_array_interface:", {k: cai[k] for k in ("shape", "typestr", "version")}, "path", c.path)
assert bytes(c.copy_to_host(0, c.nbytes)) == cpu.tobytes(), "cuMemcpyDtoH differs from the CPU"
ran = []
try:
    import cupy
    g = cupy.asarray(c)
    assert (cupy.asnumpy(g) == cpu).all()
    ran.append("cupy")
except ImportError:
    print("cupy: not installed")
try:
    import torch
    if torch.cuda.is_available():
        g = torch.as_tensor(c, device="cuda")
        assert (g.cpu().numpy() == cpu).all()
        ran.append("torch (__cuda_array_interface__)")
        d = torch.from_dlpack(c)
        assert (d.cpu().numpy() == cpu).all()
        ran.append("torch (DLPack)")
except ImportError:
    print("torch: not installed")
c.release()
print("consumers checked:", ", ".join(ran) or "none installed")
PY
echo "tests/device/cuda.sh: all passed"
