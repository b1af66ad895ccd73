"""JSON text to a region: the core's JSON source against json.loads then compact.

    python benchmarks/bench_json_input.py [--quick | --smoke] [--no-report]

For each file of ``../shared/data/json`` (a JSON Lines file as its lines):

- ``bale.compact_json(text)``: parsed in Rust, written by the core's
  ``JsonSource``, no Python object made;
- ``bale.compact(json.loads(text))``: the Python path it replaces (the same
  bytes: checked in the run);
- ``bale.compact(orjson.loads(text))`` and ``orjson.loads`` alone, and
  ``json.loads`` alone, for scale.

Then a ``bale.Writer`` fed each top-level element as text (``append_json``)
against ``append(json.loads(text))`` (the files checked equal), the path
``bale convert`` takes.

Conditions: the text is in memory (bytes); the GC is in its default state
(on) for every side (``compact`` and ``compact_json`` pause it inside
themselves, ``json.loads`` and ``orjson.loads`` do not: that is what each
costs a caller); turns interleaved, best of N. Writes the section "JSON
text to a region".
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import orjson

import bale
import common

JSON_DIR = os.path.join(os.path.dirname(common.HERE), "..", "shared", "data", "json")
TURNS = {"smoke": 1, "quick": 5, "full": 15}


def documents(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".ndjson"):
        return [line for line in data.splitlines() if line.strip()]
    return [data]


def elements(docs: list[bytes]) -> list[bytes]:
    """Top-level elements as text: a JSON Lines file's lines, an array's
    items, or the items of an object's first non-empty list (twitter's statuses)."""
    if len(docs) > 1:
        return docs
    value = json.loads(docs[0])
    if isinstance(value, dict):
        value = next((v for v in value.values() if isinstance(v, list) and v), [value])
    return [orjson.dumps(v) for v in value]


def write_file(path: str, items: list[bytes], via_json: bool) -> None:
    with bale.Writer(path) as w:
        for item in items:
            if via_json:
                w.append_json(item)
            else:
                w.append(json.loads(item))


def run(mode: str, plots_dir: str) -> common.Section:
    turns = TURNS[mode]
    files = sorted(f for f in os.listdir(JSON_DIR) if f.endswith((".json", ".ndjson")))
    if mode == "smoke":
        files = files[:2]
    rows, writer_rows, ratios = [], [], []
    for name in files:
        docs = documents(os.path.join(JSON_DIR, name))
        size = sum(map(len, docs))
        for d in docs:
            if bytes(bale.compact_json(d)) != bytes(bale.compact(json.loads(d))):
                sys.exit(f"{name}: compact_json's bytes differ from compact(json.loads)'s")
        t = common.best_interleaved({
            "compact_json": lambda: [bale.compact_json(d) for d in docs],
            "compact(json.loads)": lambda: [bale.compact(json.loads(d)) for d in docs],
            "compact(orjson.loads)": lambda: [bale.compact(orjson.loads(d)) for d in docs],
            "json.loads": lambda: [json.loads(d) for d in docs],
            "orjson.loads": lambda: [orjson.loads(d) for d in docs],
        }, turns, keep_results=True)
        r = t["compact_json"] / t["compact(json.loads)"]
        ratios.append(r)
        rows.append((name, common.fmt_bytes(size), common.fmt_time(t["compact_json"]),
                     common.fmt_time(t["compact(json.loads)"]), f"{r:.2f}x",
                     f"{t['compact_json'] / t['compact(orjson.loads)']:.2f}x",
                     common.fmt_time(t["json.loads"]), common.fmt_time(t["orjson.loads"]),
                     f"{size / t['compact_json'] / 1e6:.0f} MB/s"))
        items = elements(docs)
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a.bale"), os.path.join(tmp, "b.bale")
            write_file(a, items, True)
            write_file(b, items, False)
            with open(a, "rb") as fa, open(b, "rb") as fb:
                if fa.read() != fb.read():
                    sys.exit(f"{name}: append_json's file differs from append(json.loads)'s")
            tw = common.best_interleaved({
                "append_json": lambda: write_file(a, items, True),
                "append(json.loads)": lambda: write_file(b, items, False),
            }, max(1, turns // 3))
        writer_rows.append((name, f"{len(items):,}", common.fmt_time(tw["append_json"]),
                            common.fmt_time(tw["append(json.loads)"]),
                            f"{tw['append_json'] / tw['append(json.loads)']:.2f}x"))
    lines = [
        "JSON text (in memory) to a region: `bale.compact_json(text)` (parsed in Rust by jiter, written by",
        "the core's `JsonSource`, no Python object made) against `bale.compact(json.loads(text))`, whose",
        "bytes it gives (checked in this run), on each file of `../shared/data/json` (a JSON Lines file",
        f"as its lines). GC on for every side (its default state); turns interleaved, best of {turns}.",
        "",
        *common.table(
            ["file", "text", "compact_json", "compact(json.loads)", "ratio", "vs compact(orjson.loads)",
             "json.loads alone", "orjson.loads alone", "compact_json rate"],
            ["l", "r", "r", "r", "r", "r", "r", "r", "r"], rows),
        "",
        f"Worst ratio to the Python path: {max(ratios):.2f}x; best {min(ratios):.2f}x.",
        "",
        "`bale.Writer` fed each top-level element (twitter's statuses, the items of an array, a JSON Lines",
        "file's lines) as text: `append_json` (what `bale convert` now calls) against",
        "`append(json.loads(text))`; the two files are checked equal byte for byte. Includes writing",
        f"and fsyncing the file; best of {max(1, turns // 3)}.",
        "",
        *common.table(["file", "items", "append_json", "append(json.loads)", "ratio"],
                      ["l", "r", "r", "r", "r"], writer_rows),
    ]
    return common.Section("JSON text to a region", lines)


if __name__ == "__main__":
    sys.exit(common.bench_main(None, __doc__, run))
