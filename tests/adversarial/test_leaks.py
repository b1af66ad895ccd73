"""Leak test: every public operation and every error path, memory flat.

Each operation runs in a loop; after a warm-up (caches, free lists and
interned objects settle) ``sys.getallocatedblocks()`` is read, the operation
runs ITERATIONS more times, the cyclic collector runs, and the count is read
again. The growth must stay under LIMIT blocks: a leak of one block per call
adds ITERATIONS blocks and fails.

Run as a script to print the table of blocks per operation for all of them
(pytest prints the table of the operations it ran in its terminal summary,
see conftest.py):

    .venv/bin/python tests/adversarial/test_leaks.py
"""

from __future__ import annotations

import atexit
import copy
import dataclasses
import gc
import pathlib
import pickle
import shutil
import sys
import tempfile

import pytest

import bale

ITERATIONS = 20_000
SLOW_ITERATIONS = 2_000  # operations that touch the file system, or make thousands of objects
WARMUP = 1_000
LIMIT = 50  # blocks, over a whole loop: far below one block per call


@dataclasses.dataclass
class LeakRecord:
    a: int
    b: object = None


def _setup():
    """Objects the operations work on, made once."""
    s = {}
    s["tmp"] = pathlib.Path(tempfile.mkdtemp(prefix="bale-leaks-"))
    atexit.register(shutil.rmtree, s["tmp"], ignore_errors=True)
    s["value"] = {
        "list": [1, "two", 3.0, None, [4, 5]],
        "tuple": (1, "a", (2, 3)),
        "nums": list(range(40)),
        "floats": [i / 3 for i in range(10)],
        "dict": {f"k{i}": i for i in range(20)},
        "small": {"a": 1, "b": 2},
        "set": set(range(20)),
        "fset": frozenset({1, 2, 3}),
        "big": 2**100,
        "bytes": b"\x00\xff" * 4,
        "str": "caf\xe9 \u20ac \U0001f600",
        "table": [{"id": i, "name": f"n{i}"} for i in range(10)],
        "records": [LeakRecord(i, [i]) for i in range(3)],
        "dicts": [{"a": 1}, {"a": 2, "b": 3}, {"b": 4, "a": "x"}],
        "bad_tuple": ([1], 2),
        "nan": float("nan"),
    }
    s["region"] = bale.compact(s["value"])
    s["root"] = s["region"].root
    s["bytes"] = bytes(s["region"])
    bad = bytearray(s["bytes"])
    bad[-8] ^= 0xFF  # checksum no longer matches
    s["bad_checksum"] = bytes(bad)
    # A region naming a class this process does not have (ThawError).
    rec_bytes = bytes(bale.compact([LeakRecord(1)]))
    s["unknown_class"] = bale.load(rec_bytes.replace(b"LeakRecord", b"LeakRecorX"))
    # The same, in the sixth of twelve values of the last of twelve dicts of
    # one shape: thaw fails in a dict made as a copy of its shape's dict of
    # keys to None (thawing.rs, `new_dict`: past 10 keys and 8 dicts).
    # (One key object per name, as json.loads makes them: one shape.)
    keys = [f"w{j}" for j in range(12)]
    wide = [{key: (LeakRecord(j) if (i, j) == (11, 5) else j) for j, key in enumerate(keys)} for i in range(12)]
    s["unknown_class_wide"] = bale.load(bytes(bale.compact(wide)).replace(b"LeakRecord", b"LeakRecorX"))
    # A table of 1,100 rows of 12 keys (large: thawing.rs, `LARGE_TABLE_ROWS`):
    # rows made from that dict of keys, values handed over by the column lists.
    s["wide_table"] = bale.compact([{f"c{j}": f"{i}-{j}" if j % 2 else i * j for j in range(12)} for i in range(1100)])
    me = []
    me.append(me)
    s["cycle"] = me
    s["shared"] = bale.compact(me, share=True)
    # Short sequences whose leading scalars are made at once, the rest by a frame.
    s["mixed_seqs"] = bale.compact([(2**70 + i, "a longer string", [i], {"k": 2**65}) for i in range(8)])
    # Deeper than the recursion limit through lists, tuples and dicts: repr
    # refuses it where a frame is pushed, with the container made and not yet handed on.
    # One value per kind of container (each is refused by its own maker).
    for kind in ("list", "tuple", "dict"):
        deep = 0
        for _ in range(sys.getrecursionlimit() + 50):
            deep = [deep] if kind == "list" else ((2**70, deep) if kind == "tuple" else {"a": deep})
        s[f"deep {kind}"] = bale.compact(deep)
    s["path"] = s["tmp"] / "saved.bale"
    s["region"].save(s["path"])
    s["pickled"] = pickle.dumps(s["region"], protocol=5)
    return s


