"""Foundation benchmark: bale against pickle and msgspec, in the same run.

    python benchmarks/bench_foundation.py [--quick | --smoke] [--no-report]

Measures, each against a baseline taken in the same process and run:

- compaction of 1M tweet-like records and of a 2^20-leaf binary tree of
  2-tuples, vs ``pickle.dumps`` (protocol 5) and ``msgspec.msgpack`` encode;
- ``bale.load`` (and ``bale.open``) of a ~100 MB region, in µs;
- random point access ``root[k]["user_id"]`` vs native objects, per access;
- a full scan ``sum(len(t["hashtags"]) for t in data)`` vs native;
- ``gc.collect()`` with only the region alive vs the native data alive
  (each in a fresh interpreter holding only that data);
- region size vs pickle bytes;
- and, for information, thaw vs ``pickle.loads`` and verification speed.

Each figure is printed with its baseline, the ratio and the target, and the
whole table is the section "Foundation" of the report. Times are best-of-N
wall times (``time.perf_counter``) after a ``gc.collect()``; data generation
is never timed. ``--quick`` uses 100k records and a 2^16-leaf tree for a
fast check; ``--smoke`` 2,000 records and a 2^10-leaf tree, only to check
that the script works.
"""

from __future__ import annotations

import gc
import os
import pickle
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time

import msgspec

import bale
import common
from common import best
from bale._fmt import duration as fmt_time
from bale._datagen import bintree, tweets

# records, tree depth, records of the "~100 MB" region, best of
SIZES = {"smoke": (2_000, 10, 3_000, 5), "quick": (100_000, 16, 150_000, 5), "full": (1_000_000, 20, 1_200_000, 3)}


# --- measuring ---------------------------------------------------------------



def per_call(f, number: int = 1000, repeat: int = 7) -> float:
    """Best per-call time of ``f()`` over ``repeat`` samples of ``number`` calls."""
    samples = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        samples.append((time.perf_counter() - t0) / number)
    return min(samples)


def gc_in_fresh_process(setup: str) -> float:
    """Best ``gc.collect()`` time in a new interpreter after running ``setup``."""
    prog = (
        setup
        + "\nimport gc, time\ngc.collect()\nts = []\n"
        + "for _ in range(5):\n"
        + "    t0 = time.perf_counter(); gc.collect(); ts.append(time.perf_counter() - t0)\n"
        + "print(min(ts))\n"
    )
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"child process failed: {proc.stderr.strip()}")
    return float(proc.stdout.strip())


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{platform.platform()}; {cpu}; {os.cpu_count()} cores; "
        f"Python {platform.python_version()} ({platform.python_implementation()})"
    )


# --- formatting ----------------------------------------------------------------


def fmt_ratio(r: float) -> str:
    if r < 0.001:
        return f"{r:.1e}x"
    if r < 0.1:
        return f"{r:.4f}x"
    return f"{r:.2f}x"


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str, str, str]] = []

    def add(self, measure: str, ours: str, base: str, ratio: str, target: str, met: bool | None) -> None:
        verdict = "-" if met is None else ("yes" if met else "**no**")
        self.rows.append((measure, ours, base, ratio, target, verdict))
        word = "" if met is None else ("met" if met else "MISSED")
        print(f"{measure:62s} {ours:>11s} {base:>11s} {ratio:>10s}  {target:<14s} {word}", flush=True)

    def markdown(self) -> list[str]:
        lines = [
            "| measure | bale | baseline | ratio | target | met |",
            "| --- | ---: | ---: | ---: | --- | --- |",
        ]
        lines += [f"| {' | '.join(r)} |" for r in self.rows]
        return lines


# --- the benchmark -------------------------------------------------------------


