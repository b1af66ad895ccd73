"""The benchmark scripts keep working: each runs at its smallest size.

No timing is asserted here (benchmarks measure speed; tests do not); the
scripts' own consistency checks (same results from bale and the baselines,
every converted line present) must pass, and the report tables must come out.
"""

import pathlib
import subprocess
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize(
    "script, args, expect",
    [
        ("bench_growth.py", ["--quick"], "small update: append"),
        ("bench_tables.py", ["--quick"], "CNF Table 2: bytes"),
        ("bench_cli.py", ["--quick", "--gb", "0.01"], "every line present, in order"),
        ("bench_fresh.py", ["--quick", "--max-mb", "1"], "CNF Figures 7-8"),
    ],
)
def test_benchmark_script_runs(script, args, expect, tmp_path):
    p = subprocess.run(
        [sys.executable, str(BENCH / script), *args, "--no-report"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert expect in p.stdout