S = _setup()
R = S["region"]
ROOT = S["root"]


def _key():
    """A new str object on every call (not interned), so that an error path
    that keeps a reference to the key it was given leaks a block."""
    return "".join(["miss", "ing"])


def _index():
    """A new int object on every call (outside the small-int cache)."""
    return int("1000001")


def _raises(fn, exc):
    try:
        fn()
    except exc:
        return
    raise AssertionError(f"{fn} did not raise {exc}")


def _writer_list():
    with bale.Writer(S["tmp"] / "w.bale") as w:
        w.append({"a": 1})
        w.append([1, 2])


def _writer_errors():
    w = bale.Writer(S["tmp"] / "werr.bale")
    w["k"] = 1
    _raises(lambda: w.__setitem__("k", 2), KeyError)  # already written
    _raises(lambda: w.append(1), TypeError)  # root is a dict
    _raises(lambda: w.__setitem__("x", object()), bale.CompactError)
    w.abort()
    _raises(lambda: w.append(1), ValueError)  # closed


def _writer_bad_path():
    _raises(lambda: bale.Writer(S["tmp"] / "missing-dir" / "x.bale"), FileNotFoundError)


def _buffer():
    with memoryview(R) as m:
        m[0]


def _numlist_buffer():
    with memoryview(ROOT["nums"]) as m:
        m[3]


