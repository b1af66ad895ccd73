"""The attack review's findings (tests/findings/review_NN.py), each a script
that once crashed bale or made it return wrong data or the wrong exception.

Each runs in its own interpreter. It passes when the script ends normally,
or ends by one of bale's own clean errors (CompactError, FormatError,
ThawError) escaping: a refusal is a fixed finding, a signal never is."""

import pathlib
import subprocess
import sys

import pytest

FINDINGS = sorted((pathlib.Path(__file__).resolve().parents[1] / "findings").glob("review_*.py"))
CLEAN = ("bale.CompactError:", "bale.FormatError:", "bale.ThawError:")


@pytest.mark.parametrize("script", FINDINGS, ids=[p.stem for p in FINDINGS])
def test_finding_stays_fixed(script):
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert p.returncode >= 0, f"{script.name} died by signal {-p.returncode}: {p.stderr[-2000:]}"
    if p.returncode != 0:
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        assert last.startswith(CLEAN), f"{script.name} exited {p.returncode}: {p.stderr[-2000:]}"


def test_every_finding_is_here():
    assert len(FINDINGS) == 17
