"""Fresh-process benchmarks: CNF Figure 6 (load all, read one record) and
Figures 7-8 (garbage collection with large live data).

    python benchmarks/bench_fresh.py [--max-mb 1000] [--quick] [--no-report]

Figure 6: tweet-like records written as a bale file, JSON (read with
orjson), pickle and a pyarrow IPC file, at about 1 MB ... --max-mb MB of
JSON. Each measurement runs in a new interpreter: "load all" is the time to
have the whole dataset usable (bale.open; orjson.loads of the file;
pickle.load; pyarrow's memory-mapped read_all), "read one" the time to get
record n/2 as a Python dict starting from nothing (for JSON and pickle that
means loading everything). Times are measured inside the child after its
imports; the table also gives the child's whole wall time, interpreter
start included.

Figures 7-8: a fixed allocation-heavy workload (3M small dicts, one in 20
kept in a growing list, the others short-lived) runs while 1M records are alive, held as
native dicts, in a bale region, or as msgspec Structs with gc=False; each in
a new interpreter. Reports total time and time inside the collector
(measured with gc.callbacks).

Writes the section "Fresh processes" of benchmarks/REPORT.md and two plots.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile
import time

import common
from bale._datagen import tweets
from bale._fmt import duration as fmt_time

HERE = pathlib.Path(__file__).resolve().parent
PLOTS = HERE / "plots"
BYTES_PER_JSON_RECORD = 90

LOADERS = {
    "bale": (
        "import bale",
        "r = bale.open(PATH); root = r.root",
        "r = bale.open(PATH); rec = bale.thaw(r.root[N // 2])",
    ),
    "json (orjson)": (
        "import orjson",
        "data = orjson.loads(open(PATH, 'rb').read())",
        "data = orjson.loads(open(PATH, 'rb').read()); rec = data[N // 2]",
    ),
    "pickle": (
        "import pickle",
        "data = pickle.load(open(PATH, 'rb'))",
        "data = pickle.load(open(PATH, 'rb')); rec = data[N // 2]",
    ),
    "pyarrow IPC": (
        "import pyarrow as pa",
        "t = pa.ipc.open_file(pa.memory_map(PATH)).read_all()",
        "t = pa.ipc.open_file(pa.memory_map(PATH)).read_all(); rec = t.slice(N // 2, 1).to_pylist()[0]",
    ),
}


def run_child(imports: str, stmt: str, path: str, n: int) -> tuple[float, float]:
    """(seconds for ``stmt`` inside a new interpreter, the child's wall time)."""
    code = (
        f"import time\n{imports}\nPATH = {path!r}; N = {n}\n"
        f"t0 = time.perf_counter()\n{stmt}\nprint(time.perf_counter() - t0)\n"
    )
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    return float(p.stdout.strip()), wall


def write_files(d: str, n: int) -> dict[str, str]:
    import bale
    import pyarrow as pa

    data = tweets(n)
    paths = {k: os.path.join(d, f"data.{ext}") for k, ext in
             (("bale", "bale"), ("json (orjson)", "json"), ("pickle", "pkl"), ("pyarrow IPC", "arrow"))}
    bale.compact(data).save(paths["bale"])
    with open(paths["json (orjson)"], "w") as f:
        json.dump(data, f, separators=(",", ":"))
    with open(paths["pickle"], "wb") as f:
        pickle.dump(data, f, protocol=5)
    table = pa.Table.from_pylist(data)
    with pa.OSFile(paths["pyarrow IPC"], "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return paths


def figure6(max_mb: float, rows: list, plot: dict) -> None:
    mb = 1.0
    while mb <= max_mb * 1.001:
        n = int(mb * 1e6 / BYTES_PER_JSON_RECORD)
        with tempfile.TemporaryDirectory() as d:
            print(f"figure 6: {n:,} records (~{mb:g} MB of JSON) ...", flush=True)
            paths = write_files(d, n)
            # Warm the page cache alike for every format (the paper reads from cache too).
            for p in paths.values():
                with open(p, "rb") as f:
                    while f.read(1 << 24):
                        pass
            for name, (imports, load_all, read_one) in LOADERS.items():
                t_all, _ = run_child(imports, load_all, paths[name], n)
                t_one, wall = run_child(imports, read_one, paths[name], n)
                size = os.path.getsize(paths[name])
                rows.append((f"{mb:g} MB", name, f"{size / 1e6:,.1f} MB", fmt_time(t_all), fmt_time(t_one), fmt_time(wall)))
                plot.setdefault(name, []).append((mb, t_one))
        mb *= 10


GC_CHILD = """
import gc, time, sys
from bale._datagen import tweets
kind, n = sys.argv[1], int(sys.argv[2])
data = tweets(n)
if kind == "bale":
    import bale
    live = bale.compact(data).root
    del data
elif kind == "msgspec":
    import msgspec
    class Tweet(msgspec.Struct, gc=False):
        hashtags: tuple
        user_id: int
        urls: tuple
    live = [Tweet(tuple(t["hashtags"]), t["user_id"], tuple(t["urls"])) for t in data]
    del data
else:
    live = data
gc.collect()
spent = [0.0]
started = [0.0]
def track(phase, info):
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        spent[0] += time.perf_counter() - started[0]
gc.callbacks.append(track)
t0 = time.perf_counter()
window = [None] * 1000
kept = []
for i in range(3 * n):
    obj = {"i": i, "pair": [i, i + 1]}
    window[i % 1000] = obj
    if i % 20 == 0:
        kept.append(obj)  # a growing cache: survivors make the collector run full passes
total = time.perf_counter() - t0
print(total, spent[0], len(live))
"""


def figures78(rows: list, n: int = 1_000_000) -> None:
    for kind, label in (("native", "native dicts"), ("bale", "bale region"), ("msgspec", "msgspec Structs, gc=False")):
        p = subprocess.run([sys.executable, "-c", GC_CHILD, kind, str(n)], capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(p.stderr)
        total, in_gc, _ = p.stdout.split()
        rows.append((label, fmt_time(float(total)), fmt_time(float(in_gc)), f"{float(in_gc) / float(total):.0%}"))


def draw(plot: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in plot.items():
        xs, ys = zip(*points)
        ax.plot(xs, [y * 1e3 for y in ys], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dataset, MB of JSON")
    ax.set_ylabel("ms to read one record (fresh process)")
    ax.set_title("Reading one record from a file (CNF Figure 6)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    path.parent.mkdir(exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-mb", type=float, help="largest dataset, MB of JSON (default 1000; 10 with --quick)")
    ap.add_argument("--quick", action="store_true", help="1 and 10 MB; 100k live records")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args(argv)
    f6, plot, f78 = [], {}, []
    figure6(args.max_mb if args.max_mb is not None else (10 if args.quick else 1000), f6, plot)
    figures78(f78, 100_000 if args.quick else 1_000_000)
    lines = [
        f"`python benchmarks/bench_fresh.py{' --quick' if args.quick else ''}`; every figure from a new interpreter, "
        "files in the page cache.",
        "",
        "### CNF Figure 6: load all, read one record",
        "",
        *common.table(["data", "format", "file", "load all", "read one", "child wall time (read one)"],
                      ["l", "l", "r", "r", "r", "r"], f6),
        "",
        "![CNF Figure 6](plots/cnf_figure6.png)",
        "",
        "### CNF Figures 7-8: 3M allocations (one in 20 kept) with 1M records alive",
        "",
        *common.table(["live data held as", "workload time", "time in gc", "share"], ["l", "r", "r", "r"], f78),
    ]
    print("\n".join(lines))
    if not args.no_report:
        # Plots belong to the report: a run that does not write it leaves them alone.
        draw(plot, PLOTS / "cnf_figure6.png")
        common.write_section("Fresh processes", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
