"""Growing regions: append, share=True and compacted(), against their baselines.

    python benchmarks/bench_growth.py [--quick | --smoke] [--no-report]

Measures, in one run on data it generates:

- a small update (one new record consed onto the old root,
  ``r.append((record, r.root))``) to a region of 1M tweet-like records:
  time and bytes per update, against re-compacting the whole updated data
  (``bale.compact([record] + records)``) and against ``pickle.dumps`` of it.
  The first append to a freshly compacted region and the steady state are
  reported apart;
- ``compact(obj, share=True)`` against the default and against
  ``pickle.dumps`` (which always memoizes), on the records and on a
  2^20-leaf tree of 2-tuples;
- ``Region.compacted()`` throughput (MB of output per second) and how much
  it reclaims from a region grown by many replacing appends.

Writes the section "Growing regions". ``--quick`` uses 100k records and a
2^16-leaf tree; ``--smoke`` 2,000 records, a 2^10-leaf tree and fewer
appends, only to check that the script works.
"""

from __future__ import annotations

import gc
import pickle
import statistics
import sys
import time

import bale
import common
from bale._datagen import bintree, tweets
from bale._fmt import duration as fmt_time

# records, tree depth, appends timed, catalog versions (and their note's bytes), document versions
SIZES = {"smoke": (2_000, 10, 100, 20, 10_000, 500), "quick": (100_000, 16, 1000, 200, 100_000, 10_000),
         "full": (1_000_000, 20, 1000, 200, 100_000, 10_000)}


def best(f, repeat: int = 3) -> float:
    return common.best(f, repeat)


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def run(mode: str, plots_dir: str) -> common.Section:
    n, depth, updates, n_versions, note_bytes, n_docs = SIZES[mode]

    print(f"generating {n:,} records and a 2^{depth}-leaf tree ...", flush=True)
    data = tweets(n)
    tree = bintree(depth)
    gc.collect()
    gc.freeze()
    rows: list[tuple[str, ...]] = []

    # --- a small update to a big region -----------------------------------
    record = {"hashtags": ["update"], "user_id": 123456789, "urls": ["https://example.com/u"]}
    region = bale.compact(data)
    t0 = time.perf_counter()
    grown = region.append((record, region.root))
    t_first = time.perf_counter() - t0
    first_bytes = grown.nbytes - region.nbytes
    times = []
    for i in range(updates):
        update = {"hashtags": [f"u{i}"], "user_id": i, "urls": []}
        t0 = time.perf_counter()
        grown = grown.append((update, grown.root))
        times.append(time.perf_counter() - t0)
    t_append = statistics.median(times)
    bytes_per_update = (grown.nbytes - region.nbytes - first_bytes) / updates
    updated = [record] + data
    t_recompact = best(lambda: bale.compact(updated))
    recompact_bytes = bale.compact(updated).nbytes
    t_pickle = best(lambda: pickle.dumps(updated, protocol=5))
    pickle_bytes = len(pickle.dumps(updated, protocol=5))
    rows += [
        ("small update: append (first, to a fresh region)", fmt_time(t_first), f"{first_bytes} B", "", ""),
        (f"small update: append (median of {updates})", fmt_time(t_append), f"{bytes_per_update:.0f} B", "", ""),
        ("small update: re-compact everything", fmt_time(t_recompact), mb(recompact_bytes),
         f"append is {t_recompact / t_append:,.0f}x faster", ""),
        ("small update: pickle.dumps everything", fmt_time(t_pickle), mb(pickle_bytes),
         f"append is {t_pickle / t_append:,.0f}x faster", ""),
    ]
    assert grown.root[0] == {"hashtags": [f"u{updates - 1}"], "user_id": updates - 1, "urls": []}
    del grown, updated

    # --- share=True -------------------------------------------------------
    for label, obj in [(f"{n:,} records", data), (f"2^{depth}-leaf tree", tree)]:
        t_default = best(lambda: bale.compact(obj))
        t_share = best(lambda: bale.compact(obj, share=True))
        t_pickle = best(lambda: pickle.dumps(obj, protocol=5))
        size_default = bale.compact(obj).nbytes
        size_share = bale.compact(obj, share=True).nbytes
        rows += [
            (f"compact, {label}, default", fmt_time(t_default), mb(size_default), "", ""),
            (f"compact, {label}, share=True", fmt_time(t_share), mb(size_share),
             f"{t_share / t_default:.2f}x default", f"{t_share / t_pickle:.2f}x pickle"),
            (f"pickle.dumps, {label}", fmt_time(t_pickle), mb(len(pickle.dumps(obj, protocol=5))), "", ""),
        ]

    # --- compacted() ------------------------------------------------------
    t_plain = best(lambda: region.compacted())
    rows.append(("compacted(), plain region", fmt_time(t_plain), mb(region.nbytes),
                 f"{region.nbytes / t_plain / 1e6:,.0f} MB/s", ""))
    # A catalog replaced 200 times by appends that keep one slice of the old one.
    versions = region
    for v in range(n_versions):
        versions = versions.append({"version": v, "records": versions.root if v == 0 else versions.root["records"],
                                    "note": "x" * note_bytes})
    t_grown = best(lambda: versions.compacted())
    out = versions.compacted()
    rows.append((f"compacted(), region grown by {n_versions} replacing appends", fmt_time(t_grown),
                 f"{mb(versions.nbytes)} -> {mb(out.nbytes)}", f"{out.nbytes / t_grown / 1e6:,.0f} MB/s",
                 f"reclaims {1 - out.nbytes / versions.nbytes:.0%}"))
    assert out.root == versions.root
    # A settings document replaced 10,000 times: only the last version is reachable.
    doc = bale.compact({"version": 0, "settings": {f"key{i}": i for i in range(50)}})
    for v in range(1, n_docs):
        doc = doc.append({"version": v, "settings": {f"key{i}": i + v for i in range(50)}})
    t_doc = best(lambda: doc.compacted())
    out = doc.compacted()
    rows.append((f"compacted(), document replaced {n_docs:,} times", fmt_time(t_doc),
                 f"{mb(doc.nbytes)} -> {out.nbytes:,} B", "", f"reclaims {1 - out.nbytes / doc.nbytes:.1%}"))
    assert out.root == doc.root

    gc.unfreeze()
    header = ["measure", "time", "bytes", "vs", "vs"]
    lines = common.table(header, ["l", "r", "r", "r", "r"], rows)
    for line in lines:
        print(line)
    body = [
        f"`python benchmarks/bench_growth.py{'' if mode == 'full' else ' --' + mode}`: {n:,} tweet-like records, "
        f"a 2^{depth}-leaf tree of 2-tuples; times are best of 3 (the append is the median of {updates}).",
        "",
        *lines,
        "",
        "The first append to a region made by `compact` writes into the spare room of its",
        "allocation when there is some, or reserves address space and copies the region once;",
        "later appends write only their own bytes.",
    ]
    return common.Section("Growing regions", body, [], [])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
