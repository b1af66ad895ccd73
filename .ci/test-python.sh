#!/usr/bin/env bash
# The suite on one CPython (make test-py PY_VERSION=X), against bale as a
# user installs it: a wheel built with maturin for that interpreter,
# installed into a fresh virtual environment (.venv-X) with no Rust
# toolchain on PATH; the checkout's python/ is never on sys.path
# (tests/integration/test_installed_wheel.py checks where bale came from).
#
# The Dask, Ray and benchmark smoke tests, and the latency benchmark's test
# (it needs the bench extra), run on 3.11 only (make test).
#
# Usage: .ci/test-python.sh VERSION [pytest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:?usage: .ci/test-python.sh VERSION [pytest args]}"
shift
py=".pythons/$version/bin/python3"
if [ ! -x "$py" ]; then
    [ ! -e /etc/bale-pythons-chroot ] || { echo "$py is not there inside the chroot" >&2; exit 1; }
    .ci/pythons.sh "$version"
fi

# An interpreter that lives in a chroot (see .ci/pythons.sh) runs this
# whole job in it: the wheel is built and tested against its own libc.
if [ -x ".pythons/$version/bin/in-chroot" ] && [ ! -e /etc/bale-pythons-chroot ]; then
    exec ".pythons/$version/bin/in-chroot" /bin/bash .ci/test-python.sh "$version" "$@"
fi

# maturin (a Rust program from PyPI) in a venv of its own, made with the
# python3 on PATH; it builds for whichever interpreter -i names. A sid
# chroot (minbase) has no python3, only python3.X: that one then.
tools=.venv-tools
if [ ! -x "$tools/bin/maturin" ]; then
    rm -rf "$tools"
    tools_python="${PYTHON:-python3}"
    command -v "$tools_python" >/dev/null 2>&1 || tools_python="python$version"
    "$tools_python" -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2"
fi

# A chroot's build has its own target directory: build scripts made there
# link against its libc.
target=target-py
[ -e /etc/bale-pythons-chroot ] && target=target-py-chroot
out="dist-py/$version"
rm -rf "$out"
echo "--- building the wheel for $("$py" -c 'import sys; print(sys.version.split()[0], "free-threaded" if not getattr(sys, "_is_gil_enabled", lambda: True)() or __import__("sysconfig").get_config_var("Py_GIL_DISABLED") else "")')"
# A release build without fat LTO: the same code and checks as users' wheels,
# built in a third of the time (six of them per CI run); `make build` and
# published wheels keep the workspace's LTO profile.
CARGO_PROFILE_RELEASE_LTO="${CARGO_PROFILE_RELEASE_LTO:-off}" \
CARGO_PROFILE_RELEASE_CODEGEN_UNITS="${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:-16}" \
CARGO_TARGET_DIR="$target" "$tools/bin/maturin" build --release --quiet -i "$py" --out "$out"
wheel="$(ls "$out"/*.whl)"
echo "--- built $(basename "$wheel")"

# From here on, no Rust: cargo, rustc and rustup leave PATH.
clean_path=""
IFS=: read -r -a dirs <<< "$PATH"
for d in "${dirs[@]}"; do
    [ -x "$d/cargo" ] || [ -x "$d/rustc" ] || [ -x "$d/rustup" ] || clean_path="${clean_path:+$clean_path:}$d"
done
export PATH="$clean_path"
if command -v cargo >/dev/null 2>&1 || command -v rustc >/dev/null 2>&1; then
    echo "a Rust toolchain is still on PATH" >&2
    exit 1
fi

venv=".venv-$version"
rm -rf "$venv"
"$py" -m venv "$venv"
# msgspec beside the test extra, as make test-debug does: the stub test
# type-checks bale.cli, which imports it.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel[test]" "msgspec>=0.18"

# pytest runs in the checkout (the tests read tests/vectors, examples,
# README.md), through the venv's pytest script: unlike `python -m pytest`
# it does not put the current directory on sys.path, and pytest itself
# adds only tests/ and its group folders (tests/conftest.py puts tests/
# there for the helper modules), never python/.
export BALE_TEST_INSTALLED_WHEEL="$wheel"
status=0
# Spread over TEST_WORKERS processes (pytest-xdist): the suite runs once
# per interpreter, and CI must end well within its 90 minutes.
"$venv/bin/pytest" -q -p no:cacheprovider -n "${TEST_WORKERS:-2}" \
    --ignore=tests/integration/test_dask.py --ignore=tests/integration/test_ray.py --ignore=tests/integration/test_benchmarks_smoke.py \
    --deselect=tests/integration/test_examples.py::test_latency_benchmark_runs_end_to_end_on_small_trees \
    --durations=5 \
    "$@" || status=$?
exit $status
