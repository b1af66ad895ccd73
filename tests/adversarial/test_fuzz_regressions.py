"""Inputs the fuzzers found, replayed: each must now pass the harness.

Every crash input ``make fuzz-binding`` finds is committed under
``regressions/`` (named after what it showed); this test replays each one
through the harness's own checks (``fuzz_binding.one_input``: load with and
without verify, full traversal, only the allowed exceptions), in a child
process so that a crash fails the test instead of killing pytest. The seeds
are replayed too: they are valid regions and must pass.
"""

import pathlib
import signal
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REGRESSIONS = sorted((HERE / "regressions").glob("*"))
SEEDS = sorted((HERE / "seeds").glob("*"))

REPLAY = """
import sys
sys.path.insert(0, {tests!r})
from adversarial import fuzz_binding
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        fuzz_binding.one_input(f.read())
"""


def replay(*paths):
    code = REPLAY.format(tests=str(HERE.parent))
    proc = subprocess.run([sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True, timeout=300)
    if proc.returncode < 0:
        pytest.fail(f"killed by {signal.Signals(-proc.returncode).name}\n{proc.stderr[-3000:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.name for p in REGRESSIONS])
def test_regression_input(path):
    replay(path)


def test_seeds_pass_the_harness():
    replay(*SEEDS)


def test_the_harness_fails_on_a_value_error_native_values_do_not_raise():
    """The harness lets through the ValueError of ``repr`` of an int past the
    interpreter's digit limit (the regression input above holds one), and
    only that one: another ValueError is still a finding."""
    sys.path.insert(0, str(HERE.parent))
    try:
        from adversarial import fuzz_binding
    finally:
        sys.path.remove(str(HERE.parent))
    fuzz_binding._import_bale()
    for verified in (True, False):
        walk = fuzz_binding.Walk(verified=verified)
        assert walk.g(repr, 10**4400) is fuzz_binding._MISSING

        def other():
            raise ValueError("something else")

        with pytest.raises(ValueError, match="something else"):
            walk.g(other)
