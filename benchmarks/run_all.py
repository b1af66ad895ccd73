"""Run the whole benchmark suite and write benchmarks/REPORT.md with its plots.

    python benchmarks/run_all.py [--quick | --smoke] [--only NAME ...] [--report PATH] [--no-report]
    bale bench [the same arguments]          (from a checkout of the repository)

Full mode takes more than half an hour on a 2-core machine (the 1 GB files
of the load-and-read benchmark and of the JSON Lines conversion, the
2^23-leaf trees and the 6M-record Ray dataset take most of it); ``--quick``
runs every benchmark on smaller data in several minutes; ``--smoke`` runs each
at its smallest size, only to check that they work (well under a minute).
Each benchmark is a script of this folder that also runs alone; here each
runs in its own process (so that one's heap does not slow the next) and
hands back its section, targets and plots as JSON. The report starts with
the machine, the targets of issue 7 with this run's figures, and the list of
what ran. A benchmark whose optional library is not installed (Ray) is
skipped and its last section kept.

Every benchmark's section, targets and timing also go to ``REPORT.json``
beside the report, so that ``--only NAME`` re-runs one benchmark (after an
optimization, say) and rebuilds the whole report with the others' latest
results; the report's run table says when and in which mode each ran.
Sections of the report that no benchmark of the suite writes (from older
scripts) are kept after the suite's. Only a full run writes the committed
``benchmarks/REPORT.md``: ``--smoke`` and ``--quick`` runs write to
``$TMPDIR/bale-bench-MODE/REPORT.md`` (with plots beside it) and refuse to
write the committed report, so they never change a tracked file.
``--report`` (or the environment variable ``BALE_BENCH_REPORT``) writes
elsewhere, plots beside it.

``main(argv)`` is the entry point for ``bale bench``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402 (found through HERE, also when imported from elsewhere)

# name, script, what it measures (issue 7's numbering for the papers' tables and figures)
SUITE: list[tuple[str, str, str]] = [
    ("core", "bench_core.py", "targets on tweet-like records: compact, thaw, point access, scan, verify"),
    ("table1", "bench_cnf_table1.py", "1. CNF Table 1 / Figure 4: compaction of a bintree"),
    ("sizes", "bench_sizes.py", "2. CNF Table 2: bytes"),
    ("latency", "bench_latency.py", "3. CNF Table 3: socket end-to-end latency"),
    ("load_read", "bench_load_read.py", "4. CNF Figure 6: load all and read one record, fresh processes"),
    ("gc", "bench_gc.py", "5. CNF Figures 7-8: garbage collection"),
    ("kv", "kv_server.py", "6. CNF Table 4: key-value server"),
    ("packed", "bench_packed.py", "7. packed-data Table 1: tree traversals"),
    ("store", "bench_store.py", "8. store: a vector of (int64, uint8, float64) records"),
    ("fork", "bench_fork.py", "9. fork memory of many readers"),
    ("foundation", "bench_foundation.py", "the first targets: compact, size, load, access, scan, gc, verify"),
    ("growth", "bench_growth.py", "growing regions: append, share=True, compacted()"),
    ("cli", "bench_cli.py", "bale convert of JSON Lines, to_json, column"),
    ("json_input", "bench_json_input.py", "JSON text to a region: compact_json against json.loads then compact"),
    ("typed", "bench_typed.py", "typed values and records: bytes, dataclasses, numpy arrays"),
    ("ray", "bench_ray.py", "Ray object store: ray.get and tasks"),
    ("sweep", "bench_sweep.py", "issue 21: every measure on a grid of shapes, worst cell first"),
    ("heap", "bench_heap.py", "bale.Store against LMDB, diskcache, shelve, sqlite (issue 19)"),
]
# Benchmarks that need an optional library: skipped (their last section kept) when it is missing.
REQUIRES = {"ray": "ray"}
HEADER_TITLES = ("Machine", "Targets", "This run")


def run_suite_module(script: str, mode: str, plots_dir: str, work: str) -> common.Section:
    out = os.path.join(work, script + ".json")
    cmd = [sys.executable, os.path.join(HERE, script), "--no-report", "--json", out, "--plots", plots_dir]
    if mode != "full":
        cmd.append(f"--{mode}")
    subprocess.run(cmd, check=True)
    with open(out) as f:
        return common.Section.from_json(f.read())


def header(mode: str, only: list[str] | None, started: datetime.datetime, runs: dict[str, dict],
           targets: list[common.Target], kept: list[str]) -> list[tuple[str, list[str]]]:
    flag = ("" if mode == "full" else f" --{mode}") + (f" --only {' '.join(only)}" if only else "")
    missed = [t for t in targets if t.met is False]
    summary = (f"{len(targets) - len(missed) - sum(t.met is None for t in targets)} of {len(targets)} targets met"
               f"{'' if not missed else '; missed: ' + '; '.join(f'{t.what} ({t.ratio or t.measured} against {t.goal})' for t in missed)}.")
    target_lines = [
        "Each target of issue 7 with the figure measured in this run; ratios are to the anchor measured in the "
        "same run (bale's time / the anchor's, or bale's bytes / pickle's). \"not measured\" means this mode "
        "did not reach the size the target names.",
        "",
        *common.targets_table(targets),
        "",
        summary,
    ]
    run_lines = [
        f"Last command: `python benchmarks/run_all.py{flag}`, started {started:%Y-%m-%d %H:%M} UTC. Each "
        "benchmark runs in its own process, one after another; the table says when and in which mode each one's "
        "section was last written. This machine has 2 cores shared with other work: figures are noisy (a few "
        "percent on long runs, more on sub-millisecond ones), which is why most are the best of several runs.",
        "",
        *common.table(["benchmark", "measures", "mode", "started (UTC)", "seconds", "status"],
                      ["l", "l", "l", "l", "r", "l"],
                      [(name, r["what"], r["mode"], r["started"], f"{r['seconds']:.0f}", r["status"])
                       for name, r in runs.items()]),
    ]
    if kept:
        run_lines += ["", "Kept from earlier runs (of the suite or of the script alone), not part of this run: "
                      + ", ".join(f'"{t}"' for t in kept) + "."]
    return [("Machine", ["", *common.machine_lines(), ""]), ("Targets", ["", *target_lines, ""]),
            ("This run", ["", *run_lines, ""])]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller data: a few minutes")
    size.add_argument("--smoke", action="store_true", help="tiny data: checks that every benchmark works")
    ap.add_argument("--only", nargs="+", choices=[name for name, _, _ in SUITE], help="run only these benchmarks")
    ap.add_argument("--report", default=None,
                    help="the report to write, plots beside it in plots/ (default: $BALE_BENCH_REPORT, else "
                    "benchmarks/REPORT.md for a full run and $TMPDIR/bale-bench-MODE/REPORT.md for --smoke and "
                    "--quick, which never write the committed report)")
    ap.add_argument("--no-report", action="store_true", help="print the sections; write no report")
    args = ap.parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    report = os.path.abspath(args.report or common.report_path(mode))
    common.check_report_path(report, mode)
    os.makedirs(os.path.dirname(report), exist_ok=True)
    plots_dir = os.path.join(os.path.dirname(report), "plots")
    started = datetime.datetime.now(datetime.timezone.utc)
    results_path = os.path.splitext(report)[0] + ".json"
    previous: dict[str, dict] = {}
    if os.path.exists(results_path):
        with open(results_path) as f:
            previous = json.load(f)["runs"]
    runs: dict[str, dict] = dict(previous) if args.only else {}  # with --only: the others' latest results
    failed = False
    with tempfile.TemporaryDirectory(prefix="bale-bench-") as work:
        if args.no_report:
            plots_dir = os.path.join(work, "plots")
        os.makedirs(plots_dir, exist_ok=True)
        for name, script, what in SUITE:
            if args.only and name not in args.only:
                continue
            if name in REQUIRES and importlib.util.find_spec(REQUIRES[name]) is None:
                print(f"\n=== {name}: skipped ({REQUIRES[name]} is not installed)", flush=True)
                if name in previous:
                    runs[name] = dict(previous[name], status=f"kept: {REQUIRES[name]} not installed for this run")
                continue
            print(f"\n=== {name}: {what} ({mode})", flush=True)
            t0 = time.perf_counter()
            began = datetime.datetime.now(datetime.timezone.utc)
            try:
                section = run_suite_module(script, mode, plots_dir, work)
                status = "ok"
            except subprocess.CalledProcessError as exc:
                failed = True
                status = f"failed (exit {exc.returncode})"
                section = common.Section(f"{what} (FAILED)", [f"`{script}` failed with exit status {exc.returncode}; "
                                                              "see its output."])
            runs[name] = {"what": what, "mode": mode, "started": f"{began:%Y-%m-%d %H:%M}",
                          "seconds": time.perf_counter() - t0, "status": status, "section": section.to_json()}

    order = [name for name, _, _ in SUITE if name in runs]
    runs = {name: runs[name] for name in order}
    sections = [common.Section.from_json(runs[name]["section"]) for name in order]
    targets = [t for s in sections for t in s.targets]
    written = {s.title for s in sections}
    kept: list[tuple[str, list[str]]] = []
    if os.path.exists(report):
        _, old = common.split_sections(open(report).read())
        kept = [(t, b) for t, b in old if t not in written and t not in HEADER_TITLES and not t.endswith("(FAILED)")]
    parts = header(mode, args.only, started, runs, targets, [t for t, _ in kept])
    parts += [(s.title, ["", *s.lines, ""]) for s in sections] + kept
    out = ["# Benchmark report", "", "Written by `benchmarks/run_all.py`; see the targets first, then one section per "
           "benchmark (each names the command that reproduces it alone).", ""]
    for title, body in parts:
        out += [f"## {title}", *body]
    text = "\n".join(out).rstrip("\n") + "\n"
    if args.no_report:
        print(text)
    else:
        with open(report, "w") as f:
            f.write(text)
        with open(results_path, "w") as f:
            json.dump({"runs": runs}, f, indent=1)
        print(f"\nwrote {report}, {results_path} and the plots in {plots_dir}")
    print("\n".join(common.targets_table(targets)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
