"""The benchmark suite keeps working: every benchmark at its smallest size, in one subprocess.

Runs ``benchmarks/run_all.py --smoke`` as a user would, with no ``--report``
(about 30 s on 2 cores): a smoke run writes its report to
``$TMPDIR/bale-bench-smoke/`` (TMPDIR is the test's folder here), and must
leave every tracked file alone (``git status --porcelain benchmarks/`` is the
same before and after, and the committed report, JSON and plots are
byte-identical). Then checks the report's shape: the machine, the targets
table, one section per benchmark with its tables, the plots it references. Each script checks its own results (bale against the baselines:
same records, same sums, every converted line present) and exits non-zero
when they disagree, which the suite reports as a failure. No timing is
asserted: figures on tiny data and a shared machine mean nothing.
"""

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "benchmarks")
HAS_RAY = importlib.util.find_spec("ray") is not None
# benchmark name in the run table -> the section it writes
SECTIONS = {
    "core": "Core operations on records",
    "table1": "Compaction of a binary tree (CNF Table 1, Figure 4)",
    "sizes": "Sizes (CNF Table 2)",
    "latency": "Socket latency (CNF Table 3)",
    "load_read": "Load all and read one record (CNF Figure 6)",
    "gc": "Garbage collection (CNF Figures 7-8)",
    "kv": "Key-value server (CNF Table 4)",
    "packed": "Tree traversals (packed-data Table 1)",
    "store": "Vector of records (store's benchmark)",
    "fork": "Fork memory of many readers",
    "foundation": "Foundation",
    "growth": "Growing regions",
    "cli": "Command line and native paths",
    "typed": "Typed values and records",
    "heap": "The store (bale.Store)",
    **({"ray": "Ray object store"} if HAS_RAY else {}),
    "sweep": "Shape sweep",
}

pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork benchmark reads /proc")


def _fingerprint() -> dict[str, str]:
    """Hashes of the committed report, its JSON and plots: a smoke run must not touch them."""
    paths = [os.path.join(BENCH, "REPORT.md"), os.path.join(BENCH, "REPORT.json")]
    plots = os.path.join(BENCH, "plots")
    if os.path.isdir(plots):
        paths += [os.path.join(plots, name) for name in sorted(os.listdir(plots))]
    out = {}
    for path in paths:
        if os.path.exists(path):
            with open(path, "rb") as f:
                out[path] = hashlib.sha256(f.read()).hexdigest()
    return out


def _git_status() -> str | None:
    """``git status --porcelain benchmarks/`` in the checkout, or None outside one."""
    if shutil.which("git") is None:
        return None
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "benchmarks/"],
                         capture_output=True, text=True, cwd=ROOT)
    return out.stdout if out.returncode == 0 else None


def _user_env(tmp) -> dict[str, str]:
    """The environment of a user's shell: no report named; temporary files in ``tmp``."""
    env = {k: v for k, v in os.environ.items() if k != "BALE_BENCH_REPORT"}
    env["TMPDIR"] = str(tmp)
    return env


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    before, status = _fingerprint(), _git_status()
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "run_all.py"), "--smoke"],
                          capture_output=True, text=True, timeout=180, env=_user_env(out), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _git_status() == status, "the smoke run changed tracked files in benchmarks/ (git status)"
    assert _fingerprint() == before, "the smoke run changed benchmarks/REPORT.md, REPORT.json or plots/"
    report = out / "bale-bench-smoke" / "REPORT.md"
    assert f"wrote {report}" in proc.stdout
    return report.read_text(), report.parent


def test_smoke_and_quick_runs_refuse_to_write_the_committed_report(tmp_path):
    committed = os.path.join(BENCH, "REPORT.md")
    for mode in ("--smoke", "--quick"):
        for args, env in (([mode, "--report", committed], {}), ([mode], {"BALE_BENCH_REPORT": committed})):
            before = _fingerprint()
            proc = subprocess.run([sys.executable, os.path.join(BENCH, "run_all.py"), *args],
                                  capture_output=True, text=True, timeout=60, env={**_user_env(tmp_path), **env})
            assert proc.returncode != 0 and "does not write the committed report" in proc.stderr, proc.stderr
            assert _fingerprint() == before


def _section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_every_benchmark_ran_and_passed_its_own_checks(smoke_report):
    text, _ = smoke_report
    run_table = _section(text, "This run")
    for name in SECTIONS:
        row = next((line for line in run_table.splitlines() if line.startswith(f"| {name} |")), None)
        assert row is not None, f"{name} is not in the run table"
        assert "| smoke |" in row and row.endswith("| ok |"), row
    assert "FAILED" not in text


