# The two entry points of the README: `make demo` and `make test`.
# Everything installs into .venv, so a fresh clone needs only python3 and cargo.

VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test build

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Release build of the Rust extension, installed with the test and bench extras.
build: $(PY)
	$(PY) -m pip install --quiet ".[test,bench]"

demo: build
	$(PY) -m bale demo

test: build
	cargo test --release -p bale-core
	$(PY) -m pytest -q
