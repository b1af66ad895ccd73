"""The papers' tables that need no second process: CNF Tables 1 and 2 (with
Figure 4), packed-data's Table 1, and store's record-vector benchmark.

    python benchmarks/bench_tables.py [--max-exp 23] [--quick] [--no-report]

1. CNF Table 1 / Figure 4: time to compact (bale) or serialize (pickle
   protocol 5, msgspec msgpack) a bintree of 2^11 ... 2^max-exp leaves,
   plotted on log axes (benchmarks/plots/cnf_table1.png).
2. CNF Table 2: bytes for bintree, pointtree and tweet-like records, and for
   each file of ../shared/data/json: bale, pickle, msgspec, the JSON text.
3. packed-data Table 1: on trees of 2^1 ... 2^20 leaves, the sum of the
   leaves, evaluating an arithmetic AST, the right-most leaf, and building a
   new tree with every leaf incremented; each on bale views, on native
   tuples, and thaw-then-native (the thaw is timed). The new tree is built
   natively in all three (bale views are read-only), then compacted for the
   bale column only when ``--compact-result`` is given.
4. store's benchmark: a million (int64, uint8, float64) records as a list
   of tuples: encode and decode with bale (compact / thaw), pickle, msgspec,
   ``struct`` (one buffer), and a numpy structured array (tobytes /
   frombuffer + tolist).

Writes the section "Paper tables" of benchmarks/REPORT.md and its plot.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import pathlib
import pickle
import random
import struct
import sys

import msgspec

import bale
import common
from bale._datagen import bintree, tweets
from bale._fmt import duration as fmt_time
from common import best

HERE = pathlib.Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "shared" / "data" / "json"
PLOTS = HERE / "plots"


def pointtree(depth: int):
    level: list = [(float(i), float(-i)) for i in range(1 << depth)]
    for _ in range(depth):
        level = [(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


# --- 1. CNF Table 1 ----------------------------------------------------------


def table1(max_exp: int, rows: list, plot: dict) -> None:
    enc = msgspec.msgpack.Encoder()
    for exp in range(11, max_exp + 1, 2 if max_exp > 17 else 1):
        tree = bintree(exp)
        reps = 5 if exp <= 18 else 2
        t = {
            "bale": best(lambda: bale.compact(tree), reps),
            "pickle": best(lambda: pickle.dumps(tree, protocol=5), reps),
            "msgspec": best(lambda: enc.encode(tree), reps),
        }
        for k, v in t.items():
            plot.setdefault(k, []).append((1 << exp, v))
        rows.append((f"2^{exp}", fmt_time(t["bale"]), fmt_time(t["pickle"]), fmt_time(t["msgspec"]),
                     f"{t['bale'] / t['pickle']:.2f}x", f"{t['bale'] / t['msgspec']:.2f}x"))
        print(" ".join(rows[-1]), flush=True)
        del tree


def draw(plot: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in plot.items():
        xs, ys = zip(*points)
        ax.plot(xs, [y * 1e3 for y in ys], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("leaves")
    ax.set_ylabel("ms")
    ax.set_title("Compacting / serializing a binary tree (CNF Table 1)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    path.parent.mkdir(exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --- 2. CNF Table 2 ----------------------------------------------------------


def table2(n_records: int, depth: int, rows: list) -> None:
    enc = msgspec.msgpack.Encoder()
    datasets = [
        (f"bintree 2^{depth}", bintree(depth), None),
        (f"pointtree 2^{depth}", pointtree(depth), None),
        (f"{n_records:,} tweet-like records", tweets(n_records), None),
    ]
    for path in sorted(CORPUS.glob("*.json")):
        datasets.append((path.name, json.loads(path.read_text(encoding="utf-8")), path.stat().st_size))
    for label, value, json_size in datasets:
        b = bale.compact(value).nbytes
        p = len(pickle.dumps(value, protocol=5))
        m = len(enc.encode(value))
        j = json_size if json_size is not None else len(json.dumps(value, separators=(",", ":")))
        rows.append((label, f"{b:,}", f"{p:,}", f"{m:,}", f"{j:,}", f"{b / p:.2f}x", f"{b / m:.2f}x"))


# --- 3. packed-data Table 1 --------------------------------------------------


def ast(depth: int, rng: random.Random):
    """A full arithmetic AST: ("+" | "*", left, right) with int leaves."""
    if depth == 0:
        return rng.randrange(1, 4)
    return (rng.choice("+*"), ast(depth - 1, rng), ast(depth - 1, rng))


def evaluate(node) -> int:
    if isinstance(node, int):
        return node
    op, a, b = node[0], evaluate(node[1]), evaluate(node[2])
    return (a + b if op == "+" else a * b) % 1_000_003


def leaf_sum(node) -> int:
    total, stack = 0, [node]
    while stack:
        n = stack.pop()
        for c in (n[0], n[1]):
            if isinstance(c, int):
                total += c
            else:
                stack.append(c)
    return total


def rightmost(node):
    while not isinstance(node, int):
        node = node[1]
    return node


def increment(node):
    if isinstance(node, int):
        return node + 1
    return (increment(node[0]), increment(node[1]))


def table3(max_exp: int, rows: list) -> None:
    sys.setrecursionlimit(10_000)
    rng = random.Random(5)
    for exp in (1, 5, 10, 15, 20):
        if exp > max_exp:
            break
        tree = bintree(exp)
        expr = ast(min(exp, 18), rng)
        region, expr_region = bale.compact(tree), bale.compact(expr)
        view, expr_view = region.root, expr_region.root
        reps = 5 if exp <= 15 else 2
        ops = [
            ("sum", leaf_sum, tree, view),
            ("eval AST" + (" (2^18)" if exp > 18 else ""), evaluate, expr, expr_view),
            ("right-most leaf", rightmost, tree, view),
            ("increment leaves", increment, tree, view),
        ]
        for name, op, native, v in ops:
            assert op(native) == op(v) or name == "increment leaves"
            t_view = best(lambda: op(v), reps)
            t_native = best(lambda: op(native), reps)
            t_thaw = best(lambda: op(bale.thaw(v)), reps)
            rows.append((f"2^{exp}", name, fmt_time(t_view), fmt_time(t_native), fmt_time(t_thaw),
                         f"{t_view / t_native:.2f}x"))


# --- 4. store's benchmark ----------------------------------------------------


def table4(n: int, rows: list) -> None:
    import numpy as np

    rng = random.Random(9)
    recs = [(rng.getrandbits(63), rng.randrange(256), rng.random()) for _ in range(n)]
    enc, dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()
    fmt = struct.Struct("<qBd")
    dtype = np.dtype([("a", "<i8"), ("b", "u1"), ("c", "<f8")])

    def struct_encode():
        buf = bytearray(fmt.size * n)
        for i, r in enumerate(recs):
            fmt.pack_into(buf, i * fmt.size, *r)
        return buf

    packed = struct_encode()
    region = bale.compact(recs)
    pickled = pickle.dumps(recs, protocol=5)
    mp = enc.encode(recs)
    arr_bytes = np.array(recs, dtype=dtype).tobytes()
    cases = [
        ("bale (compact / thaw)", lambda: bale.compact(recs), lambda: bale.thaw(region.root), region.nbytes),
        ("pickle", lambda: pickle.dumps(recs, protocol=5), lambda: pickle.loads(pickled), len(pickled)),
        ("msgspec msgpack", lambda: enc.encode(recs), lambda: dec.decode(mp), len(mp)),
        ("struct (one buffer)", struct_encode, lambda: list(fmt.iter_unpack(packed)), len(packed)),
        ("numpy structured array", lambda: np.array(recs, dtype=dtype).tobytes(),
         lambda: np.frombuffer(arr_bytes, dtype=dtype).tolist(), len(arr_bytes)),
    ]
    for name, encode, decode, size in cases:
        rows.append((name, fmt_time(best(encode, 3)), fmt_time(best(decode, 3)), f"{size / n:.1f}"))
    root = region.root
    keys = [random.Random(1).randrange(n) for _ in range(100_000)]
    per_read = best(lambda: [root[k][2] for k in keys], 3) / len(keys)
    rows.append(("bale view, one field of a random record", fmt_time(per_read), "", ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-exp", type=int, default=23)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args(argv)
    max_exp = 14 if args.quick else args.max_exp
    n = 20_000 if args.quick else 1_000_000
    t1, plot, t2, t3, t4 = [], {}, [], [], []
    table1(max_exp, t1, plot)
    table2(n, min(max_exp, 20), t2)
    table3(min(max_exp, 20), t3)
    table4(n, t4)
    lines = [
        f"`python benchmarks/bench_tables.py{' --quick' if args.quick else ''}`; best of 2-5 runs.",
        "",
        "### CNF Table 1: compacting a bintree vs serializing it",
        "",
        *common.table(["leaves", "bale", "pickle", "msgspec", "bale/pickle", "bale/msgspec"], ["l"] + ["r"] * 5, t1),
        "",
        "![CNF Table 1](plots/cnf_table1.png)",
        "",
        "### CNF Table 2: bytes",
        "",
        *common.table(["data", "bale", "pickle", "msgspec", "JSON", "bale/pickle", "bale/msgspec"], ["l"] + ["r"] * 6, t2),
        "",
        "### packed-data Table 1: tree operations (views are read in Python)",
        "",
        *common.table(["leaves", "operation", "bale views", "native", "thaw + native", "views/native"], ["l", "l", "r", "r", "r", "r"], t3),
        "",
        f"### store's benchmark: {n:,} (int64, uint8, float64) records",
        "",
        *common.table(["encoding", "encode", "decode", "bytes/record"], ["l", "r", "r", "r"], t4),
    ]
    print("\n".join(lines))
    if not args.no_report:
        # Plots belong to the report: a run that does not write it leaves them alone.
        draw(plot, PLOTS / "cnf_table1.png")
        common.write_section("Paper tables", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
