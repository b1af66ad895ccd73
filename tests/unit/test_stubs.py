"""The .pyi stubs describe the installed module exactly (mypy's stubtest)."""

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mypy")

ALLOWLIST = pathlib.Path(__file__).resolve().parents[1] / "stubtest_allowlist.txt"


# Entries that hold only before CPython 3.12: from 3.12 on, the buffer
# protocol's __buffer__ / __release_buffer__ exist at runtime, and stubtest
# counts an allowlist entry that matches nothing as an error.
BEFORE_3_12 = ("__buffer__", "__release_buffer__")


def allowlist_for_this_python(tmp_path):
    lines = ALLOWLIST.read_text().splitlines()
    if sys.version_info >= (3, 12):
        lines = [line for line in lines if not line.endswith(BEFORE_3_12)]
    path = tmp_path / "allowlist.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_stubs_match_the_runtime(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "bale", "--allowlist", str(allowlist_for_this_python(tmp_path))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_version_is_written_in_one_place():
    import importlib.metadata
    import pathlib
    import re

    import bale

    cargo = (pathlib.Path(__file__).resolve().parents[2] / "Cargo.toml").read_text()
    workspace = re.search(r'^\[workspace\.package\]\s*\nversion = "([^"]+)"', cargo, re.M).group(1)
    assert bale.__version__ == bale._bale.__version__ == importlib.metadata.version("bale") == workspace
