"""packed-data Table 1: four tree traversals, on views, on native tuples, and thaw-then-traverse.

    python benchmarks/bench_packed.py [--quick | --smoke] [--no-report]

Trees of 2^1 ... 2^20 leaves (2^16 with ``--quick``). The same plain Python
functions run on every representation:

- *sum*: the sum of the leaves of a bintree (2-tuples, int leaves), by
  recursion (``a, b = node``);
- *eval*: evaluating an arithmetic AST of nested tuples ``(op, left,
  right)``, op "+" or "-" by level, int leaves 0-9;
- *right-most*: the right-most leaf of the bintree, following ``node[1]``
  (touches depth nodes, not the tree: packed-data's case for indirections);
- *increment*: a new tree with every leaf plus one, built as native tuples.

Representations: *native* (the tuples themselves); *views* (the functions
walk ``region.root``, a ``TupleView``; the region is made before timing);
*thaw + traverse* (``bale.thaw(region.root)`` and then the function on the
native copy, both timed). For *increment* there is also *views -> region*:
the new tree built from the views and then ``bale.compact``-ed, i.e. a
functional update whose result is again a region. Best per-call time
(autoranged loops, best of 3). Writes the section "Tree traversals" and
``plots/packed_table1.png``.
"""

from __future__ import annotations

import gc
import sys

import bale
import common
from bale._datagen import bintree

EXPONENTS = {"smoke": [1, 2, 3], "quick": list(range(1, 17)), "full": list(range(1, 21))}
TABLE_EXPONENTS = (1, 4, 8, 12, 16, 20)
OPERATIONS = ("sum", "eval", "right-most", "increment")
REPRESENTATIONS = ("native", "views", "thaw + traverse")


def leaf_sum(node) -> int:
    if type(node) is int:
        return node
    left, right = node
    return leaf_sum(left) + leaf_sum(right)


def evaluate(node) -> int:
    if type(node) is int:
        return node
    op, left, right = node
    if op == "+":
        return evaluate(left) + evaluate(right)
    return evaluate(left) - evaluate(right)


def rightmost(node) -> int:
    while type(node) is not int:
        node = node[1]
    return node


def incremented(node):
    if type(node) is int:
        return node + 1
    left, right = node
    return (incremented(left), incremented(right))


def arithmetic_ast(depth: int):
    """A complete AST with 2^depth int leaves; "+" at even levels from the bottom, "-" at odd ones."""
    level: list = [i % 10 for i in range(1 << depth)]
    for d in range(depth):
        op = "+" if d % 2 == 0 else "-"
        level = [(op, level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def measure(depth: int) -> dict[str, dict[str, float]]:
    """{operation: {representation: seconds per call}} for trees of 2^depth leaves."""
    tree, ast = bintree(depth), arithmetic_ast(depth)
    tree_region, ast_region = bale.compact(tree), bale.compact(ast)
    tree_view, ast_view = tree_region.root, ast_region.root
    # Same answers on every representation before anything is timed.
    assert leaf_sum(tree_view) == leaf_sum(tree)
    assert evaluate(ast_view) == evaluate(ast)
    assert rightmost(tree_view) == rightmost(tree) == (1 << depth) - 1
    assert incremented(tree_view) == incremented(tree)
    gc.collect()
    gc.freeze()  # the inputs live throughout: keep collections from rescanning them
    try:
        t = common.per_call
        out = {
            "sum": {"native": t(lambda: leaf_sum(tree), 3),
                    "views": t(lambda: leaf_sum(tree_view), 3),
                    "thaw + traverse": t(lambda: leaf_sum(bale.thaw(tree_view)), 3)},
            "eval": {"native": t(lambda: evaluate(ast), 3),
                     "views": t(lambda: evaluate(ast_view), 3),
                     "thaw + traverse": t(lambda: evaluate(bale.thaw(ast_view)), 3)},
            "right-most": {"native": t(lambda: rightmost(tree), 3),
                           "views": t(lambda: rightmost(tree_view), 3),
                           "thaw + traverse": t(lambda: rightmost(bale.thaw(tree_view)), 3)},
            "increment": {"native": t(lambda: incremented(tree), 3),
                          "views": t(lambda: incremented(tree_view), 3),
                          "thaw + traverse": t(lambda: incremented(bale.thaw(tree_view)), 3),
                          "views -> region": t(lambda: bale.compact(incremented(tree_view)), 3)},
        }
    finally:
        gc.unfreeze()
    return out


def run(mode: str, plots_dir: str) -> common.Section:
    exps = EXPONENTS[mode]
    results = {}
    for exp in exps:
        results[exp] = measure(exp)
        print(f"2^{exp}: " + "; ".join(f"{op} " + " ".join(common.fmt_time(v) for v in r.values())
                                     for op, r in results[exp].items()), flush=True)
    shown = [e for e in exps if e in TABLE_EXPONENTS] or exps
    if exps[-1] not in shown:
        shown.append(exps[-1])
    lines = [
        f"`python benchmarks/bench_packed.py{'' if mode == 'full' else ' --' + mode}`: the same Python functions "
        "on native tuples, on a region's `TupleView`s, and on `bale.thaw` of the region (thaw timed). *increment* "
        "builds a native tree; *views -> region* then compacts it (the result is a region again). Best "
        "per-call time; *views / native* is the ratio of the two.",
        "",
    ]
    panels: dict[str, dict[str, tuple[list[int], list[float]]]] = {}
    for op in OPERATIONS:
        reps = list(results[exps[0]][op])
        panels[op] = {r: ([1 << e for e in exps], [results[e][op][r] for e in exps]) for r in reps}
        rows = [(f"2^{e}", *(common.fmt_time(results[e][op][r]) for r in reps),
                 common.fmt_ratio(results[e][op]["views"] / results[e][op]["native"])) for e in shown]
        lines += [f"**{op}**", "", *common.table(["leaves", *reps, "views / native"], ["l"] + ["r"] * (len(reps) + 1),
                                                 rows), ""]
    plot = common.panel_plot(plots_dir, "packed_table1", "Tree traversals (packed-data Table 1)", "leaves",
                             "seconds per call", panels)
    lines.append(common.plot_line(plot, "four traversals against tree size"))
    return common.Section("Tree traversals (packed-data Table 1)", lines, [], [plot])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
