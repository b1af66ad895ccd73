"""Two builds of bale on the core figures, their runs interleaved: is a change a slowdown?

Each build is a directory that `pip install --target DIR .` filled. The
script runs one child process per build and per round, alternating A, B,
A, B...; each child times every operation best-of-`--repeat` on data it
generates itself (the same seed in every child), with the collector frozen
after setup and on during the timed calls, as a user runs them. A figure is
the minimum over the rounds; the ratio is B / A.

    python benchmarks/builds_compared.py OLD_SITE NEW_SITE [--rounds 5] [--repeat 5] [--cells]
    python benchmarks/builds_compared.py OLD_SITE NEW_SITE --sweep-cells CELL [CELL ...]

The operations are those the architecture issue names: compaction of
records and of a tree, thaw of each, point access, a full scan through
views, verify, and the region-to-region copy (`Region.compacted()`, the
core's encoder over stored values). With ``--cells``, also the shape
sweep's worst cells of issue 21 (its own generators, ``bench_sweep.py``):
heterogeneous dicts, records of distinct strings, a tree of leaves below
2^62, short strings, a vocabulary, a tree of ints beyond 64 bits, nested
records, deep lists, lists of 3 floats, a 10-word vocabulary (thaw), and
the github, amazon, canada, citm and mesh corpora. With
``--sweep-cells``, instead, the named cells of the sweep's full grid (their
names as its report gives them; ``benchmarks/sweep_bytes.py`` lists those
with a bytes target), each as the sweep measures it: compaction, thaw and
a full scan through the views (``_read_every_value(root, deep=True)``)
with the collector off, and verify. It prints a table and writes no
report.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

# What both children start with: the build under test, and the best of `repeat` runs.
PRELUDE = r"""
import gc, json, os, sys, time
import bale

repeat = int(sys.argv[1])

def best(f):
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)
"""

CHILD = PRELUDE + r"""
from bale._datagen import bintree, tweets

records = tweets(200_000)
tree = bintree(17)
rec_region = bale.compact(records)
tree_region = bale.compact(tree)
shared_tree = bale.compact(tree, share=True)
rec_bytes = bytes(rec_region)
root = rec_region.root
n = len(root)
idx = [(i * 7919) % n for i in range(100_000)]
gc.collect()
gc.freeze()

def point():
    for i in idx:
        root[i]["user_id"]

def scan():
    for r in root:
        for v in r.values():
            pass

