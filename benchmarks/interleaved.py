"""bale against its anchor with the runs interleaved, for the targets near 1.0x.

On a shared machine a ratio of two best-of-N figures taken minutes apart
drifts with the machine's load. Here each repeat times bale, then the
anchor, on the same input with the collector frozen, and the ratio is of
the two minima:

* ``compact`` of 1,000,000 tweet-like records against msgspec's encoder;
* ``compact`` of a 2^18-leaf tree against msgspec's encoder;
* ``thaw`` of that tree against ``pickle.loads``.

    python benchmarks/interleaved.py [--repeat N] [--records N]

It prints a table and writes no report (the suite's figures stay those of
``run_all.py``).
"""

from __future__ import annotations

import argparse
import gc
import pickle
import time

import msgspec

import bale
from bale._datagen import bintree, tweets


def interleaved(mine, theirs, repeat: int) -> tuple[float, float]:
    """Minimum times of `mine()` and `theirs()`, run one after the other `repeat` times."""
    a, b = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        mine()
        a.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        theirs()
        b.append(time.perf_counter() - t0)
    return min(a), min(b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--records", type=int, default=1_000_000)
    args = ap.parse_args()
    encoder = msgspec.msgpack.Encoder()
    records = tweets(args.records)
    tree = bintree(18)
    region = bale.compact(tree)
    pickled = pickle.dumps(tree, protocol=5)
    gc.collect()
    gc.freeze()
    rows = [
        (f"compact, {args.records:,} records", "msgspec encode",
         interleaved(lambda: bale.compact(records), lambda: encoder.encode(records), args.repeat)),
        ("compact, 2^18-leaf tree", "msgspec encode",
         interleaved(lambda: bale.compact(tree), lambda: encoder.encode(tree), args.repeat)),
        ("thaw, 2^18-leaf tree", "pickle.loads",
         interleaved(lambda: bale.thaw(region.root), lambda: pickle.loads(pickled), args.repeat)),
    ]
    print(f"best of {args.repeat} interleaved runs, collector frozen\n")
    print("| measure | bale | anchor | anchor time | bale / anchor |")
    print("| --- | ---: | --- | ---: | ---: |")
    for what, anchor, (mine, theirs) in rows:
        print(f"| {what} | {mine * 1e3:.2f} ms | {anchor} | {theirs * 1e3:.2f} ms | {mine / theirs:.2f}x |")


if __name__ == "__main__":
    main()
