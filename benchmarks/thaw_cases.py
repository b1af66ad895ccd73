"""Thaw against pickle.loads on the cases the string memo, the number path and shape keys were changed for.

    python benchmarks/thaw_cases.py
    PYTHONPATH=OTHER_SITE python benchmarks/thaw_cases.py   # another build (pip install --target)

Each case times `bale.thaw` and `pickle.loads` (protocol 5) on the same
value, best of 15, taking turns (`common.best_interleaved`), the collector
disabled for both; a small record is timed per call. It prints a table and writes no report (the
sweep, `bench_sweep.py`, is the suite's measure of these shapes).
"""

from __future__ import annotations

import gc
import pickle
import random

from bench_sweep import hetero_dicts
from common import best_interleaved

import bale


def cases() -> dict[str, object]:
    rng = random.Random(3)
    letters = "abcdefghijklmnop"
    vocab = ["w" + "".join(rng.choice(letters) for _ in range(rng.randrange(7, 63))) for _ in range(2000)]
    return {
        "200,000 distinct strings of 8-64": ["s" + "".join(rng.choice(letters) for _ in range(rng.randrange(7, 63)))
                                             for _ in range(200_000)],
        "200,000 words of a 2,000-word vocabulary": [rng.choice(vocab) for _ in range(200_000)],
        "300,000 ints in (2^64, 2^100)": [rng.randrange((1 << 64) + 1, 1 << 100) for _ in range(300_000)],
        # The sweep's generator: almost every dict has a key sequence of its
        # own, so its shape's keys come from the string memo.
        "200,000 dicts of 3-8 of 30 keys (the sweep's)": hetero_dicts(200_000),
    }


def turns(a, b, repeat: int = 15) -> tuple[float, float]:
    best = best_interleaved({"bale": a, "pickle": b}, repeat)
    return best["bale"], best["pickle"]


def main() -> None:
    rows = []
    gc.disable()
    for name, value in cases().items():
        region, pickled = bale.compact(value), pickle.dumps(value, protocol=5)
        a, b = turns(lambda: bale.thaw(region.root), lambda: pickle.loads(pickled))
        rows.append((name, f"{a * 1e3:.2f} ms", f"{b * 1e3:.2f} ms", f"{a / b:.2f}x"))
    record = {"name": "Ada Lovelace", "tags": ["x", "y"], "scores": [0.5, 0.25], "id": 42}
    view, pickled = bale.compact(record).root, pickle.dumps(record, protocol=5)
    n = 20_000

    def many(f):
        return lambda: [f() for _ in range(n)]

    a, b = turns(many(lambda: bale.thaw(view)), many(lambda: pickle.loads(pickled)), 10)
    rows.append(("one 4-field record, per call", f"{a / n * 1e9:.0f} ns", f"{b / n * 1e9:.0f} ns", f"{a / b:.2f}x"))
    gc.enable()
    print(f"{'case':<46} {'thaw':>10} {'pickle.loads':>13} {'ratio':>7}")
    for r in rows:
        print(f"{r[0]:<46} {r[1]:>10} {r[2]:>13} {r[3]:>7}")
    print("\nbest of 15 (the record: of 10 runs of 20,000 calls), taking turns, GC disabled for both.")


if __name__ == "__main__":
    main()
