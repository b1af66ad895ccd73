"""CNF Figures 7-8: an allocation-heavy workload while large data stays alive.

    python benchmarks/bench_gc.py [--quick | --smoke] [--no-report]

Each variant runs in a fresh interpreter that first builds its live data
(not timed), then runs the same workload and reports the total time and the
time spent in the cyclic garbage collector, from ``gc.callbacks`` (a
"start" and a "stop" event around every collection). The live data is
1,000,000 tweet-like records (200,000 with ``--quick``) held:

- not at all (the workload alone);
- natively, as a list of dicts;
- natively, after ``gc.freeze()`` (moved to the permanent generation: a
  manual mitigation, for reference);
- in a bale region opened from a file the parent wrote (``bale.open``; the
  root view is held);
- in a bale region compacted in the same process from records that are
  then dropped (their freed memory stays in the allocator's arenas, so the
  workload's objects land scattered among the holes);
- as msgspec Structs declared with ``gc=False`` (their list fields made
  tuples, which the collector untracks once they hold only strings, as
  msgspec's documentation advises), decoded from a MessagePack file the
  parent wrote.

The workload stands for a service loop: each iteration builds a small
request-like dict with a list and a tuple in it; requests are kept in
batches of 2,000, and the last 5 batches stay alive (so objects live long
enough to reach the oldest generation, and then die). Also
reported: ``gc.collect()`` with only the live data alive (best of 5, before
the workload).

A second workload stands for a growing cache: each iteration builds a small
dict with a list in it, the last 1,000 stay in a window, and one in 20 is
kept for good in a growing list, so survivors keep the collector running
full passes over everything alive. It runs with no live data, the native
records, the region opened from a file and the msgspec Structs. Writes the
section "Garbage collection" and ``plots/cnf_fig7_gc.png``.
"""

from __future__ import annotations

import os
import sys

SIZES = {"smoke": (5_000, 20_000), "quick": (200_000, 1_000_000), "full": (1_000_000, 3_000_000)}
REGION_FROM_FILE = "bale region (opened from a file)"
MSGSPEC = "msgspec gc=False (decoded from a file)"
VARIANTS = ("no live data", "native", "native + gc.freeze()", REGION_FROM_FILE,
            "bale region (compacted in this process)", MSGSPEC)
CACHE_VARIANTS = ("no live data", "native", REGION_FROM_FILE, MSGSPEC)
BATCH = 2_000
RING_BATCHES = 5  # 10,000 requests alive: old enough to reach generation 2, then dropped


def build_live_data(variant: str, n: int, work: str):
    """The data the variant keeps alive during the workload (files in ``work`` come from the parent)."""
    if variant == "no live data":
        return None
    if variant == REGION_FROM_FILE:
        import bale

        region = bale.open(os.path.join(work, "records.bale"))
        return region, region.root
    if variant == MSGSPEC:
        import msgspec

        class Tweet(msgspec.Struct, gc=False):
            hashtags: tuple[str, ...]
            user_id: int
            urls: tuple[str, ...]

        with open(os.path.join(work, "records.msgpack"), "rb") as f:
            return msgspec.msgpack.Decoder(list[Tweet]).decode(f.read())
    from bale._datagen import tweets

    records = tweets(n, seed=21)
    if variant.startswith("native"):
        return records
    import bale

    # The records die here: their memory stays in the allocator's arenas, full of holes.
    region = bale.compact(records)
    return region, region.root


def workload(iterations: int) -> int:
    """Requests arrive in batches; the last RING_BATCHES batches stay alive, older ones die."""
    from collections import deque

    recent: deque = deque(maxlen=RING_BATCHES)
    batch: list = []
    checksum = 0
    for i in range(iterations):
        request = {"id": i, "path": "/items", "args": [i & 255, i >> 8], "peer": ("10.0.0.1", i & 65535)}
        batch.append(request)
        checksum += request["args"][0]
        if len(batch) == BATCH:
            recent.append(batch)
            batch = []
    return checksum


def growing_cache(iterations: int) -> int:
    """A window of the last 1,000 objects, and one in 20 kept for good: survivors pile up."""
    window: list = [None] * 1000
    kept: list = []
    for i in range(iterations):
        obj = {"i": i, "pair": [i, i + 1]}
        window[i % 1000] = obj
        if i % 20 == 0:
            kept.append(obj)
    return len(kept)


WORKLOADS = {"requests": workload, "growing cache": growing_cache}


def child(variant: str, n: int, iterations: int, work: str, kind: str = "requests") -> dict:
    """Runs in the fresh interpreter: build, measure gc.collect(), run the workload."""
    import gc
    import time

    live = build_live_data(variant, n, work)
    gc.collect()
    if variant == "native + gc.freeze()":
        gc.freeze()
    collects = []
    for _ in range(5):
        t0 = time.perf_counter()
        gc.collect()
        collects.append(time.perf_counter() - t0)
    gc.collect()

    per_gen = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
    started = [0.0]
    longest = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            spent = time.perf_counter() - started[0]
            entry = per_gen[info["generation"]]
            entry[0] += 1
            entry[1] += spent
            longest[0] = max(longest[0], spent)

    gc.callbacks.append(on_gc)
    t0 = time.perf_counter()
    WORKLOADS[kind](iterations)
    total = time.perf_counter() - t0
    gc.callbacks.remove(on_gc)
    del live
    return {"total": total, "gc": sum(t for _, t in per_gen.values()), "longest": longest[0],
            "collections": {g: c for g, (c, _) in per_gen.items()}, "gen2_time": per_gen[2][1],
            "collect": min(collects)}