out = {
    "compact 200k records": best(lambda: bale.compact(records)),
    "compact 2^17-leaf tree": best(lambda: bale.compact(tree)),
    "thaw 200k records": best(lambda: bale.thaw(rec_region.root)),
    "thaw 2^17-leaf tree": best(lambda: bale.thaw(tree_region.root)),
    "point access, 100k gets": best(point),
    "full scan, 200k records": best(scan),
    "verify 200k records": best(lambda: bale.load(rec_bytes, verify=True)),
    "copy 200k records": best(lambda: rec_region.compacted()),
    "copy 2^17-leaf tree": best(lambda: tree_region.compacted()),
    "copy shared 2^17-leaf tree": best(lambda: shared_tree.compacted()),
}
if len(sys.argv) > 2 and sys.argv[2] == "cells":
    sys.path.insert(0, sys.argv[3])
    import bench_sweep as bs
    hetero = bs.hetero_dicts(200_000)
    distinct = bs.vocab_records(200_000, None)
    tree62 = bs.tree_level(200_000, 0, 1 << 62)
    short = bs.strings(200_000, "len 1-7", "ASCII")
    latin1 = bale.compact(bs.strings(200_000, "len 1-7", "Latin-1"))
    vocab = bale.compact(bs.vocab_strings(200_000, 2000))
    h = bale.compact(hetero)
    s = bale.compact(short)
    big_tree = bale.compact(bs.tree_level(200_000, 1 << 64, 1 << 100))
    nested = bale.compact(bs.nested_records(50_000))
    deep = bs.deep_lists(200_000, 500)
    corpora = {n: bs.read_corpus(os.path.join(bs.JSON_DIR, n))
               for n in ("github_events.json", "amazon_cellphones.ndjson", "canada.json", "citm_catalog.json",
                         "mesh.json")}
    points = bs.points(200_000)
    vocab10 = bale.compact(bs.vocab_strings(200_000, 10))
    gh = bale.compact(corpora["github_events.json"])
    for r in (latin1, vocab, h):
        bytes(r)  # its checksum written
    gc.collect()
    gc.freeze()

    def thaw_gc_off(r):
        gc.disable()
        try:
            return bale.thaw(r)
        finally:
            gc.enable()

    out.update({
        "compact hetero dicts 200k": best(lambda: bale.compact(hetero)),
        "thaw hetero dicts (GC off)": best(lambda: thaw_gc_off(h)),
        "verify hetero dicts": best(h.verify),
        "compact distinct-str records": best(lambda: bale.compact(distinct)),
        "compact tree, leaves < 2^62": best(lambda: bale.compact(tree62)),
        "thaw short ASCII strs (GC off)": best(lambda: thaw_gc_off(s)),
        "verify short Latin-1 strs": best(latin1.verify),
        "verify 2,000-word vocabulary": best(vocab.verify),
        "thaw big-int tree, 200k leaves (GC off)": best(lambda: thaw_gc_off(big_tree)),
        "thaw nested records 50k (GC off)": best(lambda: thaw_gc_off(nested)),
        "compact short ASCII strs": best(lambda: bale.compact(short)),
        "compact deep lists, nesting 500": best(lambda: bale.compact(deep)),
        # The corpora take well under a millisecond: 50 calls a turn.
        "thaw github corpus x50 (GC off)": best(lambda: [thaw_gc_off(gh) for _ in range(50)]),
        "compact github corpus x50": best(lambda: [bale.compact(corpora["github_events.json"]) for _ in range(50)]),
        "compact amazon corpus x50": best(lambda: [bale.compact(corpora["amazon_cellphones.ndjson"]) for _ in range(50)]),
        "compact canada corpus x5": best(lambda: [bale.compact(corpora["canada.json"]) for _ in range(5)]),
        "compact citm corpus x5": best(lambda: [bale.compact(corpora["citm_catalog.json"]) for _ in range(5)]),
        "compact mesh corpus x20": best(lambda: [bale.compact(corpora["mesh.json"]) for _ in range(20)]),
        "compact 200k lists of 3 floats": best(lambda: bale.compact(points)),
        "thaw vocabulary-10 list (GC off)": best(lambda: thaw_gc_off(vocab10)),
    })
print(json.dumps(out))
"""

# One child's timings of the named sweep cells (`--sweep-cells`).
SWEEP_CHILD = PRELUDE + r"""
bench_dir, names = sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, bench_dir)
sys.setrecursionlimit(20_000)
import bench_sweep as bs

shapes = {s.name: s for s in bs.grid("full", None)}
out = {}
gc.disable()
for name in names:
    x = shapes[name].make()
    region = bale.compact(x)
    root = region.root
    out[f"compact {name}"] = best(lambda: bale.compact(x))
    out[f"thaw {name}"] = best(lambda: bale.thaw(root))
    out[f"verify {name}"] = best(region.verify)
    out[f"scan {name}"] = best(lambda: bale._bale._read_every_value(root, deep=True))
    del x, region, root
print(json.dumps(out))
"""


def run(site: str, repeat: int, cells: bool, sweep_cells: list[str] | None = None) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=site)
    here = os.path.dirname(os.path.abspath(__file__))
    if sweep_cells:
        argv = [SWEEP_CHILD, str(repeat), here, json.dumps(sweep_cells)]
    else:
        argv = [CHILD, str(repeat), *(["cells", here] if cells else [])]
    out = subprocess.run([sys.executable, "-c", *argv], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cells", action="store_true", help="also the shape sweep's worst cells (issue 21)")
    ap.add_argument("--sweep-cells", nargs="+", metavar="CELL",
                    help="instead, these cells of the shape sweep (names as its report gives them)")
    args = ap.parse_args()
    best: dict[str, dict[str, float]] = {"old": {}, "new": {}}
    for _ in range(args.rounds):
        for name, site in (("old", args.old), ("new", args.new)):
            for op, t in run(site, args.repeat, args.cells, args.sweep_cells).items():
                best[name][op] = min(t, best[name].get(op, t))
    width = max(32, *(len(op) for op in best["old"]))
    print(f"{'operation':<{width}} {'A (ms)':>9} {'B (ms)':>9} {'B / A':>7}")
    for op, a in best["old"].items():
        b = best["new"][op]
        print(f"{op:<{width}} {a * 1e3:>9.2f} {b * 1e3:>9.2f} {b / a:>7.3f}")
    print(f"\nA = {args.old}, B = {args.new}; minimum of {args.rounds} interleaved rounds, each best of {args.repeat}.")


if __name__ == "__main__":
    main()
