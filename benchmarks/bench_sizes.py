"""CNF Table 2: bytes of a region against the serialized forms of the same data.

    python benchmarks/bench_sizes.py [--quick | --smoke] [--no-report]

Data: a binary tree of 2-tuples with int leaves (bintree), the same tree
with (x, y) float-pair leaves (pointtree), tweet-like records, and each file
of ``../shared/data/json`` (real-world JSON, parsed with orjson; the
``.ndjson`` file is one value per line, read as a list). For each: the
region's size (``Region.nbytes``, header included), ``pickle.dumps``
(protocol 5), msgspec MessagePack, orjson, and a pyarrow IPC file where the
data is a list of records with one schema (the tweets). Writes the section
"Sizes" and ``plots/cnf_table2_sizes.png``.
"""

from __future__ import annotations

import os
import pickle
import sys

import msgspec
import orjson
import pyarrow as pa

import bale
import common
from bale._datagen import bintree, tweets
from bench_latency import pointtree

JSON_DIR = os.path.join(os.path.dirname(common.HERE), "..", "shared", "data", "json")
SIZES = {"smoke": (10, 1_000), "quick": (16, 100_000), "full": (20, 1_000_000)}
FORMATS = ("bale", "pickle", "msgspec", "orjson", "pyarrow IPC")


def arrow_ipc_size(records: list[dict]) -> int:
    table = pa.Table.from_pylist(records)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().size


def read_json_file(path: str):
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".ndjson"):
        return [orjson.loads(line) for line in raw.splitlines() if line.strip()], len(raw)
    return orjson.loads(raw), len(raw)


def sizes_of(obj, arrow: bool) -> dict[str, int | None]:
    return {
        "bale": bale.compact(obj).nbytes,
        "pickle": len(pickle.dumps(obj, protocol=5)),
        "msgspec": len(msgspec.msgpack.encode(obj)),
        "orjson": len(orjson.dumps(obj)),
        "pyarrow IPC": arrow_ipc_size(obj) if arrow else None,
    }


def run(mode: str, plots_dir: str) -> common.Section:
    depth, n = SIZES[mode]
    datasets: list[tuple[str, object, bool, str]] = [
        (f"bintree 2^{depth}", bintree(depth), False, ""),
        (f"pointtree 2^{depth}", pointtree(depth), False, ""),
        (f"tweets {n:,}", tweets(n), True, ""),
    ]
    missing = not os.path.isdir(JSON_DIR)
    if not missing:
        for name in sorted(os.listdir(JSON_DIR)):
            if name.endswith((".json", ".ndjson")):
                obj, file_bytes = read_json_file(os.path.join(JSON_DIR, name))
                datasets.append((name, obj, False, common.fmt_bytes(file_bytes)))
    rows, results = [], {}
    for label, obj, arrow, original in datasets:
        got = sizes_of(obj, arrow)
        results[label] = got
        rows.append((label, original, *("n/a" if got[f] is None else f"{got[f]:,}" for f in FORMATS),
                     common.fmt_ratio(got["bale"] / got["pickle"]), common.fmt_ratio(got["bale"] / got["msgspec"])))
        print("  ".join(rows[-1]), flush=True)

    labels = list(results)
    plot = common.bar_plot(plots_dir, "cnf_table2_sizes", "Bytes relative to pickle (CNF Table 2)",
                           "size / pickle size", labels,
                           {f: [(results[k][f] or 0) / results[k]["pickle"] for k in labels]
                            for f in FORMATS})
    source = "bench_sizes"
    tw, bt = results[f"tweets {n:,}"], results[f"bintree 2^{depth}"]
    targets = [
        common.Target(f"bytes, {n:,} tweet-like records", "<= 1.0x pickle", common.fmt_bytes(tw["bale"]),
                      f"{common.fmt_bytes(tw['pickle'])} (pickle)", common.fmt_ratio(tw["bale"] / tw["pickle"]),
                      tw["bale"] <= tw["pickle"], source),
        common.Target(f"bytes, 2^{depth}-leaf bintree", "<= 2.0x pickle", common.fmt_bytes(bt["bale"]),
                      f"{common.fmt_bytes(bt['pickle'])} (pickle)", common.fmt_ratio(bt["bale"] / bt["pickle"]),
                      bt["bale"] <= 2 * bt["pickle"], source),
    ]
    lines = [
        f"`python benchmarks/bench_sizes.py{'' if mode == 'full' else ' --' + mode}`: bytes of each form. "
        "bale is `Region.nbytes` (64-byte header included); pickle is protocol 5; msgspec is MessagePack; "
        "pyarrow is an IPC file of `Table.from_pylist`, only for lists of records with one schema. The JSON "
        "files are real data from `../shared/data/json` (\"file\" is their size on disk, as formatted there).",
        "",
        *common.table(["data", "file", *FORMATS, "bale / pickle", "bale / msgspec"],
                      ["l", "r"] + ["r"] * (len(FORMATS) + 2), rows),
        "",
        common.plot_line(plot, "bytes relative to pickle"),
    ]
    if missing:
        lines += ["", f"The JSON corpora were not found at `{JSON_DIR}`; their rows are missing."]
    return common.Section("Sizes (CNF Table 2)", lines, targets, [plot])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
