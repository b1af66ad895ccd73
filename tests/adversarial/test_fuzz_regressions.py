"""Inputs the fuzzers found, replayed: each must now pass the harness.

Every crash input ``make fuzz-binding`` finds is committed under
``regressions/`` (named after what it showed); this test replays each one
through the harness's own checks (``fuzz_binding.one_input``: load with and
without verify, full traversal, only the allowed exceptions), in a child
process so that a crash fails the test instead of killing pytest. The seeds
are replayed too: they are valid regions and must pass.
"""

import decimal
import fractions
import pathlib
import signal
import subprocess
import sys

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bale

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
    fuzz_binding = _harness()
    for verified in (True, False):
        walk = fuzz_binding.Walk(verified=verified)
        assert walk.g(repr, 10**4400) is fuzz_binding._MISSING

        def other():
            raise ValueError("something else")

        with pytest.raises(ValueError, match="something else"):
            walk.g(other)


# Values of the kinds whose native operations raise on their own (a
# signaling NaN decimal's ==, repr of an int past the digit limit, == of
# empty numpy arrays): valid regions of them must pass the harness, or a
# fuzzer that meets one reports a finding that is none (the harness, not
# bale, would be wrong).
_odd_scalars = st.one_of(
    st.decimals(allow_nan=True, allow_infinity=True),
    st.sampled_from(["sNaN", "-sNaN7", "NaN", "-Infinity", "1E+999999999", "-0E-999999999"]).map(decimal.Decimal),
    # (Made by the strategy: hypothesis shows a strategy's constants with repr.)
    st.integers(4290, 4400).map(lambda digits: -(10**digits)),
    st.integers(4290, 4400).map(lambda digits: fractions.Fraction(10**digits, 3)),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.sampled_from([(0,), (0, 3), (2, 0), (3,)]).map(lambda shape: numpy.zeros(shape)),
)
_odd_values = st.recursive(
    _odd_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=5).map(tuple),
        st.dictionaries(st.text(max_size=3), inner, max_size=5),
        # Lists of dicts of one or several key sequences: tables.
        st.lists(st.fixed_dictionaries({"a": inner}, optional={"b": inner}), min_size=2, max_size=6),
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_odd_values)
def test_valid_regions_of_values_whose_native_operations_raise_pass_the_harness(value):
    fuzz_binding = _harness()
    for share in (False, True):
        fuzz_binding.one_input(bytes(bale.compact(value, share=share)))


def _harness():
    sys.path.insert(0, str(HERE.parent))
    try:
        from adversarial import fuzz_binding
    finally:
        sys.path.remove(str(HERE.parent))
    fuzz_binding._import_bale()
    return fuzz_binding
