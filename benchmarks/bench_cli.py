"""The command line and native paths: streaming conversion, to_json, column.

    python benchmarks/bench_cli.py [--quick | --smoke] [--gb GB] [--no-report]

1. Converts a generated JSON Lines file of at least ``--gb`` GB with
   ``bale convert`` in a child process: wall time, throughput and the
   child's peak RSS (``getrusage(RUSAGE_CHILDREN)``), then opens the result
   and checks it holds every line in order; then ``bale info`` of the
   result in a child process: wall time, the child's peak RSS (the mapped
   file's pages count in it) and its peak anonymous memory (``RssAnon``,
   sampled every 10 ms: what the walk itself allocates).
2. ``bale.to_json(view)`` against ``orjson.dumps(bale.thaw(view))`` on each
   file of ``../shared/data/json``.
3. ``bale.column(records, "user_id")`` against a Python loop over the
   views, a loop over native dicts, and pyarrow (``Table.from_pylist`` of
   the native records, and ``column().to_numpy()`` of a prepared table).

Sizes: a 1 GB file and 1M records; ``--quick`` 0.05 GB and 100k records;
``--smoke`` 0.002 GB and 2,000 records (``--gb`` overrides the file's size).
Writes the section "Command line and native paths".
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import bale
import common
from common import best
from bale._datagen import tweets
from bale._fmt import duration as fmt_time

CORPUS = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "json"
SIZES = {"smoke": (0.002, 2_000), "quick": (0.05, 100_000), "full": (1.0, 1_000_000)}  # GB of JSON Lines, records



def write_jsonl(path: str, target_bytes: int) -> int:
    """Tweet-like records with a text field, until the file is big enough."""
    n = 0
    with open(path, "w") as f:
        while f.tell() < target_bytes:
            chunk = tweets(min(50_000, max(1_000, target_bytes // 400)), seed=n)
            f.write("".join(json.dumps({"id": n + i, **t, "text": "lorem ipsum " * 12}) + "\n" for i, t in enumerate(chunk)))
            n += len(chunk)
    return n


# Run by a fresh interpreter that starts the measured command itself: a
# child forked from this (large) process would carry this process's peak
# RSS in its own ru_maxrss, across exec.
_MEASURE = """
import json, os, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
anon = 0
while True:
    pid, status, usage = os.wait4(p.pid, os.WNOHANG)
    if pid:
        break
    try:
        with open(f"/proc/{p.pid}/status") as f:
            anon = max([anon] + [int(line.split()[1]) * 1024 for line in f if line.startswith("RssAnon:")])
    except OSError:
        pass
    time.sleep(0.01)
print(json.dumps({"elapsed": time.perf_counter() - t0, "peak": usage.ru_maxrss * 1024, "anon": anon,
                  "status": os.waitstatus_to_exitcode(status)}))
"""


def run_child(cmd: list[str]) -> tuple[float, int, int]:
    """Wall time, peak RSS (bytes, from ``wait4``) and peak ``RssAnon``
    (bytes, sampled every 10 ms) of the command run as a child."""
    p = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True)
    got = json.loads(p.stdout) if p.returncode == 0 else {"status": p.returncode}
    if got["status"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr}")
    return got["elapsed"], got["peak"], got["anon"]


def convert_section(gb: float, rows: list) -> None:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "big.jsonl")
        dst = os.path.join(d, "big.bale")
        print(f"writing {gb} GB of JSON Lines ...", flush=True)
        n = write_jsonl(src, int(gb * 1e9))
        size = os.path.getsize(src)
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "bale", "convert", src, dst], capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(p.stderr)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        t0 = time.perf_counter()
        r = bale.open(dst)
        t_open = time.perf_counter() - t0
        ids = bale.column(r.root, "id")
        in_order = len(r.root) == n and bool((ids == range(n)).all())
        if not in_order:
            raise SystemExit("converted file does not hold every line in order")
        rows.append(("bale convert, JSON Lines", f"{common.fmt_bytes(size)}, {n:,} lines", fmt_time(elapsed),
                     f"{size / elapsed / 1e6:,.0f} MB/s", f"peak RSS {peak / 1e6:,.0f} MB (target < 300 MB)"))
        rows.append(("bale.open of the result", common.fmt_bytes(os.path.getsize(dst)), fmt_time(t_open), "",
                     "every line present, in order"))
        del ids, r
        out_size = os.path.getsize(dst)
        t_info, info_peak, info_anon = run_child([sys.executable, "-m", "bale", "info", dst])
        rows.append(("bale info of the result", common.fmt_bytes(out_size), fmt_time(t_info),
                     f"{out_size / t_info / 1e6:,.0f} MB/s",
                     f"peak RSS {info_peak / 1e6:,.0f} MB (the mapped file counts in it); "
                     f"peak anonymous {info_anon / 1e6:,.1f} MB"))


def to_json_section(rows: list) -> None:
    import orjson

    for path in sorted(CORPUS.glob("*.json")):
        value = json.loads(path.read_text(encoding="utf-8"))
        view = bale.compact(value).root
        if orjson.loads(bale.to_json(view)) != value:
            raise SystemExit(f"to_json of {path.name} does not parse back to the file's value")
        t_bale = best(lambda: bale.to_json(view))
        t_orjson = best(lambda: orjson.dumps(bale.thaw(view)))
        t_native = best(lambda: orjson.dumps(value))
        rows.append((f"to_json, {path.name}", f"{path.stat().st_size / 1e6:.2f} MB", fmt_time(t_bale),
                     f"orjson(thaw): {fmt_time(t_orjson)} ({t_orjson / t_bale:.1f}x slower)",
                     f"orjson on natives: {fmt_time(t_native)}"))


def column_section(n: int, rows: list) -> None:
    import pyarrow as pa

    data = tweets(n)
    root = bale.compact(data).root
    table = pa.Table.from_pylist(data)
    t_col = best(lambda: bale.column(root, "user_id"))
    t_views = best(lambda: [r["user_id"] for r in root], 3)
    t_native = best(lambda: [r["user_id"] for r in data], 3)
    t_from = best(lambda: pa.Table.from_pylist(data).column("user_id"), 3)
    t_arrow = best(lambda: table.column("user_id").to_numpy())
    rows.append((f"column(records, 'user_id'), {n:,} records", "int64 numpy array", fmt_time(t_col),
                 f"loop over views {fmt_time(t_views)}; over natives {fmt_time(t_native)}",
                 f"pyarrow from_pylist {fmt_time(t_from)}; prepared table to_numpy {fmt_time(t_arrow)}"))


def options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--gb", type=float, help="size of the JSON Lines file to convert (default 1.0; 0.05 with "
                    "--quick; 0.002 with --smoke)")


def run(mode: str, plots_dir: str, args: argparse.Namespace | None = None) -> common.Section:
    gb, n = SIZES[mode]
    if args is not None and args.gb is not None:
        gb = args.gb
    rows: list = []
    convert_section(gb, rows)
    to_json_section(rows)
    column_section(n, rows)
    lines = common.table(["measure", "input", "time", "against", "notes"], ["l", "r", "r", "l", "l"], rows)
    print("\n".join(lines))
    body = [
        f"`python benchmarks/bench_cli.py{'' if mode == 'full' else ' --' + mode}`: times are best of 3-5 runs "
        "(the conversion: one run); peak RSS is the converting child's maximum resident set.",
        "",
        *lines,
    ]
    return common.Section("Command line and native paths", body, [], [])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run, options)


if __name__ == "__main__":
    sys.exit(main())