def run(mode: str, plots_dir: str) -> common.Section:
    n, depth, big_n, reps = SIZES[mode]
    table = Table()
    started = time.perf_counter()

    print(machine(), flush=True)
    print(f"generating {n:,} records and a 2^{depth}-leaf tree ...", flush=True)
    data = tweets(n)
    tree = bintree(depth)
    # The inputs live for the whole run: keep them out of the collector's
    # way so that a gc.collect() before each timing does not rescan them.
    gc.collect()
    gc.freeze()
    enc = msgspec.msgpack.Encoder()
    print(f"{'measure':62s} {'bale':>11s} {'baseline':>11s} {'ratio':>10s}  target", flush=True)

    # Compaction, size, thaw: records and tree.
    # The size target is for the records; a tree of 2-tuples of small ints
    # is where 8-byte slots cost most against pickle's 1-5 byte opcodes.
    for label, obj, size_target in [
        (f"{n:,} tweet-like records", data, True),
        (f"2^{depth}-leaf tree of 2-tuples", tree, False),
    ]:
        t_bale = best(lambda: bale.compact(obj), reps)
        t_pickle = best(lambda: pickle.dumps(obj, protocol=5), reps)
        t_msgspec = best(lambda: enc.encode(obj), reps)
        table.add(f"compact, {label}, vs pickle.dumps", fmt_time(t_bale), fmt_time(t_pickle),
                  fmt_ratio(t_bale / t_pickle), "<= 0.5x", t_bale / t_pickle <= 0.5)
        table.add(f"compact, {label}, vs msgspec.msgpack encode", fmt_time(t_bale), fmt_time(t_msgspec),
                  fmt_ratio(t_bale / t_msgspec), "(info)", None)
        region = bale.compact(obj)
        pickled = pickle.dumps(obj, protocol=5)
        size_ratio = region.nbytes / len(pickled)
        table.add(f"size, {label}, vs pickle bytes", f"{region.nbytes / 1e6:.1f} MB", f"{len(pickled) / 1e6:.1f} MB",
                  fmt_ratio(size_ratio), "<= 1.5x" if size_target else "(info)",
                  size_ratio <= 1.5 if size_target else None)
        t_thaw = best(lambda: bale.thaw(region.root), reps)
        t_loads = best(lambda: pickle.loads(pickled), reps)
        table.add(f"thaw, {label}, vs pickle.loads", fmt_time(t_thaw), fmt_time(t_loads),
                  fmt_ratio(t_thaw / t_loads), "(info)", None)
        del region, pickled

    region = bale.compact(data)
    root = region.root

    # Random point access, per access (the loop's own cost is in both).
    rng = random.Random(1)
    keys = [rng.randrange(n) for _ in range(200_000)]

    def point(d):
        s = 0
        for k in keys:
            s += d[k]["user_id"]
        return s

    if point(root) != point(data):
        raise SystemExit("point access: region and native data disagree")
    t_native = best(lambda: point(data))
    t_view = best(lambda: point(root))
    table.add("point access root[k]['user_id'], vs native", fmt_time(t_view / len(keys)),
              fmt_time(t_native / len(keys)), fmt_ratio(t_view / t_native), "<= 3x", t_view / t_native <= 3)

    # Full scan.
    def scan(d):
        return sum(len(t["hashtags"]) for t in d)

    if scan(root) != scan(data):
        raise SystemExit("full scan: region and native data disagree")
    t_native = best(lambda: scan(data), reps)
    t_view = best(lambda: scan(root), reps)
    table.add("full scan sum(len(t['hashtags'])), vs native", fmt_time(t_view), fmt_time(t_native),
              fmt_ratio(t_view / t_native), "<= 2.5x", t_view / t_native <= 2.5)

    # Verification speed: O(n), structure and checksum (the API's >= 1 GB/s).
    t_verify = best(region.verify, reps)
    rate = region.nbytes / t_verify / 1e9
    table.add("Region.verify() (structure + checksum)", f"{rate:.2f} GB/s", "", "", ">= 1 GB/s", rate >= 1.0)

    work = tempfile.mkdtemp(prefix="bale-bench-")
    try:
        # gc.collect() with the data alive, each in a fresh interpreter that
        # holds only that data: the native records (unpickled) or the region
        # (memory-mapped).
        pkl, reg = os.path.join(work, "records.pickle"), os.path.join(work, "records.bale")
        with open(pkl, "wb") as f:
            pickle.dump(data, f, protocol=5)
        region.save(reg)
        t_gc_native = gc_in_fresh_process(f"import pickle\nwith open({pkl!r}, 'rb') as f:\n    d = pickle.load(f)")
        t_gc_region = gc_in_fresh_process(f"import bale\nr = bale.open({reg!r})\nd = r.root")
        ratio = t_gc_region / t_gc_native
        table.add("gc.collect(), region alive vs native data alive", fmt_time(t_gc_region), fmt_time(t_gc_native),
                  fmt_ratio(ratio), "<= 1% (0.01x)", ratio <= 0.01)
        os.remove(pkl)
        os.remove(reg)
        del root, region

        # O(1) load of a ~100 MB region, from bytes and from a file; the
        # baseline is pickle.loads of the same records.
        big_data = tweets(big_n, seed=3)
        big = bytes(bale.compact(big_data))
        big_pickled = pickle.dumps(big_data, protocol=5)
        del big_data
        gc.collect()
        mb = f"{len(big) / 1e6:.0f} MB"
        t_loads = best(lambda: pickle.loads(big_pickled), 2)
        del big_pickled
        t_load = per_call(lambda: bale.load(big))
        table.add(f"bale.load of a {mb} region, vs pickle.loads", fmt_time(t_load), fmt_time(t_loads),
                  fmt_ratio(t_load / t_loads), "< 100 µs", t_load < 100e-6)
        path = os.path.join(work, "big.bale")
        bale.load(big).save(path)
        t_open = per_call(lambda: bale.open(path))
        table.add(f"bale.open of a {mb} file, vs pickle.loads", fmt_time(t_open), fmt_time(t_loads),
                  fmt_ratio(t_open / t_loads), "< 100 µs", t_open < 100e-6)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        gc.unfreeze()

    elapsed = time.perf_counter() - started
    print(f"({elapsed:.0f} s)")
    return common.Section("Foundation", report_lines(table, mode, n, depth), [], [])


def report_lines(table: Table, mode: str, n: int, depth: int) -> list[str]:
    return [
        f"`python benchmarks/bench_foundation.py{'' if mode == 'full' else ' --' + mode}`"
        f" ({n:,} records, 2^{depth}-leaf tree), on: {machine()}.",
        "",
        "Best of several runs, each after `gc.collect()`; every ratio is bale / baseline, with the"
        " baseline measured in the same run. pickle is protocol 5; msgspec is `msgspec.msgpack.Encoder().encode`."
        " gc figures come from fresh interpreters holding only that data.",
        "",
        *table.markdown(),
    ]


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
