"""The benchmark suite keeps working: every benchmark on tiny data, in one subprocess.

Runs ``benchmarks/run_all.py --smoke`` into a temporary report (about 20 s)
and checks the report's shape: the machine, the targets table, one section
per benchmark, and the plots it references. No timing is asserted: figures
on tiny data and a shared machine mean nothing.
"""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = [
    "Machine",
    "Targets",
    "This run",
    "Core operations on records",
    "Compaction of a binary tree (CNF Table 1, Figure 4)",
    "Sizes (CNF Table 2)",
    "Socket latency (CNF Table 3)",
    "Load all and read one record (CNF Figure 6)",
    "Garbage collection (CNF Figures 7-8)",
    "Key-value server (CNF Table 4)",
    "Tree traversals (packed-data Table 1)",
    "Vector of records (store's benchmark)",
    "Fork memory of many readers",
]

pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork benchmark reads /proc")


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    report = out / "REPORT.md"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run_all.py"), "--smoke",
                           "--report", str(report)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return report.read_text(), out


def test_every_benchmark_writes_its_section(smoke_report):
    text, _ = smoke_report
    titles = re.findall(r"^## (.+)$", text, flags=re.M)
    for title in SECTIONS:
        assert title in titles
    assert "FAILED" not in text


def test_targets_table_has_a_verdict_per_row(smoke_report):
    text, _ = smoke_report
    targets = text.split("## Targets", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in targets.splitlines() if line.startswith("| ") and not line.startswith("| target")]
    rows = [r for r in rows if not r.startswith("| ---")]
    assert len(rows) >= 10
    for row in rows:
        assert any(v in row for v in ("| met |", "| **NOT MET** |", "| not measured |")), row


def test_machine_is_described(smoke_report):
    text, _ = smoke_report
    for field in ("CPU", "cores", "RAM", "OS", "Python", "bale", "anchors"):
        assert f"- **{field}**:" in text


def test_plots_exist_and_are_pngs(smoke_report):
    text, out = smoke_report
    plots = re.findall(r"\]\(plots/([^)]+\.png)\)", text)
    assert len(plots) >= 8
    for name in plots:
        with open(out / "plots" / name, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
