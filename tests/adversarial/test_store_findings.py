"""The store's attack review (tests/store_findings/NN_*.py): each script
once showed a bug of bale.Store (or checks an attack that never worked) and
exits 0 when the behaviour is right. Each runs in its own interpreter."""

import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parents[1] / "store_findings"
SCRIPTS = sorted(HERE.glob("[0-9][0-9]_*.py"))
# Arguments that keep the harnesses short in the suite (their defaults run longer).
ARGS = {"16": ["3"]}
# Known limits, documented in docs/STORE.md: a strict xfail notices a fix.
LIMITS = {"42": "reclaim() and verify() hold O(keys) Python objects (about 150-320 bytes per key)"}


PARAMS = [
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=LIMITS[p.name[:2]])) if p.name[:2] in LIMITS else p
    for p in SCRIPTS
]


@pytest.mark.parametrize("script", PARAMS, ids=[p.stem for p in SCRIPTS])
def test_store_finding_stays_fixed(script):
    number = script.name[:2]
    p = subprocess.run(
        [sys.executable, str(script), *ARGS.get(number, [])], cwd=HERE, capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, f"{script.name} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"


def test_every_finding_is_here():
    assert len(SCRIPTS) == 44
