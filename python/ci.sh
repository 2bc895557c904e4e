#!/usr/bin/env bash
# CI for the zerocam Python package: build the extension with the documented
# command (`pip install ./python`, through maturin), run the host pytest suite,
# then the lab pytest suite inside the kernel lab (vivid, DMA heap), where the
# guest's own python3 (trixie, with python3-numpy and python3-pytest) imports
# the same abi3 wheel, unpacked under target/python-lab.
#
#   bash python/ci.sh            # host + lab
#   bash python/ci.sh --host     # host only
#   bash python/ci.sh --bench    # host + lab + the lab benchmark (docs/benchmarks.md)
#
# Runs as root on a fresh machine without stdin: creates python/.venv and
# installs pip, maturin, numpy and pytest into it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$root/python/.venv
wheels=$root/target/python-wheels
site=$root/target/python-lab/site
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export PATH="$venv/bin:$PATH"  # maturin, for the build without isolation

step() { printf '\n=== python: %s (%s)\n' "$1" "$(date +%T)"; }

step "venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q "maturin>=1.5,<2" "numpy>=1.22" pytest

step "wheel (pip wheel ./python) and install (pip install)"
rm -rf "$wheels"
# Build once through pip and maturin, in the workspace's target folder.
"$venv/bin/pip" wheel -q --no-deps --no-build-isolation -w "$wheels" ./python
wheel=$(ls "$wheels"/zerocam-*.whl)
echo "built $wheel"
"$venv/bin/pip" install -q --force-reinstall --no-deps "$wheel"

step "host tests"
(cd "$root/python" && "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/host)

[[ ${1:-} == --host ]] && exit 0

step "lab tests (in the kernel lab's guest)"
rm -rf "$site" && mkdir -p "$site"
"$venv/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$site"
tests/lab/prepare
(cd "$root/python" && tests_lab=$root/tests/lab/run &&
    "$tests_lab" -- env PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 \
        python3 -m pytest -q -p no:cacheprovider tests/lab)

if [[ ${1:-} == --bench ]]; then
    step "benchmark (in the kernel lab's guest)"
    bash python/bench/run.sh
fi