OPS = {
    # Making and loading regions
    "compact": lambda: bale.compact(S["value"]),
    "compact share=True (cycle)": lambda: bale.compact(S["cycle"], share=True),
    "load": lambda: bale.load(S["bytes"]),
    "load verify=True": lambda: bale.load(S["bytes"], verify=True),
    "Region.verify": lambda: R.verify(),
    "Region.root": lambda: R.root,
    "Region.types": lambda: R.types(),
    "Region.nbytes": lambda: R.nbytes,
    "bytes(Region)": lambda: bytes(R),
    "memoryview(Region)": _buffer,
    "Region.append": lambda: R.append([1, "x"]),
    "Region.compacted": lambda: S["shared"].compacted(),
    "copy.copy/deepcopy": lambda: (copy.copy(R), copy.deepcopy(R)),
    "pickle dumps": lambda: pickle.dumps(R, protocol=5),
    "pickle loads": lambda: pickle.loads(S["pickled"]),
    "region_of": lambda: bale.region_of(ROOT["list"]),
    "region_stats": lambda: bale._bale.region_stats(R),
    "announced_length": lambda: bale._bale.announced_length(S["bytes"][:64]),
    # Reading views
    "thaw": lambda: bale.thaw(ROOT),
    "thaw (short mixed sequences)": lambda: bale.thaw(S["mixed_seqs"]),
    "repr": lambda: repr(ROOT),
    "to_json": lambda: bale.to_json(ROOT["table"]),
    "== (view, native)": lambda: ROOT["list"] == S["value"]["list"] and ROOT == S["value"],
    "hash(TupleView)": lambda: hash(ROOT["tuple"]),
    "hash(FrozenSetView)": lambda: hash(ROOT["fset"]),
    "repr(RecordView)": lambda: repr(ROOT["records"][0]),
    "ListView[i], [-i], slice": lambda: (ROOT["list"][1], ROOT["list"][-1], ROOT["list"][1:4]),
    "ListView iter/reversed": lambda: (list(ROOT["list"]), list(reversed(ROOT["list"]))),
    "ListView in/index/count": lambda: (3.0 in ROOT["list"], ROOT["list"].index("two"), ROOT["list"].count(1)),
    "len": lambda: (len(ROOT), len(ROOT["list"]), len(ROOT["set"])),
    "NumberListView": lambda: (ROOT["nums"][5], ROOT["floats"][2], ROOT["nums"].tolist(), ROOT["nums"][2:9]),
    "memoryview(NumberListView)": _numlist_buffer,
    "DictView[k]/get/in": lambda: (ROOT["dict"]["k3"], ROOT["dict"].get("k4"), "k5" in ROOT["dict"], ROOT["small"]["b"]),
    "DictView keys/values/items": lambda: (list(ROOT["dict"].keys()), list(ROOT["dict"].values()), list(ROOT["dict"].items())),
    "SetView in/iter/isdisjoint": lambda: (3 in ROOT["set"], list(ROOT["set"]), ROOT["set"].isdisjoint({99})),
    "TupleView index/iter": lambda: (ROOT["tuple"][2], list(ROOT["tuple"])),
    "RecordView attrs": lambda: (ROOT["records"][1].a, ROOT["records"][1].b, ROOT["records"][1]._fields),
    "RecordView thaw": lambda: bale.thaw(ROOT["records"]),
    "column (table)": lambda: bale.column(ROOT["table"], "name"),
    "column (mixed dicts)": lambda: bale.column(ROOT["dicts"], "a"),
    "big int, bytes, str": lambda: (ROOT["big"], ROOT["bytes"], ROOT["str"]),
    # Error paths
    "IndexError (ListView)": lambda: _raises(lambda: ROOT["list"][_index()], IndexError),
    "IndexError (TupleView)": lambda: _raises(lambda: ROOT["tuple"][_index()], IndexError),
    "IndexError (NumberListView)": lambda: _raises(lambda: ROOT["nums"][_index()], IndexError),
    "TypeError: non-int index": lambda: _raises(lambda: ROOT["list"][_key()], TypeError),
    "KeyError (DictView, small)": lambda: _raises(lambda: ROOT["small"][_key()], KeyError),
    "KeyError (DictView, indexed)": lambda: _raises(lambda: ROOT["dict"][_key()], KeyError),
    "TypeError: unhashable key": lambda: _raises(lambda: ROOT["dict"][[_index()]], TypeError),
    "TypeError: unhashable in set": lambda: _raises(lambda: [_index()] in ROOT["set"], TypeError),
    "IndexError: negative index": lambda: _raises(lambda: ROOT["list"][-_index()], IndexError),
    "TypeError: float index": lambda: _raises(lambda: ROOT["tuple"][float(_index())], TypeError),
    "TypeError: unhashable DictView.get": lambda: _raises(lambda: ROOT["dict"].get([_index()]), TypeError),
    "TypeError: unhashable in DictView": lambda: _raises(lambda: [_index()] in ROOT["dict"], TypeError),
    "TypeError: hash(SetView)": lambda: _raises(lambda: hash(ROOT["set"]), TypeError),
    "missing key: get/in (no error)": lambda: (ROOT["dict"].get(_key()), _key() in ROOT["dict"], _key() in ROOT["set"]),
    "ValueError: ListView.index": lambda: _raises(lambda: ROOT["list"].index(_key()), ValueError),
    "AttributeError (RecordView)": lambda: _raises(lambda: getattr(ROOT["records"][0], _key()), AttributeError),
    "TypeError: hash of tuple with list": lambda: _raises(lambda: hash(ROOT["bad_tuple"]), TypeError),
    "KeyError: column of missing key": lambda: _raises(lambda: bale.column(ROOT["table"], _key()), KeyError),
    "FormatError: load of junk": lambda: _raises(lambda: bale.load(b"not a region" * 8), bale.FormatError),
    "FormatError: load of short bytes": lambda: _raises(lambda: bale.load(b"BALE"), bale.FormatError),
    "FormatError: bad checksum (verify)": lambda: _raises(lambda: bale.load(S["bad_checksum"], verify=True), bale.FormatError),
    "FormatError: announced_length": lambda: _raises(lambda: bale._bale.announced_length(b"x" * 64), bale.FormatError),
    "CompactError: unsupported type": lambda: _raises(lambda: bale.compact({"f": [object()]}), bale.CompactError),
    "CompactError: cycle": lambda: _raises(lambda: bale.compact(S["cycle"]), bale.CompactError),
    "CompactError: Region.append": lambda: _raises(lambda: R.append(object()), bale.CompactError),
    "ValueError: to_json of a set": lambda: _raises(lambda: bale.to_json(ROOT["set"]), ValueError),
    "ValueError: to_json of NaN": lambda: _raises(lambda: bale.to_json(ROOT["nan"]), ValueError),
    "ThawError: unknown class": lambda: _raises(lambda: bale.thaw(S["unknown_class"].root), bale.ThawError),
    "ThawError: unknown class in a dict of 12 keys": lambda: _raises(
        lambda: bale.thaw(S["unknown_class_wide"].root), bale.ThawError
    ),
    "RecursionError: repr of a deep list": lambda: _raises(lambda: repr(S["deep list"].root), RecursionError),
    "RecursionError: repr of a deep tuple": lambda: _raises(lambda: repr(S["deep tuple"].root), RecursionError),
    "RecursionError: repr of a deep dict": lambda: _raises(lambda: repr(S["deep dict"].root), RecursionError),
}