def in_fresh_process(variant: str, n: int, iterations: int, work: str, kind: str = "requests") -> dict:
    import ast
    import subprocess

    import common

    code = f"import sys; sys.path.insert(0, {common.HERE!r}); import bench_gc; " \
           f"print(repr(bench_gc.child({variant!r}, {n}, {iterations}, {work!r}, {kind!r})))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONHASHSEED="0"))
    if proc.returncode != 0:
        raise RuntimeError(f"{variant}: child failed: {proc.stderr.strip()[-2000:]}")
    return ast.literal_eval(proc.stdout.strip().splitlines()[-1])


def run(mode: str, plots_dir: str):
    # These are imported here and not at the top: the child imports this module, and
    # every module it imports adds objects that its gc.collect() would scan.
    import shutil
    import tempfile

    import common
    import msgspec

    import bale
    from bale._datagen import tweets

    n, iterations = SIZES[mode]
    work = tempfile.mkdtemp(prefix="bale-gc-")
    records = tweets(n, seed=21)
    bale.compact(records).save(os.path.join(work, "records.bale"))
    with open(os.path.join(work, "records.msgpack"), "wb") as f:
        f.write(msgspec.msgpack.encode(records))
    del records
    results = {}
    cache_results = {}
    rows = []
    try:
        for variant in VARIANTS:
            results[variant] = in_fresh_process(variant, n, iterations, work)
        for variant in CACHE_VARIANTS:
            cache_results[variant] = in_fresh_process(variant, n, iterations, work, "growing cache")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for variant, r in results.items():
        c = r["collections"]
        rows.append((variant, common.fmt_time(r["total"]), common.fmt_time(r["gc"]),
                     f"{r['gc'] / r['total']:.0%}", f"{c[0]:,} / {c[1]:,} / {c[2]:,}",
                     common.fmt_time(r["gen2_time"]), common.fmt_time(r["longest"]), common.fmt_time(r["collect"])))
        print("  ".join(rows[-1]), flush=True)

    cache_rows = []
    for variant, r in cache_results.items():
        c = r["collections"]
        cache_rows.append((variant, common.fmt_time(r["total"]), common.fmt_time(r["gc"]),
                           f"{r['gc'] / r['total']:.0%}", f"{c[0]:,} / {c[1]:,} / {c[2]:,}",
                           common.fmt_time(r["gen2_time"]), common.fmt_time(r["longest"])))
        print("growing cache:", "  ".join(cache_rows[-1]), flush=True)

    plot = common.bar_plot(plots_dir, "cnf_fig7_gc", f"Workload of {iterations:,} iterations with {n:,} records "
                           "alive (CNF Fig. 7-8)", "seconds", list(VARIANTS),
                           {"total": [results[v]["total"] for v in VARIANTS],
                            "in the collector": [results[v]["gc"] for v in VARIANTS]})
    region, native = results[REGION_FROM_FILE], results["native"]
    source = "bench_gc"
    targets = [
        common.Target(f"gc.collect() with a region of {n:,} records alive", "< 1 ms",
                      common.fmt_time(region["collect"]), f"{common.fmt_time(native['collect'])} (native data)",
                      common.fmt_ratio(region["collect"] / native["collect"]), region["collect"] < 1e-3, source),
    ]
    lines = [
        f"`python benchmarks/bench_gc.py{'' if mode == 'full' else ' --' + mode}`: {iterations:,} iterations of "
        f"an allocation-heavy loop (a request-like dict per iteration, in batches of {BATCH:,}; the last "
        f"{RING_BATCHES} batches stay alive) with {n:,} tweet-like records alive, each variant in a fresh interpreter. *in GC* sums the "
        "time between the collector's start and stop callbacks; *collections* are per generation (0 / 1 / 2); "
        "*gc.collect()* is one full collection with only the live data alive (best of 5, before the loop). "
        "msgspec Structs use `gc=False` and tuple fields.",
        "",
        *common.table(["live data held", "total", "in GC", "GC share", "collections", "in gen-2 GC",
                       "longest pause", "gc.collect()"], ["l"] + ["r"] * 7, rows),
        "",
        common.plot_line(plot, "workload time and time in the collector"),
        "",
        f"The growing-cache workload: {iterations:,} iterations, each a small dict with a list; the last 1,000 "
        "stay in a window and one in 20 is kept for good, so the survivors make the collector run full passes. "
        "Same live data and fresh interpreters as above.",
        "",
        *common.table(["live data held", "total", "in GC", "GC share", "collections", "in gen-2 GC",
                       "longest pause"], ["l"] + ["r"] * 6, cache_rows),
    ]
    return common.Section("Garbage collection (CNF Figures 7-8)", lines, targets, [plot])


def main(argv: list[str] | None = None) -> int:
    import common

    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
