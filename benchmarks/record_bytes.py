"""Where the bytes of record corpora go, and what storing them by column could save (issue 21).

    python benchmarks/record_bytes.py

twitter.json and github_events.json miss the bytes target (<= 1.0x pickle for record-like
data) and are stored row by row: their records' key sequences differ (an optional
``retweeted_status``, ``possibly_sensitive`` or ``org``; eight kinds of ``payload``). This
prints, for them and for the sweep's nested records (stored as a tree of tables):

* **as stored**: bale's bytes against pickle's (protocol 5), and where bale's go, by kind
  (``region_stats``);
* **by column**: the same records *made regular* (each list of dicts given the union of its
  key sequences, a missing value filled with a copy of the first present one), made anew
  through JSON (so that no string object is held twice: a string met again is stored once,
  as a slot, never in a string column), compacted by today's writer, which then stores
  every list of dicts as a table. The data differ from the corpus, so the ratio is against
  pickle of the regular records; it shows what today's column kinds buy once the key
  sequences no longer stop them;
* **equal strings as one object**: the corpus with each string value made one object
  wherever it occurs, compacted by today's writer (which stores an object met again once):
  what storing equal strings once, whatever their objects, would save. The ratio is
  against pickle of the corpus as loaded (pickle stores an object met again once too, so
  of the interned records it would be smaller as well);
* **floors**: arithmetic on the corpus's own values, no region made. Each string costs its
  code units at CPython's width (read in place) and each dict row nothing. ``today`` prices
  the rest as today's column kinds do: a string of a column of one width code at 4 bytes
  of offset (or as a slot, if the column's slots are smaller), of a column of several
  widths as a slot (an inline slot, or 8 bytes and its units padded to a word); 8 bytes a
  None, bool, int or float; 4 a list. ``narrow`` prices them as column kinds that bale
  does not have would: one byte a None or bool, an int in its minimal bytes, every string
  at 4 bytes of offset; ``narrow, equal strings once`` counts the units of equal strings
  once. A string object met again has its units counted once in every floor (bale stores
  it once). Shapes, table headers and which keys a row lacks are not counted, so no layout
  made of the kinds a floor prices stores these values in fewer bytes.

Sizes are exact (no timing). It writes no report.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import sys
from collections import defaultdict
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bale  # noqa: E402
from bench_sweep import JSON_DIR, nested_records  # noqa: E402


def union_order(seqs: list[list[str]]) -> list[str]:
    """Keys of every sequence, each new one placed after the key it followed."""
    out: list[str] = []
    for seq in seqs:
        at = -1
        for k in seq:
            if k in out:
                at = out.index(k)
            else:
                at += 1
                out.insert(at, k)
    return out


def regular(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with one key sequence, down every column of dicts and of lists of dicts."""
    keys = union_order([list(r) for r in rows])
    first = {k: next(r[k] for r in rows if k in r) for k in keys}
    out = [{k: r[k] if k in r else copy.deepcopy(first[k]) for k in keys} for r in rows]
    for k in keys:
        cells = [r[k] for r in out]
        if all(isinstance(v, dict) and v for v in cells):
            for r, v in zip(out, regular(cells)):
                r[k] = v
        elif all(isinstance(v, list) for v in cells) and any(cells) and all(
            isinstance(x, dict) and x for v in cells for x in v
        ):
            made = iter(regular([x for v in cells for x in v]))
            for r in out:
                r[k] = [next(made) for _ in r[k]]
    return out


def width_code(s: str) -> int:
    """The string's width code (FORMAT.md, *Slots*): 0 ASCII, 1 Latin-1, 2 UCS-2, 3 UCS-4."""
    top = max(map(ord, s), default=0)
    return 0 if top < 0x80 else 1 if top < 0x100 else 2 if top < 0x10000 else 3


def units(s: str) -> int:
    """Bytes of the string's code units at its width."""
    return len(s) * (1, 1, 2, 4)[width_code(s)]


def slot_cost(s: str) -> int:
    """Bytes of the string as a slot: inline, or a slot and its units padded to a word."""
    return 8 if width_code(s) == 0 and len(s) <= 7 else 8 + pad8(units(s))


def pad8(n: int) -> int:
    return (n + 7) // 8 * 8


