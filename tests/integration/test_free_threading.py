"""bale on free-threaded CPython (3.13t, 3.14t): honest about needing the GIL.

The extension declares `gil_used = true`: its hot paths keep state that only
the GIL makes safe to share (see crates/bale-python/src/attached.rs). On a
free-threaded build, importing bale must therefore turn the GIL back on with
CPython's RuntimeWarning, not run without it, and not crash.
"""

import subprocess
import sys
import sysconfig

import pytest

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _run(code, *args, env_extra=None):
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, *args, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


IMPORT_AND_USE = """
import sys
before = sys._is_gil_enabled()
import bale
after = sys._is_gil_enabled()
region = bale.compact({"a": [1, 2, 3], "b": "text"})
assert bale.thaw(region.root) == {"a": [1, 2, 3], "b": "text"}
print(before, after)
"""


@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded CPython build (Py_GIL_DISABLED)")
def test_import_on_free_threaded_build_reenables_the_gil_with_a_warning():
    done = _run(IMPORT_AND_USE, "-W", "default")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
    assert "RuntimeWarning" in done.stderr
    assert "GIL" in done.stderr
    assert "bale._bale" in done.stderr


@pytest.mark.skipif(FREE_THREADED, reason="the build has the GIL: checked on GIL builds only")
def test_import_on_gil_build_warns_nothing():
    done = _run("import bale; print('ok')", "-W", "error")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    if hasattr(sys, "_is_gil_enabled"):
        assert sys._is_gil_enabled()