SLOW_OPS = {
    "thaw (table of 1,100 rows of 12 columns)": lambda: bale.thaw(S["wide_table"].root),
    "Region.save": lambda: R.save(S["tmp"] / "save.bale"),
    "open": lambda: bale.open(S["path"]),
    "open verify=True": lambda: bale.open(S["path"], verify=True),
    "FileNotFoundError: open": lambda: _raises(lambda: bale.open(S["tmp"] / "absent.bale"), FileNotFoundError),
    "Writer (list root)": _writer_list,
    "Writer errors": _writer_errors,
    "FileNotFoundError: Writer": _writer_bad_path,
}


def measure(fn, iterations):
    """Blocks gained over ``iterations`` calls, after a warm-up.

    The loop runs up to four times (until a round stays under LIMIT) and
    the smallest growth counts: caches that settle late (a free list, a dict
    that resizes once; on 3.12 and 3.13 some take three rounds of a
    combined operation to settle) show in the first rounds only, a leak
    shows in every round.
    """
    for _ in range(WARMUP):
        fn()
    rounds = []
    while len(rounds) < 4 and (not rounds or min(rounds) >= LIMIT):
        _settle()
        before = sys.getallocatedblocks()
        for _ in range(iterations):
            fn()
        _settle()
        rounds.append(sys.getallocatedblocks() - before)
    return min(rounds)


# 3.13 added sys._clear_internal_caches (the type cache among them) and 3.14
# deprecates sys._clear_type_cache.
_clear_type_cache = getattr(sys, "_clear_internal_caches", None) or sys._clear_type_cache


def _settle():
    """Free what is garbage and what only CPython's attribute cache holds.

    The type attribute cache (4096 entries) keeps a reference to the name
    of each lookup it caches; names made afresh for each lookup fill it
    over some 100,000 calls, which a round of 20,000 sees as growth. It is
    bounded, so not a leak; ``test_attribute_names_are_interned`` checks
    that bale's own lookups do not fill it.
    """
    gc.collect()
    _clear_type_cache()


RESULTS: dict[str, tuple[int, int]] = {}


def table_lines():
    width = max(len(n) for n in RESULTS)
    lines = [f"{'operation':<{width}}  {'calls':>6}  {'blocks':>7}  {'per call':>8}"]
    for name, (n, grown) in RESULTS.items():
        mark = "  LEAK" if grown >= LIMIT else ""
        lines.append(f"{name:<{width}}  {n:>6}  {grown:>7}  {grown / n:>8.3f}{mark}")
    return lines


def _check(name, fn, iterations):
    grown = measure(fn, iterations)
    RESULTS[name] = (iterations, grown)
    assert grown < LIMIT, f"{name}: {grown} blocks gained over {iterations} calls ({grown / iterations:.3f} per call)"


@pytest.mark.parametrize("name", list(OPS))
def test_flat(name):
    _check(name, OPS[name], ITERATIONS)


@pytest.mark.parametrize("name", list(SLOW_OPS))
def test_flat_file_ops(name):
    _check(name, SLOW_OPS[name], SLOW_ITERATIONS)


def test_a_leak_of_one_block_per_call_fails():
    """The measurement itself: a deliberate leak of one block per call is seen."""
    kept = []
    grown = measure(lambda: kept.append(object()), ITERATIONS)
    assert grown >= ITERATIONS * 0.9
    assert grown >= LIMIT


if __name__ == "__main__":
    for name, fn in OPS.items():
        RESULTS[name] = (ITERATIONS, measure(fn, ITERATIONS))
    for name, fn in SLOW_OPS.items():
        RESULTS[name] = (SLOW_ITERATIONS, measure(fn, SLOW_ITERATIONS))
    print("\n".join(table_lines()))
    sys.exit(1 if any(g >= LIMIT for _, g in RESULTS.values()) else 0)


@pytest.mark.parametrize("name", ["compact", "Region.types", "SetView in/iter/isdisjoint", "== (view, native)"])
def test_attribute_names_are_interned(name):
    """bale's own attribute lookups hold no fresh name in the type cache.

    CPython's type attribute cache keeps a reference to each name it caches
    and, on 3.10 and 3.11, files it by the name's address: a lookup by a
    name made afresh for each call (``getattr(obj, "describe")`` through
    PyO3 without ``intern!``) fills the cache's 4096 slots with copies of
    one string, up to some 4,000 blocks. The blocks the cache frees when it
    is cleared are those it held.
    """
    fn = OPS[name]
    gc.collect()
    _clear_type_cache()
    for _ in range(ITERATIONS):
        fn()
    gc.collect()
    held = sys.getallocatedblocks()
    _clear_type_cache()
    held -= sys.getallocatedblocks()
    assert held < LIMIT, f"{name}: the type cache held {held} blocks after {ITERATIONS} calls"