def test_every_benchmark_writes_its_section_with_a_table(smoke_report):
    text, _ = smoke_report
    titles = re.findall(r"^## (.+)$", text, flags=re.M)
    for title in ("Machine", "Targets", "This run", *SECTIONS.values()):
        assert titles.count(title) == 1, title
    for title in SECTIONS.values():
        body = _section(text, title)
        assert "--smoke" in body, title  # names the command that reproduces it
        assert re.search(r"^\| ---", body, flags=re.M), f"{title}: no table"


def test_scripts_report_their_checked_results(smoke_report):
    text, _ = smoke_report
    assert "every line present, in order" in _section(text, "Command line and native paths")
    assert "growing-cache workload" in _section(text, "Garbage collection (CNF Figures 7-8)")
    assert "One field of a random record" in _section(text, "Vector of records (store's benchmark)")
    for op in ("sum", "eval", "right-most", "increment"):
        assert f"**{op}**" in _section(text, "Tree traversals (packed-data Table 1)")


def test_targets_table_has_a_verdict_per_row(smoke_report):
    text, _ = smoke_report
    targets = _section(text, "Targets")
    rows = [line for line in targets.splitlines() if line.startswith("| ") and not line.startswith("| target")]
    rows = [r for r in rows if not r.startswith("| ---")]
    assert len(rows) >= 10
    for row in rows:
        assert any(v in row for v in ("| met |", "| **NOT MET** |", "| not measured |")), row
    assert "socket end-to-end" in targets  # measured by bench_latency itself


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
    assert (out / "REPORT.json").exists()


