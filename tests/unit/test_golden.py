"""Golden vectors: the bytes of tests/vectors/*.bale pin format version 1.

Each vector is written by the Rust core's Builder (crates/bale-core/tests/
golden.rs). The Python compactor must produce exactly the same bytes for the
same value, and every vector must load, verify and read back as that value.
"""

import json
import math
import pathlib
from array import array
from datetime import date, datetime, time, timedelta, timezone
from collections import Counter, OrderedDict, defaultdict
from decimal import Decimal
from fractions import Fraction
from pathlib import PosixPath, PurePosixPath, PureWindowsPath
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest

import bale

VECTORS = pathlib.Path(__file__).resolve().parents[1] / "vectors"


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
    if isinstance(a, defaultdict) and a.default_factory is not b.default_factory:
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (datetime, time)):
        # Aware values compare by instant: also require the same zone and fold.
        return a == b and a.tzinfo == b.tzinfo and a.fold == b.fold and repr(a) == repr(b)
    if isinstance(a, Decimal):
        return str(a) == str(b)
    return a == b


# Names the Python expressions of vectors.json use.
EVAL_NAMES = {"inf": math.inf, "nan": math.nan, "date": date, "datetime": datetime, "time": time,
              "timedelta": timedelta, "timezone": timezone, "Decimal": Decimal, "UUID": UUID,
              "ZoneInfo": ZoneInfo, "array": array, "Fraction": Fraction, "PurePosixPath": PurePosixPath,
              "PosixPath": PosixPath, "PureWindowsPath": PureWindowsPath, "OrderedDict": OrderedDict,
              "Counter": Counter, "defaultdict": defaultdict}


CASES = _cases()


def test_vectors_exist():
    assert len(CASES) >= 10, "tests/vectors/vectors.json is missing or nearly empty"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_python_compactor_writes_the_golden_bytes(case):
    value = eval(case["python"], dict(EVAL_NAMES))
    golden = (VECTORS / f"{case['name']}.bale").read_bytes()
    assert bytes(bale.compact(value)) == golden


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_vector_reads_back(case):
    value = eval(case["python"], dict(EVAL_NAMES))
    region = bale.load((VECTORS / f"{case['name']}.bale").read_bytes(), verify=True)
    assert _same(bale.thaw(region.root), value)
