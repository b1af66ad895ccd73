"""CNF Table 1 and Figure 4: time to compact / serialize a binary tree, 2^11 ... 2^23 leaves.

    python benchmarks/bench_cnf_table1.py [--quick | --smoke] [--no-report]

For complete binary trees of 2-tuples with int leaves (``bintree``), times
``bale.compact`` against ``pickle.dumps`` (protocol 5),
``msgspec.msgpack.Encoder().encode`` and ``orjson.dumps`` (tuples become
arrays), and the way back: ``bale.thaw`` of the region's root against
``pickle.loads``, msgspec decode and ``orjson.loads`` (the last two give
lists, not tuples). pyarrow has no type for a recursive tree, so it is not
in this table. The formats take turns, best of several turns, each after
``gc.collect()``; the input tree is frozen out of the collector
(``gc.freeze()``) so that it is not rescanned between runs. Writes the section "Compaction of a binary tree" and
``plots/cnf_fig4_compaction.png``.
"""

from __future__ import annotations

import gc
import pickle
import sys

import msgspec
import orjson

import bale
import common
from bale._datagen import bintree

EXPONENTS = {"smoke": [11, 12], "quick": list(range(11, 19)), "full": list(range(11, 24))}
TARGET_EXP = 18  # the compaction and thaw targets are stated for a 2^18-leaf tree
ENCODERS = ("bale.compact", "pickle.dumps", "msgspec encode", "orjson.dumps")
DECODERS = ("bale.thaw", "pickle.loads", "pickle.loads, GC off", "msgspec decode", "orjson.loads")


def measure(depth: int, repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """Encode and decode times of a 2^depth-leaf tree, per format."""
    tree = bintree(depth)
    gc.collect()
    gc.freeze()
    try:
        encoder, decoder = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()
        region = bale.compact(tree)
        pickled = pickle.dumps(tree, protocol=5)
        packed = encoder.encode(tree)
        as_json = orjson.dumps(tree)
        if bale.thaw(region.root) != tree:
            raise SystemExit(f"2^{depth}: thaw does not give the tree back")
        # The formats take turns, so that each meets the same machine load.
        encode = common.best_interleaved({
            "bale.compact": lambda: bale.compact(tree),
            "pickle.dumps": lambda: pickle.dumps(tree, protocol=5),
            "msgspec encode": lambda: encoder.encode(tree),
            "orjson.dumps": lambda: orjson.dumps(tree),
        }, repeat)
        decode = common.best_interleaved({
            "bale.thaw": lambda: bale.thaw(region.root),
            "pickle.loads": lambda: pickle.loads(pickled),
            "pickle.loads, GC off": common.gc_off(lambda: pickle.loads(pickled)),
            "msgspec decode": lambda: decoder.decode(packed),
            "orjson.loads": lambda: orjson.loads(as_json),
        }, repeat)
    finally:
        gc.unfreeze()
    return encode, decode


def run(mode: str, plots_dir: str) -> common.Section:
    exps = EXPONENTS[mode]
    enc_rows, dec_rows = [], []
    enc_series: dict[str, tuple[list[int], list[float]]] = {name: ([], []) for name in ENCODERS}
    dec_series: dict[str, tuple[list[int], list[float]]] = {name: ([], []) for name in DECODERS}
    at_target: tuple[dict[str, float], dict[str, float]] | None = None
    for exp in exps:
        repeat = 15 if exp <= TARGET_EXP else 5 if exp <= 20 else 3
        encode, decode = measure(exp, repeat)
        for name, t in encode.items():
            enc_series[name][0].append(1 << exp)
            enc_series[name][1].append(t)
        for name, t in decode.items():
            dec_series[name][0].append(1 << exp)
            dec_series[name][1].append(t)
        enc_rows.append((f"2^{exp}", *(common.fmt_time(encode[n]) for n in ENCODERS),
                         common.fmt_ratio(encode["bale.compact"] / encode["pickle.dumps"]),
                         common.fmt_ratio(encode["bale.compact"] / encode["msgspec encode"])))
        dec_rows.append((f"2^{exp}", *(common.fmt_time(decode[n]) for n in DECODERS),
                         common.fmt_ratio(decode["bale.thaw"] / decode["pickle.loads, GC off"])))
        print("  ".join(enc_rows[-1]), "|", "  ".join(dec_rows[-1][1:]), flush=True)
        if exp == TARGET_EXP:
            at_target = (encode, decode)

    plot = common.line_plot(plots_dir, "cnf_fig4_compaction", "Compact / serialize a binary tree (CNF Fig. 4)",
                            "leaves", "seconds (best of runs)", enc_series, base2_x=True)
    plot_back = common.line_plot(plots_dir, "cnf_fig4_decode", "Thaw / deserialize a binary tree",
                                 "leaves", "seconds (best of runs)", dec_series, base2_x=True)
    source = "bench_cnf_table1"
    what = f"2^{TARGET_EXP}-leaf bintree"
    if at_target is not None:
        encode, decode = at_target
        targets = [
            common.ratio_target(f"compact, {what}", 0.25, encode["bale.compact"], encode["pickle.dumps"],
                                "pickle.dumps", source),
            common.ratio_target(f"compact, {what}", 1.0, encode["bale.compact"], encode["msgspec encode"],
                                "msgspec encode", source),
            # GC off for both: thaw turns it off inside itself.
            common.ratio_target(f"thaw, {what}, GC off for both", 1.0, decode["bale.thaw"],
                                decode["pickle.loads, GC off"], "pickle.loads", source),
        ]
    else:
        targets = [common.Target(f"compact and thaw, {what}", "<= 0.25x pickle, <= 1x msgspec, thaw <= 1x loads",
                                 f"not run at 2^{TARGET_EXP} in {mode} mode", source=source)]
    lines = [
        f"`python benchmarks/bench_cnf_table1.py{'' if mode == 'full' else ' --' + mode}`: complete binary trees "
        "of 2-tuples with int leaves. The formats take turns; best of 15 turns up to 2^18 leaves, 5 up to 2^20, 3 "
        "above, each after `gc.collect()`, the input frozen "
        "out of the collector. msgspec is `msgspec.msgpack.Encoder().encode`; orjson writes tuples as arrays. "
        "pyarrow has no type for a recursive tree and is left out.",
        "",
        "Encoding (ratios are bale's time / the other's):",
        "",
        *common.table(["leaves", *ENCODERS, "bale / pickle", "bale / msgspec"], ["l"] + ["r"] * 6, enc_rows),
        "",
        common.plot_line(plot, "compaction time against tree size"),
        "",
        "Decoding (`bale.thaw` of the region's root gives tuples back, as `pickle.loads` does; msgspec and "
        "orjson give lists). `bale.thaw` turns the GC off inside itself; the ratio is to `pickle.loads` with "
        "the GC off too (the plain `pickle.loads` column runs with it on, as a caller's would):",
        "",
        *common.table(["leaves", *DECODERS, "thaw / pickle.loads, GC off for both"], ["l"] + ["r"] * 6, dec_rows),
        "",
        common.plot_line(plot_back, "decoding time against tree size"),
    ]
    return common.Section("Compaction of a binary tree (CNF Table 1, Figure 4)", lines, targets, [plot, plot_back])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
