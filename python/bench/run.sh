#!/usr/bin/env bash
# The Python capture benchmark in the kernel lab (docs/benchmarks.md, "Python").
# Needs the wheel unpacked by python/ci.sh (target/python-lab/site); fetches
# linuxpy (pure Python) from PyPI into target/python-lab/vendor once, with the
# venv python/ci.sh made. `--check-setup`: the lab's host tools (tests/setup
# --lab), then stop.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tests/setup --lab --need qemu-system-x86_64
[[ ${1:-} == --check-setup ]] && exit 0
root=$PWD
site=$root/target/python-lab/site
vendor=$root/target/python-lab/vendor
[[ -d $site/zerocam ]] || { echo "run bash python/ci.sh first (it unpacks the wheel)" >&2; exit 1; }
if [[ ! -d $vendor/linuxpy ]]; then
    "$root/python/.venv/bin/pip" install -q --no-deps --target "$vendor" "linuxpy==0.25.0"
fi
tests/lab/prepare >/dev/null
tests/lab/run -- env PYTHONPATH="$site:$vendor" PYTHONDONTWRITEBYTECODE=1 \
    python3 "$root/python/bench/capture_bench.py"