def floors(value: Any) -> tuple[int, int, int, int]:
    """(units of every string, the floors with today's kinds, narrow kinds, and narrow kinds
    storing equal strings once)."""
    strings: dict[tuple[str, ...], list[str]] = defaultdict(list)
    scalars: dict[str, int] = defaultdict(int)
    narrow_ints = 0
    keys: set[str] = set()
    todo: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while todo:
        x, path = todo.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                keys.add(k)
                todo.append((v, path + (k,)))
        elif isinstance(x, list):
            scalars["list"] += 1
            todo.extend((v, path) for v in x)
        elif isinstance(x, str):
            strings[path].append(x)
        elif isinstance(x, bool) or x is None:
            scalars["const"] += 1
        elif isinstance(x, int):
            scalars["number"] += 1
            narrow_ints += max(1, (x.bit_length() + 8) // 8)
        else:
            scalars["number"] += 1
            narrow_ints += 8
    objects = {id(s): s for col in strings.values() for s in col}
    all_units = sum(map(units, objects.values()))
    key_bytes = sum(slot_cost(k) for k in keys)
    today = key_bytes + all_units + 8 * (scalars["const"] + scalars["number"]) + 4 * scalars["list"]
    for col in strings.values():
        as_slots = sum(slot_cost(s) - units(s) for s in col)
        # A column of one width may be a STR_COLUMN: 4 bytes of offset a string.
        today += min(as_slots, 4 * len(col)) if len({width_code(s) for s in col}) == 1 else as_slots
    rest = key_bytes + sum(4 * len(c) for c in strings.values()) + scalars["const"] + narrow_ints
    rest += 4 * scalars["list"]
    once = sum(map(units, set(objects.values())))
    return all_units, today, rest + all_units, rest + once


def interned(x: Any, memo: dict[str, str]) -> Any:
    """`x` made anew with one object for each string value."""
    if isinstance(x, dict):
        return {k: interned(v, memo) for k, v in x.items()}
    if isinstance(x, list):
        return [interned(v, memo) for v in x]
    if isinstance(x, str):
        return memo.setdefault(x, x)
    return x


def kinds(region: bale.Region) -> str:
    """The five kinds that take the most bytes, and how many dicts are stored row by row."""
    stats = bale._bale.region_stats(region, top=0)["kinds"]
    parts = sorted(((b, k) for k, (_, b) in stats.items() if b), reverse=True)
    dicts = sum(n for k, (n, _) in stats.items() if k.startswith("dicts"))
    return ", ".join(f"{k} {b:,}" for b, k in parts[:5]) + f"; {dicts:,} dicts row by row"


def main() -> None:
    corpora: dict[str, list[dict[str, Any]]] = {}
    with open(os.path.join(JSON_DIR, "twitter.json")) as f:
        corpora["twitter.json statuses"] = json.load(f)["statuses"]
    with open(os.path.join(JSON_DIR, "github_events.json")) as f:
        corpora["github_events.json"] = json.load(f)
    corpora["sweep's nested records, 2,000"] = nested_records(2_000)
    for name, rows in corpora.items():
        p = len(pickle.dumps(rows, protocol=5))
        region = bale.compact(rows)
        reg = json.loads(json.dumps(regular(rows)))
        reg_region = bale.compact(reg)
        reg_p = len(pickle.dumps(reg, protocol=5))
        once_region = bale.compact(interned(rows, {}))
        all_units, today, narrow, narrow_once = floors(rows)
        print(f"## {name}: {len(rows)} records, pickle {p:,} bytes, string units {all_units:,}")
        print(f"  as stored: {region.nbytes:>9,}  {region.nbytes / p:.2f}x  ({kinds(region)})")
        print(f"  by column (made regular): {reg_region.nbytes:>9,}  {reg_region.nbytes / reg_p:.2f}x of its own pickle "
              f"{reg_p:,}  ({kinds(reg_region)})")
        print(f"  equal strings as one object: {once_region.nbytes:>9,}  {once_region.nbytes / p:.2f}x  "
              f"({kinds(once_region)})")
        print(f"  floor, today's kinds: {today:>9,}  {today / p:.2f}x")
        print(f"  floor, narrow kinds:  {narrow:>9,}  {narrow / p:.2f}x")
        print(f"  floor, narrow kinds, equal strings once: {narrow_once:>9,}  {narrow_once / p:.2f}x")


if __name__ == "__main__":
    main()
