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

# ---------------------------------------------------------------------------
# Tools run by CI (.ci/run): fuzzers, the debug-interpreter run.
# Their tools live outside the clone (cargo-fuzz in ~/.cargo/bin, the nightly
# toolchain in rustup's home, python3.11-dbg from apt); only their build
# output and working corpora are inside it (git-ignored).
# ---------------------------------------------------------------------------

.PHONY: fuzz-core fuzz-binding test-debug test-ci

FUZZ_SECONDS ?= 120
# libFuzzer options shared by both fuzzers: one input may take 30 s at most
# (a hang is a finding), final statistics printed.
FUZZ_FLAGS = -max_total_time=$(FUZZ_SECONDS) -timeout=30 -print_final_stats=1

# cargo fuzz target on bale-core: load -> verify -> full read -> to_json,
# with a mutator that repairs the header, length and checksum. New inputs go
# to fuzz/corpus (ignored by git); the committed seeds are fuzz/seeds; a crash
# is saved under fuzz/artifacts/ and fails the target.
fuzz-core:
	rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
	mkdir -p crates/bale-core/fuzz/corpus/load_verify_read
	cd crates/bale-core && cargo +nightly fuzz run --debug-assertions load_verify_read \
		fuzz/corpus/load_verify_read fuzz/seeds -- $(FUZZ_FLAGS)
