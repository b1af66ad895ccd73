"""Bytes of the shape sweep's cells that have a bytes target, against pickle.

Exact sizes, nothing timed, so it runs in seconds and needs no quiet
machine: ``Region.nbytes`` of ``bale.compact(x)`` (its 64-byte header
included) over ``len(pickle.dumps(x, 5))``, for the same cells and the same
data as ``bench_sweep.py``'s full sweep, with the issue's targets (1.0x for
records, 1.5x for trees). Also how those bytes split by object kind
(``--kinds``), as ``bale info`` counts them.

    python benchmarks/sweep_bytes.py [--kinds] [SUBSTR ...]

Only the cells whose name contains one of the SUBSTRs, when any are given.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bale  # noqa: E402
import bench_sweep  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", action="store_true", help="also print the bytes of each object kind")
    ap.add_argument("only", nargs="*", metavar="SUBSTR", help="only the cells whose name contains one of these")
    args = ap.parse_args(argv)
    # Building the deepest cells recurses (as in bench_sweep's own run).
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    met = total = 0
    try:
        for shape in bench_sweep.grid("full", None):
            target = bench_sweep.target_of("bytes", shape.kind)
            if target is None or (args.only and not any(s in shape.name for s in args.only)):
                continue
            x = shape.make()
            region = bale.compact(x)
            ratio = region.nbytes / len(pickle.dumps(x, 5))
            total += 1
            met += ratio <= target
            mark = "met " if ratio <= target else "MISS"
            print(f"{ratio:6.3f}x  (target {target:.1f}x, {mark})  {shape.name}", flush=True)
            if args.kinds:
                kinds = bale._bale.region_stats(region)["kinds"]
                for kind, (count, nbytes) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
                    print(f"          {nbytes:>13,} bytes  {count:>9,}  {kind}")
            del x, region
    finally:
        sys.setrecursionlimit(limit)
    print(f"met {met} of {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
