"""bale under test is the installed wheel, not the checkout (make test-py).

`.ci/test-python.sh` builds a wheel for one interpreter, installs it into a
fresh venv with no Rust toolchain on PATH and sets BALE_TEST_INSTALLED_WHEEL
to the wheel's path; these tests then check that the suite really runs
against that installation. Elsewhere (make test, an editable build) they
are skipped.
"""

import importlib.metadata
import os
import pathlib
import shutil
import sys
import sysconfig

import pytest

import bale

WHEEL = os.environ.get("BALE_TEST_INSTALLED_WHEEL")
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not WHEEL, reason="only under make test-py (BALE_TEST_INSTALLED_WHEEL unset)")


def _under(path, directory):
    path = pathlib.Path(path).resolve()
    directory = pathlib.Path(directory).resolve()
    return path == directory or directory in path.parents


def test_bale_and_its_extension_come_from_site_packages():
    site = sysconfig.get_paths()["platlib"]
    assert _under(bale.__file__, site), bale.__file__
    assert _under(bale._bale.__file__, site), bale._bale.__file__
    assert not _under(bale.__file__, REPO_ROOT / "python")
    assert str(REPO_ROOT / "python") not in [str(pathlib.Path(p).resolve()) for p in sys.path if p]


def test_installed_distribution_is_the_wheel_for_this_interpreter():
    name = pathlib.Path(WHEEL).name
    dist_name, version, python_tag, abi_tag, platform_tag = name[: -len(".whl")].split("-")
    assert dist_name == "bale"
    assert importlib.metadata.version("bale") == version
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    expected = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert python_tag == expected
    assert abi_tag == expected + ("t" if free_threaded else "")
    # The wheel maturin built passes its manylinux (auditwheel) check.
    assert platform_tag.startswith("manylinux"), platform_tag
    # The extension module the wheel installed is the one imported.
    files = importlib.metadata.files("bale")
    installed = {pathlib.Path(f.locate()).resolve() for f in files}
    assert pathlib.Path(bale._bale.__file__).resolve() in installed


def test_no_rust_toolchain_is_on_path():
    for tool in ("cargo", "rustc", "rustup"):
        assert shutil.which(tool) is None, f"{tool} is on PATH: {shutil.which(tool)}"