def test_interleaved_comparison_runs():
    out = subprocess.run(
        [sys.executable, os.path.join(BENCH, "interleaved.py"), "--repeat", "1", "--records", "2000"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| compact") or line.startswith("| thaw")]
    assert len(rows) == 3 and all(line.rstrip().endswith("x |") for line in rows), out.stdout


def test_builds_compared_and_thaw_cases_run():
    import bale

    site = os.path.dirname(os.path.dirname(bale.__file__))
    out = subprocess.run(
        [sys.executable, os.path.join(BENCH, "builds_compared.py"), site, site, "--rounds", "1", "--repeat", "1"],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr
    ratios = [line.split()[-1] for line in out.stdout.splitlines()[1:8]]
    assert len(ratios) == 7 and all(float(r) > 0 for r in ratios), out.stdout
    out = subprocess.run([sys.executable, os.path.join(BENCH, "thaw_cases.py")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert sum(line.rstrip().endswith("x") for line in out.stdout.splitlines()) == 5, out.stdout


def test_the_sweep_reports_the_bound_of_each_compaction(smoke_report):
    # Each compaction table has a bound column (the copy of the region's
    # bytes against the baseline), filled for every cell, and the words
    # that say what it is.
    sweep = _section(smoke_report[0], "Shape sweep")
    assert "**The bound of a compaction.**" in sweep
    for title in ("compaction vs msgspec.msgpack encode", "compaction vs pickle.dumps(protocol=5)"):
        table = sweep.split(f"### {title}", 1)[1].split("\n### ", 1)[0]
        rows = [line for line in table.splitlines()
                if line.startswith("| ") and not line.startswith(("| cell", "| ---"))]
        assert table.count("| verdict | bound |") >= 1 and rows, table[:2000]
        for row in rows:
            bound = row.rstrip(" |").rsplit("| ", 1)[1]
            assert bound.endswith("x") and float(bound[:-1]) > 0, row


def _import_bench_sweep():
    # bench_sweep raises the recursion limit when imported: put back, for
    # the tests of depth limits that run after this one in this process.
    limit = sys.getrecursionlimit()
    sys.path.insert(0, BENCH)
    try:
        import bench_sweep
    finally:
        sys.path.remove(BENCH)
        sys.setrecursionlimit(limit)
    return bench_sweep


def test_the_sweep_reports_the_bound_of_each_scan(smoke_report):
    # The scan table's bound column is filled for every cell with a scan
    # target (records), and the words say how it is made.
    sweep = _section(smoke_report[0], "Shape sweep")
    assert "**The bound of a scan through views.**" in sweep and "(loop + reads) / native" in sweep
    table = sweep.split("### full scan through views vs native", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith(("| cell", "| ---"))]
    records = [row for row in rows if "| flat records |" in row or "| nested records |" in row]
    assert records, table[:2000]
    for row in records:
        bound = row.rstrip(" |").rsplit("| ", 1)[1].removesuffix(" (figure under it)")
        assert bound.endswith("x") and float(bound[:-1]) > 0, row


def test_a_scan_figure_under_its_bound_is_not_called_out_of_reach():
    bench_sweep = _import_bench_sweep()

    def cell(kind, **ratios):
        return {"name": "c", "kind": kind, "items": 1, "ratios": {**dict.fromkeys(bench_sweep.TIMED), **ratios}}

    # At or above its bound (within the noise), a bound above the target puts it out of reach.
    held = cell("flat records", scan=1.9, scan_bound=1.95)
    assert not bench_sweep.below_its_bound("scan", held) and bench_sweep.beyond_reach("scan", held)
    assert bench_sweep.bound_cell("scan", held) == "1.95x"
    # Under its bound by more than the noise: no floor there, so not out of reach, and the column says so.
    under = cell("nested records", scan=1.14, scan_bound=1.21)
    assert bench_sweep.below_its_bound("scan", under) and not bench_sweep.beyond_reach("scan", under)
    assert bench_sweep.bound_cell("scan", under) == "1.21x (figure under it)"
    # A bound under the target puts nothing out of reach, whatever the figure.
    assert not bench_sweep.beyond_reach("scan", cell("flat records", scan=1.5, scan_bound=1.1))
    # Every cell with a scan target is measured again in fresh processes, even one far under every
    # target (the native side's time depends on what the cells before it left in the allocator);
    # other cells only when near or past a target.
    assert bench_sweep.close_to_a_target(cell("flat records", scan=0.5, compact_msgspec=0.1))
    assert not bench_sweep.close_to_a_target(cell("other", scan=0.5, compact_msgspec=0.1))
    assert bench_sweep.close_to_a_target(cell("other", compact_msgspec=0.95))


def test_the_skeleton_walks_as_the_value_with_none_for_every_scalar():
    bench_sweep = _import_bench_sweep()
    x = [{"a": 1, "b": ["x", 2.5, (3, None)], "c": {"d": True}}, {"e": [], "f": {}}]
    sk = bench_sweep.skeleton(x)
    assert sk == [{"a": None, "b": [None, None, (None, None)], "c": {"d": None}}, {"e": [], "f": {}}]
    assert sk[0] is not x[0] and sk[0]["b"] is not x[0]["b"]
    for walk in (bench_sweep.walk_deep, bench_sweep.walk_records):
        assert walk(sk) == walk(x)
    records = bench_sweep.nested_records(50)
    assert bench_sweep.walk_deep(bench_sweep.skeleton(records)) == bench_sweep.walk_deep(records)


def test_a_sweep_cell_is_measured_again_in_a_fresh_process():
    # The sweep's reruns (`rerun_close_cells`) measure a cell in a new
    # interpreter, found by its exact name: "deep lists, nesting 50" is also
    # the start of "... 500", and must not be taken for it.
    bench_sweep = _import_bench_sweep()
    names = [s.name for s in bench_sweep.grid("smoke", None)]
    assert "deep lists, nesting 50" in names and "deep lists, nesting 500" in names
    r = bench_sweep.measure_in_a_fresh_process("deep lists, nesting 50", "smoke", None)
    assert set(bench_sweep.TIMED) <= set(r) and all(r[k] > 0 for k in bench_sweep.TIMED), r
    # The bounds of its compaction, timed in the same run (msgspec takes these lists).
    assert r["compact_msgspec_bound"] > 0 and r["compact_pickle_bound"] > 0, r
    # A name is taken whole, never as the start of another cell's.
    for name in ("deep lists, nesting 5", "no such cell"):
        with pytest.raises(RuntimeError, match="no cell named"):
            bench_sweep.measure_in_a_fresh_process(name, "smoke", None)


def test_best_interleaved_takes_turns_and_keeps_each_minimum(monkeypatch):
    sys.path.insert(0, BENCH)
    try:
        import common
    finally:
        sys.path.remove(BENCH)
    clock = iter(range(1000))
    monkeypatch.setattr(common.time, "perf_counter", lambda: next(clock))
    calls = []
    # Each call advances the fake clock by a known amount: a by 1, b by 3 then 1.
    spend = {"a": [0, 0], "b": [2, 0]}

    def make(name):
        def f():
            calls.append(name)
            for _ in range(spend[name].pop(0)):
                next(clock)
        return f

    times = common.best_interleaved({"a": make("a"), "b": make("b")}, repeat=2)
    assert sorted(calls[:2]) == sorted(calls[2:]) == ["a", "b"]
    assert times == {"a": 1, "b": 1}

    # Every turn runs each function once, the first in the order given, the
    # later ones shuffled (so none always follows the same other), and the
    # same shuffles in every run.
    def orders():
        order = []
        common.best_interleaved({name: (lambda n=name: order.append(n)) for name in "abcde"}, repeat=6)
        return [tuple(order[i:i + 5]) for i in range(0, 30, 5)]

    turns = orders()
    assert turns[0] == tuple("abcde")
    assert all(sorted(t) == list("abcde") for t in turns)
    assert len(set(turns)) > 1
    assert {t[t.index("a") - 1] for t in turns if t[0] != "a"} != {"e"}
    assert orders() == turns
