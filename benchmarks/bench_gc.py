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
- in a bale region (the root view is held, the native records are dropped);
- as msgspec Structs declared with ``gc=False`` (their list fields made
  tuples, which the collector untracks once they hold only strings, as
  msgspec's documentation advises), decoded from MessagePack.

The workload stands for a service loop: each iteration builds a small
request-like dict with a list and a tuple in it; requests are kept in
batches of 2,000, and the last 5 batches stay alive (so objects live long
enough to reach the oldest generation, and then die). Also
reported: ``gc.collect()`` with only the live data alive (best of 5, before
the workload). Writes the section "Garbage collection" and
``plots/cnf_fig7_gc.png``.
"""

from __future__ import annotations

import os
import sys

SIZES = {"smoke": (5_000, 20_000), "quick": (200_000, 1_000_000), "full": (1_000_000, 3_000_000)}
VARIANTS = ("no live data", "native", "native + gc.freeze()", "bale region", "msgspec gc=False")
BATCH = 2_000
RING_BATCHES = 5  # 10,000 requests alive: old enough to reach generation 2, then dropped


def build_live_data(variant: str, n: int):
    """The data the variant keeps alive during the workload."""
    if variant == "no live data":
        return None
    from bale._datagen import tweets

    records = tweets(n, seed=21)
    if variant.startswith("native"):
        return records
    if variant == "bale region":
        import bale

        region = bale.compact(records)
        return region, region.root
    import msgspec

    class Tweet(msgspec.Struct, gc=False):
        hashtags: tuple[str, ...]
        user_id: int
        urls: tuple[str, ...]

    return msgspec.msgpack.Decoder(list[Tweet]).decode(msgspec.msgpack.encode(records))


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


def child(variant: str, n: int, iterations: int) -> dict:
    """Runs in the fresh interpreter: build, measure gc.collect(), run the workload."""
    import gc
    import time

    live = build_live_data(variant, n)
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
    workload(iterations)
    total = time.perf_counter() - t0
    gc.callbacks.remove(on_gc)
    del live
    return {"total": total, "gc": sum(t for _, t in per_gen.values()), "longest": longest[0],
            "collections": {g: c for g, (c, _) in per_gen.items()}, "gen2_time": per_gen[2][1],
            "collect": min(collects)}


def in_fresh_process(variant: str, n: int, iterations: int) -> dict:
    import ast
    import subprocess

    import common

    code = f"import sys; sys.path.insert(0, {common.HERE!r}); import bench_gc; " \
           f"print(repr(bench_gc.child({variant!r}, {n}, {iterations})))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONHASHSEED="0"))
    if proc.returncode != 0:
        raise RuntimeError(f"{variant}: child failed: {proc.stderr.strip()[-2000:]}")
    return ast.literal_eval(proc.stdout.strip().splitlines()[-1])


def run(mode: str, plots_dir: str):
    # common (and json, subprocess) are imported here and not at the top: the child imports
    # this module, and every module it imports adds objects that its gc.collect() would scan.
    import common

    n, iterations = SIZES[mode]
    results = {}
    rows = []
    for variant in VARIANTS:
        r = results[variant] = in_fresh_process(variant, n, iterations)
        c = r["collections"]
        rows.append((variant, common.fmt_time(r["total"]), common.fmt_time(r["gc"]),
                     f"{r['gc'] / r['total']:.0%}", f"{c[0]:,} / {c[1]:,} / {c[2]:,}",
                     common.fmt_time(r["gen2_time"]), common.fmt_time(r["longest"]), common.fmt_time(r["collect"])))
        print("  ".join(rows[-1]), flush=True)

    plot = common.bar_plot(plots_dir, "cnf_fig7_gc", f"Workload of {iterations:,} iterations with {n:,} records "
                           "alive (CNF Fig. 7-8)", "seconds", list(VARIANTS),
                           {"total": [results[v]["total"] for v in VARIANTS],
                            "in the collector": [results[v]["gc"] for v in VARIANTS]})
    region, native = results["bale region"], results["native"]
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
    ]
    return common.Section("Garbage collection (CNF Figures 7-8)", lines, targets, [plot])


def main(argv: list[str] | None = None) -> int:
    import common

    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
