"""Writes the committed seed corpora of the two fuzzers (not a test module).

    PYTHONHASHSEED=0 .venv/bin/python tests/adversarial/make_seeds.py

* ``crates/bale-core/fuzz/seeds/``: the golden vectors (``tests/vectors``,
  ``tests/vectors/read_only``) and the regions below, for ``make fuzz-core``;
* ``tests/adversarial/seeds/``: the regions below and the read-only
  vectors, for ``make fuzz-binding``.

Each seed is one whole region, small (a few KB at most) so that libFuzzer's
input length limit stays low and every run is fast. The regions cover each
kind of stored value: shared and cyclic regions, grown ones (appends), the
columnar list forms, number lists, big ints, typed scalars, records, sets
and dicts small (linear search), large (hash index) and of key ids. File names are the
content's SHA-1, as libFuzzer names corpus entries. A set's order follows
its strings' hashes: without ``PYTHONHASHSEED=0`` its seed changes name
from one run to the next.
"""

from __future__ import annotations

import array
import collections
import dataclasses
import datetime as dt
import decimal
import enum
import fractions
import hashlib
import os
import pathlib
import shutil
import struct
import typing
import uuid

import bale

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORE_SEEDS = ROOT / "crates" / "bale-core" / "fuzz" / "seeds"
BINDING_SEEDS = ROOT / "tests" / "adversarial" / "seeds"


@dataclasses.dataclass
class SeedRecord:
    a: int
    b: object = None


class SeedPoint(typing.NamedTuple):
    x: float
    y: str


class SeedColor(enum.Enum):
    RED = 1
    BLUE = "blue"


def regions():
    out = []

    def add(value, **kw):
        out.append(bytes(bale.compact(value, **kw)))

    add({"a": 1, "b": [1, 2, 3], "c": "hello world", "d": None, "e": True, "f": 2.5, "g": -0.0})
    add({f"key{i}": i * 3 for i in range(20)})
    add({1: "a", 2.5: "b", (1, 2): "c", None: "d", b"x": "e", frozenset({1}): "f", 10**30: {"n": 1}, -7: (), "\xe9": "\xfc", 2**63: 1})
    add([{"id": i, "name": f"user{i}", "tags": ["a", "b"][: i % 3], "score": i / 7} for i in range(12)])
    add({"set": set(range(12)) | {"a", 2.5, (1, 2)}, "fs": frozenset({1, 2, 3}), "small": {None, b"b"}})
    add([[1, [2, [3, [4, (5, 6, (7,))]]]], [], (), {}, set(), frozenset()])
    add(["ascii string long enough", "latin \xe9" * 3, "bmp \u20ac \u2211", "astral \U0001f600", "\ud800", "", "x" * 70])
    add([2**70, -(2**100), 2**62, 2**63, 10**40, 0, -1, 1.5, float("nan"), float("inf"), 1e-310, 1 + 2j, b"", b"b\x00\xff"])
    add({"ints": list(range(-3, 40)), "floats": [i / 3 for i in range(20)], "strs": [str(i) for i in range(20)], "lists": [[i] * (i % 3) for i in range(12)]})
    add([(i, i + 1) for i in range(10)])
    x = [1, "shared string value", (2.5, None)]
    add([x, x, {"k": x}], share=True)
    me = []
    me.append(me)
    me.append({"self": me, "n": 1})
    add(me, share=True)
    r = bale.compact([3, 2, 1])
    for i in range(3):
        r = r.append((i, f"item {i}", r.root))
    out.append(bytes(r))
    add(
        {
            "date": dt.date(2020, 2, 29),
            "dt": dt.datetime(2021, 11, 7, 1, 30, fold=1, tzinfo=dt.timezone(dt.timedelta(hours=-3), "BRT")),
            "t": dt.time(23, 59, 1, 5),
            "td": dt.timedelta(-2, 7, 9),
            "dec": decimal.Decimal("-1.25E-9"),
            "uuid": uuid.UUID(int=2**100 + 7),
            "range": range(5, 500, 9),
            "arr": array.array("d", [1.5, -2.0]),
            "keys": {dt.date(2000, 1, 1): 1, uuid.UUID(int=3): 2},
        }
    )
    add(
        {
            "fractions": [fractions.Fraction(1, 3), fractions.Fraction(-(2**70), 3**40), fractions.Fraction(5)],
            "paths": [pathlib.PurePosixPath("/a/b"), pathlib.PosixPath("x"), pathlib.PureWindowsPath("C:/x")],
            "keys": {fractions.Fraction(1, 2): 1, pathlib.PurePosixPath("k"): 2, 0.25: 3},
        }
    )
    add(
        {
            "ordered": collections.OrderedDict([("b", 1), ("a", [2])]),
            "counter": collections.Counter("abracadabra"),
            "default": collections.defaultdict(list, {"k": [1]}),
        }
    )
    add([SeedRecord(i, [i, str(i)]) for i in range(4)] + [SeedPoint(1.5, "p"), SeedColor.RED, SeedColor.BLUE])
    # A table's columns of ints: 32-bit where every int fits (an odd row count pads them), else 64.
    add([{"n": i - 2, "edge": -(2**31) + i, "wide": 2**31 + i, "ids": [i, -i]} for i in range(5)])
    # A table's columns of None, bools and small ints: 32-bit cells (SLOT32_COLUMN), and one past 28 bits.
    add([{"flag": i % 2 == 0, "opt": None if i % 2 else -i, "past": 2**28 if i == 4 else None} for i in range(5)])
    # A table's columns of repeated strings: codes into a dictionary (STR_CODE_COLUMN), inline and stored.
    add([{"tag": ["red", "green", "blue"][i % 3], "city": ["Oslo fjord", "Bergen\xe9"][i % 2], "n": i} for i in range(31)])
    # Past 32 key sequences, dicts of key ids (ID_DICT) over a growing key table.
    add([{f"k{i}": i} for i in range(32)] + [{f"k{(i * 7) % 40}": i, "\xe9": None, f"k{i % 3}": [i]} for i in range(12)])
    out.append(store_value_with_references())
    try:
        import numpy as np

        add({"np": np.arange(6, dtype=np.int32).reshape(2, 3), "s": np.float32(2.5)})
    except ImportError:
        pass
    return out


