"""Golden vectors: the bytes of tests/vectors/*.bale pin format version 1.

Each vector is written by the Rust core's Builder (crates/bale-core/tests/
golden.rs). The Python compactor must produce exactly the same bytes for the
same value, and every vector must load, verify and read back as that value.
"""

import json
import math
import pathlib

import pytest

import bale

VECTORS = pathlib.Path(__file__).parent / "vectors"


def _cases():
    manifest = VECTORS / "vectors.json"
    if not manifest.exists():
        return []
    return json.loads(manifest.read_text())


def _same(a, b):
    """Equality with identical types at every level and floats by bit pattern."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and (a == b or (a != a and b != b))
    if isinstance(a, complex):
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


CASES = _cases()


def test_vectors_exist():
    assert len(CASES) >= 10, "tests/vectors/vectors.json is missing or nearly empty"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_python_compactor_writes_the_golden_bytes(case):
    value = eval(case["python"], {"inf": math.inf, "nan": math.nan})
    golden = (VECTORS / f"{case['name']}.bale").read_bytes()
    assert bytes(bale.compact(value)) == golden


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_vector_reads_back(case):
    value = eval(case["python"], {"inf": math.inf, "nan": math.nan})
    region = bale.load((VECTORS / f"{case['name']}.bale").read_bytes(), verify=True)
    assert _same(bale.thaw(region.root), value)
