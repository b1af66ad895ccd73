"""Shared fixtures for bale's tests."""

import contextlib
import gc
import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

TESTS_DIR = pathlib.Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent

# The tests live in tests/unit, tests/integration and tests/adversarial; the
# helper modules they import by name (_bale_testlib, _fuzz_child,
# _store_child, this conftest) stay here, in tests/.
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

# Real JSON corpora live beside the repository, never inside it.
JSON_CORPUS_DIR = REPO_ROOT.parent / "shared" / "data" / "json"


def json_corpus_files():
    """The corpus files (sorted), or [] when the corpus is not there."""
    if not JSON_CORPUS_DIR.is_dir():
        return []
    return sorted(
        p for p in JSON_CORPUS_DIR.iterdir() if p.suffix in (".json", ".ndjson") and p.is_file()
    )


@pytest.fixture(scope="session")
def json_corpus():
    """Path of ``../shared/data/json`` relative to the repository root."""
    if not JSON_CORPUS_DIR.is_dir() or not json_corpus_files():
        pytest.skip(f"JSON corpus not found at {JSON_CORPUS_DIR}")
    return JSON_CORPUS_DIR


@contextlib.contextmanager
def mounted_tmpfs(size: str):
    """A tmpfs of ``size`` (mount's syntax: ``1m``) mounted for a test that
    fills a file system up; skips when this process may not mount one."""
    if not sys.platform.startswith("linux"):
        pytest.skip("tmpfs is Linux's")
    where = tempfile.mkdtemp(prefix="bale-tmpfs-")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", where], capture_output=True, text=True)
    if p.returncode != 0:
        os.rmdir(where)
        pytest.skip(f"cannot mount a {size} tmpfs to fill up (mount: {p.stderr.strip() or p.returncode}); ENOSPC untested")
    try:
        yield where
    finally:
        gc.collect()  # mappings of files there, held by tracebacks
        if subprocess.run(["umount", where]).returncode != 0:
            subprocess.run(["umount", "-l", where], check=True)
        os.rmdir(where)
