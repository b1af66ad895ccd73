"""Writes the regions of this directory and ``expected.json``: what
``bale info`` and ``region_stats`` said about them (and about the golden
vectors in ``tests/vectors``) when they were made.

``expected.json`` was written by the implementation of ``region_stats``
that kept a hash set of every object (before issue 20, item 6);
``tests/unit/test_info_stats.py`` and the unit tests of
``crates/bale-core/src/stats.rs`` check that today's walk says the same.
Run it again only to add a region (``python tests/info_regions/make.py``);
the files are committed, so changes to the writer do not change them.
The entry of ``vectors/rows_columns.bale`` (added with ROWS_COLUMN) was
written by today's walk, whose old form the unit tests of ``stats.rs``
keep beside it; so were those of ``vectors/table.bale``,
``vectors/rows_columns.bale`` and ``vectors/table_int_widths.bale`` when a
table's column of ints that fit 32 bits became an INT32_LIST (each entry
made with ``describe``, the other entries and files left as they were),
and that of ``vectors/table_small_scalars.bale`` with SLOT32_COLUMN, and
that of ``vectors/table_repeated_strings.bale`` with STR_CODE_COLUMN. When
``bale info`` made its kind column as wide as the longest name, the
``info`` text of the entries with longer names was made again with
``describe`` (their ``stats`` unchanged).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import io
import json
import pathlib
import sys
from typing import NamedTuple

import bale

HERE = pathlib.Path(__file__).resolve().parent
VECTORS = HERE.parent / "vectors"


class Color(enum.Enum):
    RED = 1
    BLUE = 2


@dataclasses.dataclass(frozen=True)
class Item:
    name: str
    color: Color
    price: decimal.Decimal


class Point(NamedTuple):
    x: float
    y: float


def regions() -> dict[str, bale.Region]:
    words = [f"word-{i % 7}" * (1 + i % 3) for i in range(40)]
    shared_list = [1.5, 2.5, "shared text that is long"]
    shared_dict = {"k": shared_list, "n": 10**30}
    out: dict[str, bale.Region] = {}
    # Sharing kept: a list, a dict and a tuple referenced several times.
    out["shared"] = bale.compact(
        {"a": [shared_dict] * 5, "b": (shared_list, shared_list), "c": words, "d": [(1, 2), (1, 2)]}, share=True
    )
    # Cycles: a list holding itself, a dict holding a tuple that holds it.
    loop: list = [1, "x" * 20]
    loop.append(loop)
    d: dict = {"self": None}
    d["self"] = (d, [d])
    out["cyclic"] = bale.compact([loop, d, loop], share=True)
    # Records stored as a table (str columns, list columns, number columns).
    rows = [
        {"id": i, "name": words[i], "tags": words[: i % 4], "score": i / 3, "flag": i % 2 == 0, "none": None}
        for i in range(30)
    ]
    out["table"] = bale.compact({"rows": rows, "again": [dict(r) for r in rows[:3]]})
    # Streamed: row by row.
    path = HERE / "streamed.bale.tmp"
    with bale.Writer(str(path)) as w:
        for r in rows[:12]:
            w.append(r)
    out["streamed"] = bale.load(path.read_bytes())
    path.unlink()
    # Appended: the new root references data already there (SHARED).
    base = bale.compact({"xs": [1, 2, 3], "s": "a string of some length", "f": [0.1, None, 0.2]})
    out["appended"] = base.append((base.root, base.root["xs"], base.root, {"more": [base.root["xs"]]}))
    # Records and typed values; enum members referenced many times.
    items = [Item(words[i], Color.RED if i % 3 else Color.BLUE, decimal.Decimal(i) / 4) for i in range(10)]
    out["records"] = bale.compact(
        {
            "items": items,
            "points": [Point(i, -i) for i in range(5)],
            "when": [datetime.date(2020, 1, i + 1) for i in range(3)],
            "colors": [Color.RED, Color.BLUE, Color.RED],
        }
    )
    # Mixed scalars and containers without sharing.
    out["mixed"] = bale.compact(
        [
            {1, 2, 3},
            frozenset({"a", "b"}),
            b"bytes" * 10,
            bytearray(b"x" * 3),
            2**70,
            -(2**63),
            1 + 2j,
            [2**40, 2**41],
            [0.5, 1.5],
            (1, (2, (3, "deep" * 5))),
            {"x": {"y": {"z": words}}},
            [None, 1.0] * 3,
            ["é" * 10, "\u20ac" * 10, "\U0001f600" * 3, "x" * 65_536],
        ]
    )
    return out


def describe(path: pathlib.Path) -> dict[str, str]:
    """``region_stats`` (every shape) and ``bale info`` of the file at ``path``."""
    from bale import cli

    region = bale.open(str(path))
    stats = bale._bale.region_stats(region, top=1 << 30)
    text = io.StringIO()
    cli.info(str(path), False, text)
    lines = [line for line in text.getvalue().splitlines() if not line.startswith("file: ")]
    return {"stats": repr(stats), "info": "\n".join(lines)}


def cases() -> list[pathlib.Path]:
    return sorted(VECTORS.glob("*.bale")) + sorted(HERE.glob("*.bale"))


def main() -> None:
    for name, region in regions().items():
        region.save(str(HERE / f"{name}.bale"))
    expected = {f"{p.parent.name}/{p.name}": describe(p) for p in cases()}
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(expected)} regions described in {HERE / 'expected.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
