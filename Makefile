# The two entry points of the README: `make demo` and `make test`.
# Everything installs into .venv, so a fresh clone needs only python3 and cargo.
#
# `pip install .` builds in-tree (pip >= 21.3) with maturin in release mode,
# so cargo reuses target/: a re-run with no Rust change only repackages the
# wheel (seconds, not minutes).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check

.PHONY: demo test build

# Create the virtual environment once. Its bundled pip is upgraded only when
# it is too old to build a PEP 517 project in-tree.
$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -c 'import sys, pip; sys.exit(int(pip.__version__.split(".")[0]) < 22)' \
		|| $(PY) -m pip install --quiet --upgrade pip

# Release build of the Rust extension, installed (not editable) with the
# test, bench, dask and ray extras (the tests start real Dask and Ray clusters).
build: $(PY)
	$(PIP) ".[test,bench,dask,ray]"

demo: $(PY)
	$(PIP) ".[bench]"
	$(PY) -m bale demo

# The core's tests run with debug assertions but opt-level 1: its fuzz and
# verification tests are ~10x faster than at opt-level 0, and the build is
# far quicker than a release (fat LTO) one.
test: build
	CARGO_PROFILE_DEV_OPT_LEVEL=1 cargo test --workspace --exclude bale-python
	$(PY) -m pytest -q
