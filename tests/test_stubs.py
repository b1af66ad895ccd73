"""The .pyi stubs describe the installed module exactly (mypy's stubtest)."""

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mypy")

ALLOWLIST = pathlib.Path(__file__).with_name("stubtest_allowlist.txt")


def test_stubs_match_the_runtime(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "bale", "--allowlist", str(ALLOWLIST)],
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

    cargo = (pathlib.Path(__file__).parent.parent / "Cargo.toml").read_text()
    workspace = re.search(r'^\[workspace\.package\]\s*\nversion = "([^"]+)"', cargo, re.M).group(1)
    assert bale.__version__ == bale._bale.__version__ == importlib.metadata.version("bale") == workspace
