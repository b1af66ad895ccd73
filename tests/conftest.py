"""Shared fixtures for bale's tests."""

import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

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