def store_value_with_references() -> bytes:
    """A store value that references another segment (EXTERN objects), as a
    region of its own: its segment's bytes up to the value's end under a
    header naming its root. The store refuses to export such a value
    (`bytes()` raises), since no reader outside it can follow the
    references; a fuzzer should still meet them."""
    import tempfile

    from bale import _store

    with tempfile.TemporaryDirectory() as d, bale.Store(os.path.join(d, "s")) as st:
        st.put("a", {"x": [1, 2], "y": {"z": "w"}}, label="A")
        st.put("b", [st["a"], st["a"]["x"], {"n": 1, "y": st["a"]["y"]}], label="B")
        seg, end, root, flags = st._live_entry("b")
        data = bytearray((pathlib.Path(d) / "s" / _store._segment_name(seg)).read_bytes()[:end])
    # The header as FORMAT.md gives it: length, root, checksum, flags.
    struct.pack_into("<QQQI", data, 16, end, root, 0, flags)
    struct.pack_into("<Q", data, 32, bale._bale._xxh3(bytes(data)))
    return bytes(data)


def write(dirpath: pathlib.Path, blobs) -> None:
    if dirpath.exists():
        shutil.rmtree(dirpath)
    dirpath.mkdir(parents=True)
    for b in blobs:
        (dirpath / hashlib.sha1(b).hexdigest()).write_bytes(b)


def main() -> None:
    made = regions()
    for b in made:
        try:
            bale.load(b, verify=True)
        except bale.FormatError as e:
            # The store value's bytes: valid, but only its store reads them.
            if "only that store reads this value" not in str(e):
                raise
    vectors = [p.read_bytes() for p in sorted((ROOT / "tests" / "vectors").glob("*.bale"))]
    # Kinds no writer makes yet (a KEYED_TABLE): only their hand-built vectors hold them.
    read_only = [p.read_bytes() for p in sorted((ROOT / "tests" / "vectors" / "read_only").glob("*.bale"))]
    write(CORE_SEEDS, vectors + read_only + made)
    write(BINDING_SEEDS, made + read_only)
    for d in (CORE_SEEDS, BINDING_SEEDS):
        files = list(d.iterdir())
        print(f"{d.relative_to(ROOT)}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
