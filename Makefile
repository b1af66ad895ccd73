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
# far quicker than a release (fat LTO) one. bale-python's own Rust tests
# cover its pure-Rust parts (address_map, files); the rest of it is tested
# through Python.
test: build
	CARGO_PROFILE_DEV_OPT_LEVEL=1 cargo test --workspace --exclude bale-python
	CARGO_PROFILE_DEV_OPT_LEVEL=1 cargo test -p bale-python --lib
	$(PY) -m pytest -q

# ---------------------------------------------------------------------------
# Tools run by CI (.ci/run): fuzzers, the debug-interpreter run.
# Their tools live outside the clone (cargo-fuzz in ~/.cargo/bin, the nightly
# toolchain in rustup's home, python3.11-dbg from apt); only their build
# output and working corpora are inside it (git-ignored).
# ---------------------------------------------------------------------------

.PHONY: fuzz-core fuzz-binding test-debug test-no-fast-paths test-ci

# Rust hygiene, run by CI: formatting (rustfmt.toml) and clippy with every
# warning an error, on all targets of the workspace.
.PHONY: lint
lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

FUZZ_SECONDS ?= 120
# libFuzzer options shared by both fuzzers: one input may take 30 s at most
# (a hang is a finding), final statistics printed.
FUZZ_FLAGS = -max_total_time=$(FUZZ_SECONDS) -timeout=30 -print_final_stats=1

# cargo fuzz target on bale-core: load -> verify -> full read -> to_json,
# with a mutator that repairs the header, length and checksum. New inputs go
# to fuzz/corpus (ignored by git); the committed seeds are fuzz/seeds; a crash
# is saved under fuzz/artifacts/ and fails the target; once understood it is
# committed under fuzz/regressions/ (replayed by every run). Then, for as
# long again, the target json_region: any bytes as JSON text through the
# core's JSON source (the region must verify, and JSON -> region -> JSON ->
# region must give the same bytes); its seeds are fuzz/seeds_json. At the
# end each finding is replayed and its input printed on one line (zlib, then
# base64): a CI log kept only by its tail still holds it.
CORE_ARTIFACTS := $(CURDIR)/crates/bale-core/fuzz/artifacts/
CORE_FUZZER = crates/bale-core/fuzz/target/$(HOST_TRIPLE)/release/load_verify_read
JSON_FUZZER = crates/bale-core/fuzz/target/$(HOST_TRIPLE)/release/json_region
fuzz-core:
	rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
	cd crates/bale-core && cargo +nightly fuzz build --debug-assertions load_verify_read
	cd crates/bale-core && cargo +nightly fuzz build --debug-assertions json_region
	rm -rf $(CORE_ARTIFACTS)
	mkdir -p $(CORE_ARTIFACTS) crates/bale-core/fuzz/corpus/load_verify_read crates/bale-core/fuzz/corpus/json_region
	# The inputs found before (fuzz/regressions) are replayed first. Fork mode
	# with -ignore_crashes keeps fuzzing for the whole time box after a
	# finding; the target fails if any input was saved under fuzz/artifacts.
	# (The fuzzer is run directly: through `cargo fuzz run`, fork mode also
	# wrote corpus entries into the artifact directory.)
	status=0; \
	$(CORE_FUZZER) crates/bale-core/fuzz/regressions/* || status=1; \
	$(CORE_FUZZER) -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -artifact_prefix=$(CORE_ARTIFACTS)load_verify_read- \
		$(FUZZ_FLAGS) crates/bale-core/fuzz/corpus/load_verify_read crates/bale-core/fuzz/seeds || status=1; \
	$(JSON_FUZZER) -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -artifact_prefix=$(CORE_ARTIFACTS)json_region- \
		$(FUZZ_FLAGS) crates/bale-core/fuzz/corpus/json_region crates/bale-core/fuzz/seeds_json || status=1; \
	if [ -n "$$(ls $(CORE_ARTIFACTS))" ]; then \
		for f in $(CORE_ARTIFACTS)*; do \
			fuzzer=$(CORE_FUZZER); case "$$f" in *json_region-*) fuzzer=$(JSON_FUZZER);; esac; \
			echo "fuzz-core: finding $$f, replayed by $$(basename $$fuzzer):"; \
			$$fuzzer -runs=1 $$f 2>&1 | grep -v '^INFO:\|^\*\*\*' | tail -25 | sed 's/^/    /'; \
			echo "fuzz-core: its input, zlib then base64: $$($(PY) -c 'import base64,sys,zlib; print(base64.b64encode(zlib.compress(open(sys.argv[1],"rb").read(),9)).decode())' $$f)"; \
		done; \
		echo "fuzz-core: $$(ls $(CORE_ARTIFACTS) | wc -l) failing input(s) saved in $(CORE_ARTIFACTS)"; status=1; fi; \
	exit $$status

# atheris harness through the binding (tests/adversarial/fuzz_binding.py).
# atheris comes from PyPI as a wheel; where none fits, pip builds it, which
# needs clang (installed with apt-get when missing). The fuzzed copy of bale
# is built apart (target-fuzz, installed into build-fuzz/site) with
# SanitizerCoverage, so that libFuzzer sees the Rust code's coverage, and
# with debug assertions; .venv keeps its release build.
FUZZ_SITE := build-fuzz/site
HOST_TRIPLE = $(shell rustc -vV | sed -n 's/^host: //p')
SANCOV_RUSTFLAGS := -C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=4 \
	-C llvm-args=-sanitizer-coverage-inline-8bit-counters -C llvm-args=-sanitizer-coverage-pc-table \
	-C llvm-args=-sanitizer-coverage-trace-compares -C debug-assertions=on

fuzz-binding: $(PY)
	$(PIP) ".[fuzz]" || { command -v clang >/dev/null 2>&1 || { apt-get update && apt-get install -y clang; }; $(PIP) ".[fuzz]"; }
	rm -rf $(FUZZ_SITE)
	# An explicit --target keeps RUSTFLAGS off build scripts and proc macros.
	env CARGO_BUILD_TARGET=$(HOST_TRIPLE) CARGO_TARGET_DIR=target-fuzz RUSTFLAGS="$(SANCOV_RUSTFLAGS)" \
		CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=0 \
		$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --target $(FUZZ_SITE) .
	rm -rf tests/adversarial/artifacts
	mkdir -p tests/adversarial/corpus tests/adversarial/artifacts
	BALE_FUZZ_SITE=$(FUZZ_SITE) $(PY) tests/adversarial/fuzz_binding.py tests/adversarial/corpus tests/adversarial/seeds \
		$(FUZZ_FLAGS) -artifact_prefix=tests/adversarial/artifacts/

# The Python suite under Debian's debug interpreter (python3.11-dbg) with
# dev mode, against a build with Rust debug assertions and overflow checks
# (release profile at opt-level 1, no LTO: quick to build, fast enough to
# run; own target dir, so the release build in target/ stays). Left out:
# the Dask, Ray and benchmark smoke tests, the latency benchmark (it needs
# the bench extras) and the fork-memory test (it generates 3.7 million
# records first: over ten minutes under the debug interpreter); they test no
# bale code the rest does not. msgspec is installed beside the test extra:
# the stub test type-checks bale.cli, which imports it.
DBG_PYTHON ?= python3.11-dbg
VENV_DBG := .venv-dbg
PY_DBG := $(VENV_DBG)/bin/python
HEAVY_TESTS := --ignore=tests/integration/test_dask.py --ignore=tests/integration/test_ray.py --ignore=tests/integration/test_benchmarks_smoke.py \
	--ignore=tests/integration/test_fork_memory.py \
	--deselect=tests/integration/test_examples.py::test_latency_benchmark_runs_end_to_end_on_small_trees

$(PY_DBG):
	command -v $(DBG_PYTHON) >/dev/null 2>&1 || { apt-get update && apt-get install -y python3.11-dbg python3.11-venv; }
	$(DBG_PYTHON) -m venv $(VENV_DBG)

# The repeat runs of the suite (debug, no fast paths, each CPython) spread
# over TEST_WORKERS processes (pytest-xdist); `make test`, which also starts
# Dask and Ray clusters, stays in one.
TEST_WORKERS ?= 2

# Dev mode by environment (PYTHONDEVMODE=1, not -X dev), so that the worker
# processes have it too.
test-debug: $(PY_DBG)
	env CARGO_TARGET_DIR=target-dbg CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
		CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
		$(PY_DBG) -m pip install --quiet --disable-pip-version-check ".[test]" "msgspec>=0.18"
	PYTHONDEVMODE=1 $(PY_DBG) -m pytest -q -n $(TEST_WORKERS) $(HEAVY_TESTS)

# The suite once more with every reading of CPython's private layouts off
# (BALE_NO_FAST_PATHS=1), so the public C-API paths stay tested too.
test-no-fast-paths: build
	BALE_NO_FAST_PATHS=1 $(PY) -m pytest -q -n $(TEST_WORKERS) $(HEAVY_TESTS)

# ---------------------------------------------------------------------------
# Every CPython CI tests (issue 18): the interpreters, and the suite on each
# against a wheel built for it.
# ---------------------------------------------------------------------------

.PHONY: pythons test-py layout-by-version

# `make pythons` links the pyenv builds (3.10-3.13) and provides 3.14 and the
# free-threaded 3.14t from Debian (see .ci/pythons.sh) as .pythons/X/bin/python3.
PY_VERSIONS ?= 3.10 3.11 3.12 3.13 3.14 3.14t
pythons:
	.ci/pythons.sh $(PY_VERSIONS)

# `make test-py PY_VERSION=X`: maturin builds a release wheel for .pythons/X,
# which is installed into a fresh .venv-X (no Rust on PATH) with the test
# extra; pytest then runs on it, without the Dask, Ray and benchmark smoke
# tests (make test runs those, on 3.11). See .ci/test-python.sh.
PY_VERSION ?= 3.12
test-py:
	TEST_WORKERS=$(TEST_WORKERS) .ci/test-python.sh $(PY_VERSION)

# bale._bale._layout_checks() of each .venv-X made by test-py.
layout-by-version:
	$(PYTHON) benchmarks/layout_by_version.py $(PY_VERSIONS)

# What CI runs (.ci/run): make test, the debug run, the no-fast-paths run,
# both fuzzers time-boxed, and the suite on each CPython of PY_VERSIONS.
test-ci:
	.ci/run
