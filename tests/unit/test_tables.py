"""Lists of records stored by column (TABLE, STR_COLUMN, LIST_COLUMN).

A list of at least 4 dicts with the same keys in the same order, whose values
are scalars or lists of scalars, is written one column per key. None of that
shows to users: the root is a ListView of DictViews, list cells are ListViews
or NumberListViews, and thaw/to_json/column/pickle/append/verify behave as for
rows stored one by one. Values are compared with ``same`` (exact types at
every level, floats by bit pattern, dict order).
"""

import collections.abc as abc
import enum
import gc
import json
import math
import pathlib
import pickle
import random
import struct
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bale
from _bale_testlib import HAVE_XXHASH, assert_same, expected_thaw, fix_checksum, float_bits, has_nan
from bale._datagen import tweets

TABLE_KIND = "tables (lists of dicts, by column)"


def kinds(region):
    return bale._bale.region_stats(region)["kinds"]


def is_table(region) -> bool:
    return TABLE_KIND in kinds(region)


def round_trip(records, *, table):
    """Every way back from ``compact(records)`` gives ``records``; returns the region."""
    region = bale.compact(records)
    if table is not None:
        assert is_table(region) is table, kinds(region)
    want = expected_thaw(records)
    root = region.root
    assert type(root) is bale.ListView
    assert len(root) == len(records)
    assert_same(want, bale.thaw(root))
    for i, row in enumerate(root):
        assert_same(want[i], bale.thaw(row))
        if type(records[i]) is not dict:
            continue
        assert type(row) is bale.DictView
        assert list(row) == list(records[i])
        for key, value in records[i].items():
            assert_same(value, bale.thaw(row[key]))
    if not has_nan(records):
        assert root == records
        assert records == root
        assert not (root != records)
    assert repr(root) == repr(records)
    data = bytes(region)
    assert len(data) == region.nbytes
    assert region.verify() is None
    for verify in (False, True):
        again = bale.load(data, verify=verify)
        assert bytes(again) == data
        assert_same(want, bale.thaw(again.root))
    return region


# ---------------------------------------------------------------------------
# 1. Round trips
# ---------------------------------------------------------------------------


def test_tweets_round_trip_as_a_table():
    records = tweets(300, seed=7)
    region = round_trip(records, table=True)
    k = kinds(region)
    assert "list columns" in k and "lists (ints, raw)" in k


def test_scalar_columns_of_every_kind():
    records = [
        {
            "int": i * 10**12 - 5,
            "small": i,
            "float": i / 7,
            "str": f"value number {i}",
            "short": "ab"[: i % 3],
            "none": None,
            "bool": i % 2 == 0,
            "opt": None if i % 3 else i,
            "edge": [2**63 - 1, -(2**63), 0, -1, 2**60, -(2**60) - 1][i % 6],
        }
        for i in range(40)
    ]
    round_trip(records, table=True)


def flag_records(n=600):
    """Columns of None, True, False and ints that fit a slot (gathered as their slots), and
    ones that turn from that to something else, or from ints to that, at rows past a block."""
    return [
        {
            "flag": i % 3 == 0,
            "opt": None if i % 4 else i,
            "count_then_none": None if i == 300 else i,
            "big_then_none": 2**62 if i == 5 else None if i == 400 else i,
            "none_then_big": -(2**62) - 1 if i == 299 else None,
            "none_then_str": "seen" if i == 257 else None,
            "none_then_float": 0.5 if i == 599 else None,
            "bool_then_int": 1 if i == 13 else True,
            "bool_lists": [None, True, False][: i % 4],
            "int_lists_then_none": [i, -i] + ([None] if i == 450 else []),
            "flag_lists_then_str": [False] * (i % 3) + (["s"] if i == 520 else []),
        }
        for i in range(n)
    ]


def test_columns_of_flags_and_optional_ints():
    records = flag_records()
    region = round_trip(records, table=True)
    assert type(region.root[13]["bool_then_int"]) is int and type(region.root[12]["bool_then_int"]) is bool
    assert region.root[0]["flag"] is True and region.root[1]["flag"] is False
    assert region.root[5]["big_then_none"] == 2**62 and region.root[299]["none_then_big"] == -(2**62) - 1
    text = json.dumps(records)
    assert bytes(bale.compact_json(text)) == bytes(bale.compact(json.loads(text)))


def test_mixed_type_scalar_columns_keep_every_type():
    records = [
        {"mixed": [1, "a", 2.5, None, True, False, 10**30, -0.0, "long string here!"][i % 9],
         "int_or_str": i if i % 2 else str(i),
         "int_or_float": i if i % 2 else float(i),
         "bool_or_int": [True, 1, 0, False][i % 4],
         "big": 2**64 + i if i % 3 == 0 else i}
        for i in range(27)
    ]
    region = round_trip(records, table=True)
    row = region.root[4]
    assert type(row["int_or_float"]) is float and type(region.root[5]["int_or_float"]) is int
    assert type(region.root[0]["bool_or_int"]) is bool and type(region.root[1]["bool_or_int"]) is int


@pytest.mark.parametrize(
    "alphabet",
    [
        "abcdefghij",  # ASCII
        "\xe9\xe8\xff\xa0abc",  # Latin-1
        "\u20ac\u0100\u4e2d\u6587x",  # UCS-2
        "\U0001f600\U0001f680\U0010ffffa",  # astral (UCS-4)
        "\ud800\udfffab",  # lone surrogates
    ],
    ids=["ascii", "latin1", "ucs2", "astral", "surrogates"],
)
def test_string_columns_of_each_width(alphabet):
    rng = random.Random(len(alphabet) * 1000 + ord(alphabet[0]))
    records = [
        {
            "long": "".join(rng.choice(alphabet) for _ in range(rng.randrange(8, 40))),
            "short": "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 4))),
            "empty": "",
            "tags": ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))) for _ in range(i % 4)],
        }
        for i in range(50)
    ]
    round_trip(records, table=True)


def test_long_distinct_ascii_strings_become_a_string_column():
    records = [{"url": f"https://example.com/some/long/path/{i:08d}", "id": i} for i in range(100)]
    region = round_trip(records, table=True)
    assert "string columns" in kinds(region)
    assert bale.column(region.root, "url") == [r["url"] for r in records]


SHARED = [f"shared value number {i}" for i in range(40)]
PROBE = 1024  # strings a column reads before it stops copying shared ones


@pytest.mark.parametrize("lists", [False, True])
def test_shared_strings_are_slots_and_unique_ones_a_column_whatever_comes_first(lists):
    # The first PROBE strings decide whether units are copied as they are read;
    # the decision written is the same either way: the smaller of the two.
    def cell(s):
        return [s] if lists else s

    # All shared: slots (each string stored once).
    shared = [{"c": cell(SHARED[i % 40]), "i": i} for i in range(3000)]
    region = round_trip(shared, table=True)
    assert "string columns" not in kinds(region)
    # Shared first, then long unique strings: a string column after all.
    for switch in (PROBE // 2 - 1, PROBE // 2, PROBE // 2 + 1, PROBE + 300):
        turned = [{"c": cell(SHARED[i % 40] if i < switch else f"unique {i} " + "u" * 200), "i": i} for i in range(12000)]
        region = round_trip(turned, table=True)
        assert "string columns" in kinds(region), switch
        assert bale.column(region.root, "c") == [r["c"] for r in turned]
    # Unique first, then shared: still a column (units kept from the start).
    late = [{"c": cell(f"unique {i} " + "u" * 200 if i < 2000 else SHARED[i % 40]), "i": i} for i in range(2500)]
    assert "string columns" in kinds(round_trip(late, table=True))


@pytest.mark.parametrize("lists", [False, True])
@pytest.mark.parametrize("distinct", [40, 5000, 60000])
def test_slot_columns_of_many_distinct_shared_strings(lists, distinct):
    # A slot column's strings are looked up by address in a table of at most
    # 2^15 entries: with more distinct strings than that, addresses share
    # entries and take turns in them; every string is still stored once.
    words = [f"shared tag {i:06d}" for i in range(distinct)]
    n = 3 * distinct if distinct > 40 else 3000
    records = [{"t": [words[i % distinct], words[(7 * i) % distinct]] if lists else words[(7 * i) % distinct], "i": i}
               for i in range(n)]
    region = round_trip(records, table=True)
    assert "string columns" not in kinds(region)
    assert kinds(region)["strings"][0] == distinct
    assert bale.column(region.root, "t") == [r["t"] for r in records]


def test_list_items_kept_from_where_a_run_turns_to_slots_or_mixed():
    # Lists of uneven length whose item PROBE falls inside a list, and lists
    # that turn mixed (an int among strings) after thousands of items.
    uneven = [{"l": [SHARED[(i + j) % 40] for j in range(i % 7)]} for i in range(2000)]
    round_trip(uneven, table=True)
    mixed_late = [{"l": [SHARED[i % 40], SHARED[(i + 1) % 40]] + ([i] if i == 1500 else [])} for i in range(2000)]
    round_trip(mixed_late, table=True)
    short_shared = [{"l": ["abcde", "fghij"][: i % 3]} for i in range(3000)]
    round_trip(short_shared, table=True)


def test_columns_that_turn_mixed_late_keep_every_cell():
    # Number and list columns keep no cells until they turn mixed; then the
    # cells read so far are taken again from the rows, whatever the column.
    records = [
        {
            "a": i,
            "b": None if i == 2500 else i * 0.5,
            "c": i if i == 2000 else [i, -i],
            "d": 7 if i == 2999 else f"s{i}",
            "e": i if i < 1500 else f"x{i}",
            "f": [f"tag{i % 9}" for _ in range(i % 3)] + ([1.5] if i == 2222 else []),
        }
        for i in range(3000)
    ]
    round_trip(records, table=True)


# A table's rows are gathered a block at a time (`block_rows` in
# tables.rs: 12 rows of 40 keys, 256 of 2): the block's values are read row
# by row, then each column takes its cells of the block. A row that is no
# record of the table, or a column turning mixed, may fall anywhere in a
# block, on its first or last row or in a later block.
WIDE_KEYS = [f"k{j}" for j in range(40)]
BLOCK_EDGES = [0, 1, 7, 8, 11, 12, 13, 23, 24, 25, 255, 256, 257, 299]


def wide_records(n=300):
    return [
        {key: (f"{key}-{i}-" + "x" * (j % 50) if j % 4 else i * j if j % 8 else [i, j][: i % 3]) for j, key in enumerate(WIDE_KEYS)}
        for i in range(n)
    ]


@pytest.mark.parametrize("at", BLOCK_EDGES)
@pytest.mark.parametrize("breaks", ["renamed key", "not a dict", "no cell", "one key more"])
def test_a_row_that_is_no_record_anywhere_in_a_block_gives_rows(at, breaks):
    records = wide_records()
    row = records[at]
    if breaks == "renamed key":
        records[at] = {("other" if key == "k39" else key): value for key, value in row.items()}
    elif breaks == "not a dict":
        records[at] = [*row.values()]
    elif breaks == "no cell":
        records[at] = dict(row, k20={"nested": 1})
    else:
        records[at] = dict(row, extra=1)
    round_trip(records, table=False)
    narrow = [{"a": i, "b": f"s{i}"} for i in range(300)]
    narrow[at] = dict(narrow[at], b={1, 2}) if breaks == "no cell" else {"a": at}
    round_trip(narrow, table=False)


@pytest.mark.parametrize("at", BLOCK_EDGES)
def test_columns_turning_mixed_at_a_block_edge_keep_every_cell(at):
    records = wide_records()
    records[at] = dict(records[at], k1=None, k8=2.5, k0=[1, "two"], k4=f"s{at}", k3=[f"t{at}"])
    round_trip(records, table=True)


def test_dict_entries_are_read_directly_on_the_cpythons_checked():
    checks = bale._bale._layout_checks()
    assert set(checks) == {"fast_paths_switched_off", "ints", "views", "dict_entries", "type_reads"}
    assert all(type(on) is bool for on in checks.values())
    if checks["fast_paths_switched_off"]:
        assert not any(on for name, on in checks.items() if name != "fast_paths_switched_off"), checks
        return
    free_threaded = hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled()
    if sys.implementation.name == "cpython" and (3, 11) <= sys.version_info < (3, 14) and not free_threaded:
        assert checks["dict_entries"], checks
    # Ints' digits are read directly on 3.10-3.14 (`ffi/pylong.rs`), free-threaded or not.
    if sys.implementation.name == "cpython" and (3, 10) <= sys.version_info < (3, 15) and sys.int_info.bits_per_digit == 30:
        assert checks["ints"], checks


def test_the_switch_turns_every_fast_path_off():
    import os
    import subprocess

    env = dict(os.environ, BALE_NO_FAST_PATHS="1")
    out = subprocess.run(
        [sys.executable, "-c", "import bale; print(sorted(bale._bale._layout_checks().items()))"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout
    assert out.strip() == str(
        [
            ("dict_entries", False),
            ("fast_paths_switched_off", True),
            ("ints", False),
            ("type_reads", False),
            ("views", False),
        ]
    )



# Compacted the same way with every fast path on and off: a dict table
# (entry tables), ints of one to three digits and of 4, 7 and 8 (big ints
# read from their digits), floats, bytes, tuples,
# lists of slotted records (class slots read without Python) and of a
# class whose field is a property (read through getattr).
SWITCH_SCRIPT = """
import dataclasses, sys
import bale

class Point:
    __slots__ = ("x", "y")
    def __init__(self, x, y):
        self.x, self.y = x, y

class Area:
    def __init__(self, side):
        self._side = side
    @property
    def side(self):
        return self._side * 2

bale.register(Point, ["x", "y"])
bale.register(Area, ["side"])

@dataclasses.dataclass(frozen=True)
class Tag:
    name: str
    weight: float

value = {
    "rows": [{"id": i, "big": i << 40, "huge": i << 70, "wide": -(i << 100) - 1, "vast": (-1) ** i * (i + 1 << 200), "f": i / 7, "s": f"s{i}", "b": b"x" * (i % 3)} for i in range(300)],
    "points": [Point(i, -i) for i in range(100)],
    "areas": [Area(i) for i in range(20)],
    "tags": [Tag(f"t{i}", i * 0.5) for i in range(50)],
    "tree": tuple((i, (i, i + 1)) for i in range(64)),
    "sets": [frozenset({i, f"k{i}"}) for i in range(10)],
}
sys.stdout.write(bytes(bale.compact(value)).hex())
"""


def test_the_switch_changes_no_byte():
    import os
    import subprocess

    outputs = []
    for switch in ("0", "1"):
        env = dict(os.environ, BALE_NO_FAST_PATHS=switch, PYTHONHASHSEED="0")  # set order
        run = subprocess.run([sys.executable, "-c", SWITCH_SCRIPT], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    root = bale.load(bytes.fromhex(outputs[0]), verify=True).root
    # The property ran (3 * 2), the slots were read, big ints kept.
    assert root["areas"][3].side == 6
    assert (root["points"][5].x, root["points"][5].y) == (5, -5)
    assert root["rows"][7]["huge"] == 7 << 70
    assert (root["rows"][7]["wide"], root["rows"][7]["vast"]) == (-(7 << 100) - 1, -(8 << 200))

class Slots:
    def __init__(self, i):
        self.a = i
        self.b = f"v{i}"


def test_rows_of_every_dict_layout():
    # Read from the entry table or through PyDict_Next, rows give the same.
    plain = [{"a": i, "b": f"v{i}"} for i in range(50)]
    split = [vars(Slots(i)) for i in range(50)]  # key-sharing instance dicts
    deleted = []
    for i in range(50):
        row = {"a": i, "gone": None, "b": f"v{i}"}
        del row["gone"]  # an entry left empty in the table
        deleted.append(row)
    non_str = [{1: i, 2: f"v{i}"} for i in range(50)]
    for rows in (plain, split, deleted, plain[:25] + split[25:], deleted[:25] + plain[25:]):
        literal = [{"a": row["a"], "b": row["b"]} for row in rows]
        assert bytes(round_trip(rows, table=True)) == bytes(bale.compact(literal))
    round_trip(non_str, table=True)


def test_mixed_width_string_columns():
    widths = ["plain ascii text", "caf\xe9 latin one", "\u20ac uro sign", "\U0001f600 astral", "", "\ud83d"]
    records = [{"s": widths[i % len(widths)] + str(i), "l": [widths[(i + j) % len(widths)] for j in range(i % 5)]} for i in range(36)]
    round_trip(records, table=True)


def test_empty_strings_and_empty_lists():
    records = [{"s": "", "l": [], "n": 0} for _ in range(6)]
    round_trip(records, table=True)
    records = [{"s": "" if i % 2 else "x" * 20, "l": [] if i % 2 else [i], "m": [] if i % 3 else ["a"]} for i in range(12)]
    round_trip(records, table=True)


@pytest.mark.parametrize(
    "make_list",
    [
        lambda i: list(range(i)),
        lambda i: [j / 3 for j in range(i)],
        lambda i: [f"string {j} of row {i}" for j in range(i)],
        lambda i: ["s"] * i,
        lambda i: [i, "a", None, True, False, 1.5][: i % 7],
        lambda i: [2**64 + i, -(2**70), 5][: i % 4],
        lambda i: [True, False] * (i % 3),
        lambda i: [None] * (i % 3),
        lambda i: [i, 1.0],  # ints and floats in one list keep their types
        lambda i: ["\U0001f600" * j for j in range(i % 4)],
    ],
    ids=["ints", "floats", "strs", "repeated", "mixed", "bigints", "bools", "nones", "int_float", "astral"],
)
def test_list_columns(make_list):
    records = [{"id": i, "items": make_list(i)} for i in range(25)]
    region = round_trip(records, table=True)
    assert "list columns" in kinds(region)


def test_list_cells_mixing_lists_and_scalars_in_one_column():
    records = [{"v": [i, i] if i % 2 else i} for i in range(10)]
    round_trip(records, table=True)


def test_float_nan_and_negative_zero_are_bit_exact():
    payload_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    neg_nan = struct.unpack("<d", struct.pack("<Q", 0xFFF800000000BEEF))[0]
    specials = [math.nan, -0.0, 0.0, math.inf, -math.inf, payload_nan, neg_nan, 5e-324]
    records = [{"f": specials[i % len(specials)], "fs": specials[: i % 9], "i": i} for i in range(16)]
    region = round_trip(records, table=True)
    for i, row in enumerate(region.root):
        want = records[i]["f"]
        got = row["f"]
        assert struct.pack("<d", got) == struct.pack("<d", want)
        assert math.copysign(1.0, got) == math.copysign(1.0, want)
        assert [float_bits(x) for x in row["fs"]] == [float_bits(x) for x in records[i]["fs"]]
    assert math.copysign(1.0, region.root[1]["f"]) == -1.0
    col = bale.column(region.root, "f")
    assert col.dtype == np.float64
    assert col.tobytes() == struct.pack(f"<{len(records)}d", *(r["f"] for r in records))


def test_int_keys_and_mixed_keys():
    records = [{1: f"one {i}", 2: i, -7: [i], 10**20: None} for i in range(8)]
    region = round_trip(records, table=True)
    row = region.root[3]
    assert row[1] == "one 3" and row[True] == "one 3" and row.get(1.0) == "one 3"
    assert row[10**20] is None and row[-7] == [3]
    assert row == {1.0: "one 3", 2: 3, -7: [3], 10**20: None}  # equal keys, like dicts
    assert bale.to_json(region.root) == json.dumps(records, separators=(",", ":")).encode()
    records = [{"a": i, 1: "x", None: i / 2, (1, 2): "tuple key", 2.5: True} for i in range(6)]
    region = round_trip(records, table=True)
    assert region.root[5][(1, 2)] == "tuple key" and region.root[5][None] == 2.5


def test_records_parsed_one_by_one_by_json():
    lines = [json.dumps({"name": f"user number {i}", "id": i, "tags": ["t"] * (i % 3), "score": i / 2}) for i in range(20)]
    records = [json.loads(line) for line in lines]
    # Equal keys, different key objects.
    assert records[0].keys() == records[1].keys()
    assert next(iter(records[0])) == next(iter(records[1]))
    assert next(iter(records[0])) is not next(iter(records[1]))
    region = round_trip(records, table=True)
    assert bale.to_json(region.root) == ("[" + ",".join(json.dumps(r, separators=(",", ":")) for r in records) + "]").encode()


def test_equal_keys_that_are_distinct_non_string_objects():
    # Int keys made row by row are equal but not the same objects.
    records = [{int(str(1000 + j)): i * j for j in range(3)} for i in range(6)]
    assert next(iter(records[0])) is not next(iter(records[1]))
    round_trip(records, table=None)
    records = [{(int(str(1000)), "k"): i} for i in range(6)]
    round_trip(records, table=None)


def test_keys_equal_but_of_different_types_are_not_the_same_key():
    # 1 == 1.0 == True, but the dicts' keys must come back with their own types.
    records = [{1: "a"}, {1: "b"}, {1.0: "c"}, {True: "d"}, {1: "e"}]
    round_trip(records, table=False)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 64])
def test_few_rows_round_trip_and_four_make_a_table(n):
    records = [{"id": i, "tags": ["x"] * i, "name": f"name {i}"} for i in range(n)]
    round_trip(records, table=n >= 4)


def test_many_keys_and_many_rows():
    wide = [{f"k{j}": i * j for j in range(64)} for i in range(5)]
    round_trip(wide, table=True)
    wider = [{f"k{j}": i * j for j in range(65)} for i in range(5)]
    round_trip(wider, table=False)
    many = [{"i": i, "s": f"s{i % 100}", "l": [i] * (i % 3)} for i in range(70_000)]
    region = bale.compact(many)
    assert is_table(region)
    assert bale.thaw(region.root) == many
    assert region.root[-1] == many[-1] and region.root[65_536] == many[65_536]
    assert bale.load(bytes(region), verify=True).root[69_999] == many[69_999]


def test_a_cell_longer_than_a_slot_can_count():
    records = [{"l": list(range(70_000)) if i == 2 else [i], "s": ["x"] * (70_000 if i == 1 else 1)} for i in range(4)]
    region = round_trip(records, table=True)
    assert region.root[2]["l"][-1] == 69_999 and len(region.root[1]["s"]) == 70_000


def test_shared_list_objects_across_rows():
    tags = ["shared", "tags", "list"]
    records = [{"tags": tags, "same": tags, "i": i} for i in range(6)]
    round_trip(records, table=True)


# ---------------------------------------------------------------------------
# 2. The table layout is used, and it is small
# ---------------------------------------------------------------------------


def test_a_table_is_smaller_than_the_same_records_row_by_row():
    records = tweets(1000, seed=3)
    table = bale.compact(records)
    rows = bale.compact(tuple(records))
    assert is_table(table) and not is_table(rows)
    assert table.nbytes < rows.nbytes
    assert bale.thaw(table.root) == records
    assert bale.thaw(rows.root) == tuple(records)


def test_twenty_thousand_tweets_are_no_bigger_than_pickle():
    records = tweets(20_000, seed=11)
    region = bale.compact(records)
    assert is_table(region)
    assert region.nbytes <= len(pickle.dumps(records, protocol=5))


# ---------------------------------------------------------------------------
# 3. Views
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def table():
    records = [
        {"id": i, "name": f"name number {i}", "score": i / 4, "tags": ["t%d" % j for j in range(i % 4)], "nums": list(range(i % 5)), "opt": None if i % 2 else i}
        for i in range(20)
    ]
    region = bale.compact(records)
    assert is_table(region)
    return records, region


def test_view_types_and_abcs(table):
    records, region = table
    root = region.root
    assert type(root) is bale.ListView and isinstance(root, abc.Sequence)
    row = root[3]
    assert type(row) is bale.DictView
    assert isinstance(row, abc.Mapping) and not isinstance(row, abc.MutableMapping)
    assert type(row["tags"]) is bale.ListView
    assert type(row["nums"]) is bale.NumberListView
    assert isinstance(row["nums"], abc.Sequence)
    assert type(row["id"]) is int and type(row["score"]) is float and type(row["name"]) is str


def test_indexing_negative_and_out_of_range(table):
    records, region = table
    root = region.root
    for i in range(-len(records), len(records)):
        assert root[i] == records[i]
        assert root[i]["tags"] == records[i]["tags"]
        cell, want = root[i]["nums"], records[i]["nums"]
        for j in range(-len(want), len(want)):
            assert cell[j] == want[j]
    for i in (len(records), -len(records) - 1, 2**40, 10**30):
        with pytest.raises(IndexError):
            root[i]
    with pytest.raises(IndexError):
        root[0]["tags"][0]
    with pytest.raises(IndexError):
        root[3]["nums"][3]
    with pytest.raises(TypeError):
        root["id"]


SLICES = [slice(None), slice(2, 9), slice(-3, None), slice(None, None, -1), slice(1, None, 3), slice(10, 2, -3), slice(5, 5), slice(-100, 100)]


@pytest.mark.parametrize("s", SLICES, ids=str)
def test_slicing(table, s):
    records, region = table
    got = region.root[s]
    assert got == records[s]
    assert [bale.thaw(x) for x in got] == records[s]
    tags = region.root[3]["tags"]
    assert list(tags[s]) == records[3]["tags"][s]
    nums = region.root[4]["nums"]
    assert list(nums[s]) == records[4]["nums"][s]


def test_iteration_reversed_contains_index_count(table):
    records, region = table
    root = region.root
    assert list(root) == records
    assert list(reversed(root)) == records[::-1]
    assert records[7] in root
    assert dict(records[7], id=-1) not in root
    assert "x" not in root and None not in root
    assert root.index(records[7]) == 7
    assert root.index(records[7], 5, 10) == 7
    with pytest.raises(ValueError):
        root.index(records[7], 8)
    with pytest.raises(ValueError):
        root.index({"id": 99})
    assert root.count(records[7]) == 1 and root.count({}) == 0
    dup = bale.compact(records + records).root
    assert dup.count(records[2]) == 2 and dup.index(records[2], 3) == len(records) + 2
    cell = root[3]["tags"]
    assert list(reversed(cell)) == records[3]["tags"][::-1]
    assert "t1" in cell and "t9" not in cell and cell.index("t2") == 2 and cell.count("t0") == 1
    nums = root[4]["nums"]
    assert 3 in nums and 3.0 in nums and 9 not in nums and nums.index(2) == 2 and nums.count(1) == 1


def test_row_mapping_methods(table):
    records, region = table
    for row, want in zip(region.root, records):
        assert len(row) == len(want)
        assert list(row.keys()) == list(want.keys())
        assert list(row.values()) == list(want.values())
        assert list(row.items()) == list(want.items())
        assert row.keys() == want.keys()
        assert dict(row) == want
        assert "id" in row and "missing" not in row and 0 not in row
        assert row.get("id") == want["id"]
        assert row.get("missing") is None and row.get("missing", 5) == 5
        with pytest.raises(KeyError):
            row["missing"]
        with pytest.raises(KeyError):
            row[0]
        with pytest.raises(TypeError):
            row[["unhashable"]]
        with pytest.raises(TypeError):
            ["unhashable"] in row
        with pytest.raises(TypeError):
            row.get(["unhashable"])


def test_equality_with_natives_and_views(table):
    records, region = table
    root = region.root
    again = bale.compact(records).root
    by_rows = bale.compact(records, share=True).root  # the same list, stored row by row
    assert root == again and root == by_rows and by_rows == root
    assert root == records and records == root
    for i, row in enumerate(root):
        assert row == records[i] and records[i] == row
        assert row == again[i] and row == by_rows[i]
        assert row != dict(records[i], id=-1)
        assert row != {**records[i], "extra": 1}
        assert row != list(records[i].items())
        assert row == dict(reversed(list(records[i].items())))  # dict equality ignores order
        assert row["tags"] == again[i]["tags"] == records[i]["tags"]
        assert row["nums"] == records[i]["nums"]
        assert row["tags"] != tuple(records[i]["tags"])  # list != tuple, like natives
    assert root[1] != root[2]
    assert root != tuple(records) and root != bale.compact(tuple(records)).root
    assert root != records[:-1] and root != records[::-1]


def test_equality_follows_python_number_semantics():
    records = [{"a": i, "f": float(i), "b": i % 2 == 0, "l": [i, i + 1], "fl": [float(i)], "s": f"long distinct string {i}"} for i in range(6)]
    root = bale.compact(records).root
    alt = [{"a": float(i), "f": i, "b": 1 if i % 2 == 0 else 0, "l": [float(i), i + 1.0], "fl": [i], "s": f"long distinct string {i}"} for i in range(6)]
    assert alt == records  # natively equal
    assert root == alt and alt == root
    assert all(root[i] == alt[i] for i in range(6))
    assert alt[2] in root and root.index(alt[3]) == 3 and root.count(alt[3]) == 1
    assert root[2]["l"] == [2.0, 3.0] and root[2]["l"].index(3.0) == 1 and 3.0 in root[2]["l"]
    assert root[2]["l"] != (2, 3)
    big = [{"a": 2**53 if i == 0 else i, "b": [2**53]} for i in range(5)]
    rb = bale.compact(big).root
    assert rb[0] == {"a": 2.0**53, "b": [2.0**53]}
    assert rb[0] != {"a": 2**53 + 1, "b": [2**53]}
    assert rb == big and rb != bale.compact(tuple(big)).root


def test_repr_matches_native(table):
    records, region = table
    assert repr(region.root) == repr(records)
    for row, want in zip(region.root, records):
        assert repr(row) == repr(want)
        assert repr(row["tags"]) == repr(want["tags"])
        assert repr(row["nums"]) == repr(want["nums"])
        assert str(row) == str(want)


def test_number_list_cells_export_buffers(table):
    records, region = table
    cell = region.root[4]["nums"]
    assert type(cell) is bale.NumberListView
    arr = np.asarray(cell)
    assert arr.dtype == np.int64 and arr.tolist() == [0, 1, 2, 3]
    m = memoryview(cell)
    assert m.readonly and m.format == "q" and m.tolist() == [0, 1, 2, 3] and m.nbytes == 32
    assert cell.tolist() == [0, 1, 2, 3]
    floats = bale.compact([{"f": [i / 2, -0.0, math.inf]} for i in range(5)]).root[3]["f"]
    assert type(floats) is bale.NumberListView
    farr = np.asarray(floats)
    assert farr.dtype == np.float64 and farr.tolist() == [1.5, -0.0, math.inf]
    assert math.copysign(1.0, memoryview(floats)[1]) == -1.0
    with pytest.raises(TypeError):
        memoryview(cell)[0] = 5


def test_rows_and_cells_are_unhashable_and_read_only(table):
    records, region = table
    row = region.root[2]
    with pytest.raises(TypeError):
        hash(row)
    with pytest.raises(TypeError):
        hash(row["tags"])
    with pytest.raises(TypeError):
        hash(row["nums"])
    with pytest.raises(TypeError):
        row["id"] = 5
    with pytest.raises(TypeError):
        region.root[0] = {}


def test_thawed_rows_of_many_keys_are_independent_dicts():
    # Dicts of more than 10 keys, past the first 8 of their shape, are made
    # as copies of one dict of the keys (thawing.rs, `new_dict`), in tables
    # and row by row alike.
    keys = [f"k{j}" for j in range(12)]  # one key object per name: one shape row by row
    records = [{key: (None if (i + j) % 5 == 0 else f"{i}.{j}") for j, key in enumerate(keys)} for i in range(30)]
    for region in (bale.compact(records), bale.compact(records + [0])):
        assert kinds(region)["shapes (dict keys)"][0] == 1
        for _ in range(2):
            got = bale.thaw(region.root)[:30]
            assert got == records and [list(r) for r in got] == [list(r) for r in records]
            got[0]["k1"] = "changed"
            del got[0]["k2"]
            got[0]["new"] = 1
            assert got[1] == records[1] and got[2] == records[2]
            assert bale.thaw(region.root[3]) == records[3]
            # One key object per key name, shared by every row.
            assert all(next(iter(got[i])) is next(iter(got[1])) for i in range(30))
        assert bale.thaw(region.root)[:30] == records


def test_views_outlive_the_region_handle():
    records = [{"id": i, "tags": [f"tag number {i}"] * 2, "nums": [i, i + 1]} for i in range(10)]
    region = bale.compact(records)
    root = region.root
    row = root[6]
    cell = row["tags"]
    nums = row["nums"]
    arr = np.asarray(nums)
    del region, root
    gc.collect()
    assert row == records[6] and cell == records[6]["tags"] and arr.tolist() == [6, 7]


# ---------------------------------------------------------------------------
# 4. thaw
# ---------------------------------------------------------------------------


def test_thaw_gives_plain_independent_objects():
    shared = ["s", "t"]
    records = [{"id": i, "tags": shared, "empty": [], "nums": [i]} for i in range(6)]
    out = bale.thaw(bale.compact(records).root)
    assert out == records
    assert type(out) is list
    for row in out:
        assert type(row) is dict
        assert type(row["tags"]) is list and type(row["empty"]) is list and type(row["nums"]) is list
    out[0]["tags"].append("changed")
    out[0]["empty"].append(1)
    out[0]["nums"].append(2)
    assert out[1]["tags"] == ["s", "t"] and out[1]["empty"] == [] and out[1]["nums"] == [1]
    assert out[0]["tags"] is not out[0]["empty"]
    assert shared == ["s", "t"]
    # A thawed row on its own is a fresh dict too.
    row = bale.thaw(bale.compact(records).root[2])
    assert type(row) is dict and row == records[2]
    row["tags"].append("x")
    assert records[2]["tags"] == ["s", "t"]
    # The same dict object as every row: thawed rows are distinct dicts.
    d = {"k": "v", "l": [1, 2]}
    out = bale.thaw(bale.compact([d] * 5).root)
    assert out == [d] * 5 and len({id(x) for x in out}) == 5 and len({id(x["l"]) for x in out}) == 5
    out[0]["l"].append(3)
    assert out[1]["l"] == [1, 2] and d["l"] == [1, 2]


# ---------------------------------------------------------------------------
# 5. to_json and column
# ---------------------------------------------------------------------------


def test_to_json_of_tweets_and_of_rows():
    records = tweets(500, seed=5)
    region = bale.compact(records)
    assert bale.to_json(region.root) == json.dumps(records, separators=(",", ":")).encode()
    assert bale.to_json(region) == bale.to_json(region.root)
    assert bale.to_json(region.root[17]) == json.dumps(records[17], separators=(",", ":")).encode()
    assert bale.to_json(region.root[17]["hashtags"]) == json.dumps(records[17]["hashtags"], separators=(",", ":")).encode()
    mixed = [{"a": i, "b": i / 8, "c": None, "d": i % 2 == 0, "e": f"s\xe9\u20ac\U0001f600 {i}", "f": [1, "x", None, 2.5][: i % 5]} for i in range(9)]
    assert bale.to_json(bale.compact(mixed).root) == json.dumps(mixed, separators=(",", ":"), ensure_ascii=False).encode()


def test_column_of_a_table():
    records = tweets(400, seed=9)
    root = bale.compact(records).root
    ids = bale.column(root, "user_id")
    assert isinstance(ids, np.ndarray) and ids.dtype == np.int64
    assert np.array_equal(ids, np.array([r["user_id"] for r in records], dtype=np.int64))
    tags = bale.column(root, "hashtags")
    assert tags == [r["hashtags"] for r in records]
    with pytest.raises(KeyError):
        bale.column(root, "missing")
    floats = bale.compact([{"x": i / 3, "s": f"long string {i}", "o": None if i % 2 else i} for i in range(50)]).root
    col = bale.column(floats, "x")
    assert col.dtype == np.float64 and col.tolist() == [i / 3 for i in range(50)]
    assert bale.column(floats, "s") == [f"long string {i}" for i in range(50)]
    o = bale.column(floats, "o")
    assert isinstance(o, list) and o == [None if i % 2 else i for i in range(50)]
    with pytest.raises(KeyError):
        bale.column(floats, 0)


def test_column_keeps_types_that_are_not_int64_or_float64():
    root = bale.compact([{"b": i % 2 == 0, "x": [True, 1][i % 2], "big": 2**63 + i, "m": [1, 2.5][i % 2], "n": None} for i in range(6)]).root
    b = bale.column(root, "b")
    assert b == [True, False] * 3 and all(type(v) is bool for v in b)
    x = bale.column(root, "x")
    assert x == [True, 1] * 3 and [type(v) for v in x] == [bool, int] * 3
    assert bale.column(root, "big") == [2**63 + i for i in range(6)]
    m = bale.column(root, "m")  # ints and floats: float64, as for rows stored one by one
    assert m.dtype == np.float64 and m.tolist() == [1.0, 2.5] * 3
    assert bale.column(root, "n") == [None] * 6


# ---------------------------------------------------------------------------
# 6. Verify, load, save/open, pickle
# ---------------------------------------------------------------------------


def test_verify_load_save_open(tmp_path):
    records = tweets(200, seed=1)
    region = bale.compact(records)
    assert region.verify() is None
    again = bale.load(bytes(region), verify=True)
    assert again.root == records
    assert bale.load(memoryview(region), verify=True).root == records
    path = tmp_path / "tweets.bale"
    region.save(path)
    opened = bale.open(path, verify=True)
    assert bytes(opened) == bytes(region)
    assert opened.root == records and bale.thaw(opened.root) == records
    assert bale.column(opened.root, "user_id").tolist() == [r["user_id"] for r in records]
    del opened


def test_pickle_of_region_row_and_cell():
    records = tweets(100, seed=2)
    region = bale.compact(records)
    for protocol in (2, 5):
        r2 = pickle.loads(pickle.dumps(region, protocol=protocol))
        assert bytes(r2) == bytes(region) and r2.root == records
        row = pickle.loads(pickle.dumps(region.root[42], protocol=protocol))
        assert type(row) is bale.DictView and row == records[42]
        cell = pickle.loads(pickle.dumps(region.root[42]["hashtags"], protocol=protocol))
        assert type(cell) is bale.ListView and cell == records[42]["hashtags"]
        root = pickle.loads(pickle.dumps(region.root, protocol=protocol))
        assert root == records
    buffers = []
    data = pickle.dumps(region, protocol=5, buffer_callback=buffers.append)
    assert pickle.loads(data, buffers=buffers).root == records
    nums = bale.compact([{"n": [i, 2 * i]} for i in range(5)]).root[3]["n"]
    back = pickle.loads(pickle.dumps(nums, protocol=5))
    assert type(back) is bale.NumberListView and back == [3, 6]


# ---------------------------------------------------------------------------
# 7. Growth
# ---------------------------------------------------------------------------


def test_append_rows_and_cells_of_the_same_region():
    records = tweets(50, seed=4)
    r = bale.compact(records)
    grown = r.append([r.root[3], r.root[3]["hashtags"]])
    assert grown.root == [records[3], records[3]["hashtags"]]
    assert_same([records[3], records[3]["hashtags"]], bale.thaw(grown.root))
    again = bale.load(bytes(grown), verify=True)
    assert again.root == [records[3], records[3]["hashtags"]]
    assert grown.verify() is None
    assert r.root == records  # the old handle is unchanged
    # The whole table appended into its own region is referenced, not copied.
    whole = grown.append({"all": r.root})
    assert whole.root == {"all": records}
    assert whole.nbytes - grown.nbytes < 100
    assert bale.load(bytes(whole), verify=True).root["all"] == records
    # A slice of a table is a native list of row views.
    sliced = r.append(r.root[2:6])
    assert sliced.root == records[2:6]
    assert bale.load(bytes(sliced), verify=True).root == records[2:6]


def test_append_a_table_of_another_region_copies_it():
    records = tweets(60, seed=6)
    src = bale.compact(records)
    dst = bale.compact({"x": 1})
    grown = dst.append({"copied": src.root, "row": src.root[5], "cell": src.root[5]["urls"]})
    assert grown.root == {"copied": records, "row": records[5], "cell": records[5]["urls"]}
    assert grown.nbytes - dst.nbytes >= src.nbytes // 2
    del src
    gc.collect()
    assert bale.thaw(grown.root["copied"]) == records
    assert bale.load(bytes(grown), verify=True).root["copied"] == records
    assert is_table(bale.load(bytes(grown)))


def test_compacted_and_region_of():
    records = [{"id": i, "tags": ["a fairly long tag"] * (i % 3), "n": [i] * (i % 2)} for i in range(30)]
    r = bale.compact(records)
    grown = r.append(r.root[7]).append({"t": r.root, "junk": list(range(1000))}).append(r.root[9])
    fresh = grown.compacted()
    assert fresh.root == records[9]
    assert fresh.verify() is None
    assert fresh.nbytes < grown.nbytes
    assert bale.load(bytes(fresh), verify=True).root == records[9]
    whole = r.compacted()
    assert whole.root == records and whole.verify() is None and is_table(whole)
    assert whole.nbytes <= r.nbytes
    for i in (0, 7, 29):
        h = bale.region_of(r.root[i])
        assert h is not None and h.root == records[i]
        assert bale.load(bytes(h), verify=True).root == records[i]
    h = bale.region_of(r.root[8]["tags"])
    assert h.root == records[8]["tags"]
    assert bale.region_of(r.root).root == records
    assert r.root == records


def test_writer_streams_rows_of_a_table(tmp_path):
    records = tweets(300, seed=8)
    src = bale.compact(records)
    path = tmp_path / "w.bale"
    with bale.Writer(path) as w:
        for row in src.root:
            w.append(row)
        w.append(src.root)
        w.append(records[0])
    r = bale.open(path, verify=True)
    assert len(r.root) == 302
    assert r.root[:300] == records
    assert r.root[300] == records and r.root[301] == records[0]
    assert bale.thaw(r.root) == records + [records, records[0]]


# ---------------------------------------------------------------------------
# 8. Fallbacks: row by row, still round trips
# ---------------------------------------------------------------------------


def test_share_true_is_stored_row_by_row():
    tags = ["x", "y"]
    records = [{"id": i, "tags": tags} for i in range(10)]
    region = bale.compact(records, share=True)
    assert not is_table(region)
    assert region.root == records
    out = bale.thaw(region.root)
    assert out == records and out[0]["tags"] is out[1]["tags"]  # sharing kept


class _Color(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize(
    "make",
    [
        lambda i: {"id": i, "nested": {"a": i} if i != 4 else None},  # a dict column with a None
        lambda i: {"id": i, "t": (i, "x")},
        lambda i: {"id": i, "s": {i}},
        lambda i: {"id": i, "b": b"bytes"},
        lambda i: {"id": i, "c": complex(i, 1)},
        lambda i: {"id": i, "l": [[i]]},
        lambda i: {"id": i, "l": [(i,)]},
        lambda i: {"id": i, "name": "n"} if i % 2 else {"name": "n", "id": i},  # key order differs
        lambda i: {"id": i, "name": "n"} if i != 4 else {"id": i, "other": "n"},  # keys differ in one row
        lambda i: {"id": i, "name": "n"} if i != 4 else {"id": i},  # fewer keys in one row
        lambda i: {"id": i} if i != 3 else [i],  # a row that is not a dict
        lambda i: {},  # no keys
        lambda i: {"id": i, "e": _Color.RED},  # an int subclass is a record, not a scalar
        lambda i: {"id": i, "l": [_Color.RED, 1]},
    ],
    ids=["dict_or_none", "tuple", "set", "bytes", "complex", "nested_list", "tuple_in_list",
         "key_order", "other_keys", "fewer_keys", "not_a_dict", "empty_dicts", "int_enum", "int_enum_in_list"],
)
def test_records_that_are_not_a_table(make):
    records = [make(i) for i in range(8)]
    round_trip(records, table=False)


# A TABLE whose column "user" is a TABLE of the same number of rows (a
# column is any list-like value of as many items; bale's writers make one
# of a column of dicts, tests/unit/test_nested_tables.py):
# `nested_table_region(3)` of crates/bale-core/tests/verify.rs, written by
# the core's Builder.
NESTED_TABLE_REGION = bytes.fromhex(
    "42414c450d0a1a0a01000000040302011801000000000000f8000000000000006e142076ef1884d30000000000000000"
    "000000000000000000000000000000000f020000000000000b610000000000000b620000000000001903000000000000"
    "0a0000000000000014000000000000001e000000000000001e0300000000000000080000000000000000000003000000"
    "0300000008000000616e6e626f6262791d03000000000000400000000000000058000000000000007800000000000000"
    "0f0200000000000013696400000000002375736572000000190300000000000001000000000000000200000000000000"
    "03000000000000001d03000000000000c000000000000000d800000000000000a000000000000000"
)
NESTED_TABLE_VALUE = [
    {"id": 1, "user": {"a": 10, "b": "ann"}},
    {"id": 2, "user": {"a": 20, "b": ""}},
    {"id": 3, "user": {"a": 30, "b": "bobby"}},
]


@pytest.mark.parametrize("verify", [False, True])
def test_a_column_that_is_a_table_reads_back_everywhere(verify):
    region = bale.load(NESTED_TABLE_REGION, verify=verify)
    root = region.root
    assert type(root[2]["user"]) is bale.DictView
    assert root[2]["user"]["b"] == "bobby" and list(root[0]["user"].items()) == [("a", 10), ("b", "ann")]
    assert_same(NESTED_TABLE_VALUE, bale.thaw(root))
    assert root == NESTED_TABLE_VALUE and NESTED_TABLE_VALUE == root
    assert json.loads(bale.to_json(root)) == NESTED_TABLE_VALUE
    assert [bale.thaw(u) for u in bale.column(root, "user")] == [r["user"] for r in NESTED_TABLE_VALUE]
    assert_same(NESTED_TABLE_VALUE, bale.thaw(bale.compact(root).root))
    assert bale.thaw(region.append(root[1]["user"]).root) == NESTED_TABLE_VALUE[1]["user"]


def test_a_tuple_of_records_is_stored_row_by_row():
    records = tuple({"id": i, "tags": ["a"]} for i in range(8))
    region = bale.compact(records)
    assert not is_table(region)
    assert_same(records, bale.thaw(region.root))


def test_tables_nested_in_other_values():
    inner = [{"id": i, "s": f"string number {i}"} for i in range(5)]
    value = {"a": inner, "b": (inner, [inner, inner]), "c": [{"t": inner}] * 4}
    region = bale.compact(value)
    assert is_table(region)
    assert_same(value, bale.thaw(region.root))
    assert region.root == value
    assert bale.load(bytes(region), verify=True).root == value


# ---------------------------------------------------------------------------
# 9. Property test
# ---------------------------------------------------------------------------

# Every code point and every int size, as the round-trip tests draw them.
from test_roundtrip import ints, texts  # noqa: E402

floats = st.one_of(st.floats(), st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan]))
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts)


def _column_values(kind):
    return {
        "ints": ints,
        "floats": floats,
        "texts": texts,
        "scalars": scalars,
        "int_lists": st.lists(ints, max_size=5),
        "float_lists": st.lists(floats, max_size=5),
        "text_lists": st.lists(texts, max_size=5),
        "lists": st.lists(scalars, max_size=5),
        "cells": st.one_of(scalars, st.lists(scalars, max_size=5)),
    }[kind]


@st.composite
def record_lists(draw):
    keys = draw(st.lists(st.text(max_size=6), min_size=2, max_size=4, unique=True))
    kinds_ = [draw(st.sampled_from(["ints", "floats", "texts", "scalars", "int_lists", "float_lists", "text_lists", "lists", "cells"])) for _ in keys]
    n = draw(st.integers(0, 30))
    return [{k: draw(_column_values(kind)) for k, kind in zip(keys, kinds_)} for _ in range(n)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(record_lists())
def test_property_record_lists_round_trip(records):
    region = bale.compact(records)
    assert is_table(region) is (len(records) >= 4)
    assert_same(records, bale.thaw(region.root))
    again = bale.load(bytes(region), verify=True)
    assert_same(records, bale.thaw(again.root))
    assert region.verify() is None
    for i in (0, len(records) // 2, -1):
        if records:
            assert_same(records[i], bale.thaw(again.root[i]))
    if not has_nan(records):
        assert region.root == records and records == region.root
        assert again.root == region.root
        assert repr(region.root) == repr(records)


# ---------------------------------------------------------------------------
# 10. Corrupted bytes never crash
# ---------------------------------------------------------------------------


def _walk(value):
    """Read every part of a view through the view API."""
    stack = [value]
    while stack:
        v = stack.pop()
        repr(v)
        if isinstance(v, bale.DictView):
            for k, x in v.items():
                stack.append(x)
            len(v)
            list(v.keys())
        elif isinstance(v, (bale.ListView, bale.NumberListView)):
            len(v)
            stack.extend(v)
            list(reversed(v))
            if isinstance(v, bale.NumberListView):
                memoryview(v).tobytes()


def _read_everything(data, verify):
    try:
        region = bale.load(data, verify=verify)
    except ValueError:
        return "refused"
    try:
        thawed = bale.thaw(region.root)
    except bale.ThawError:
        return "thaw error"
    except ValueError:
        assert not verify, "bytes that pass verify must read without FormatError"
        return "format error on read"
    _walk(region.root)
    try:
        bale.to_json(region.root)
    except (ValueError, TypeError):
        # FormatError, or a valid value with no JSON form (a NaN or bytes
        # made by the flip).
        pass
    if verify and not has_nan(thawed):
        # Unverified altered bytes may read as wrong values, but bytes that
        # pass verify are a valid region: its views equal their thaw.
        assert region.root == thawed, "a verified region's root differs from its thaw"
    # Whatever bale writes from bytes it could read must verify.
    for copy in (region.compacted(), bale.compact(0).append(region.root)):
        copy.verify()
        assert_same(thawed, bale.thaw(copy.root))
    root = region.root
    if isinstance(root, bale.ListView) and len(root) and isinstance(root[0], bale.DictView):
        for key in root[0]:
            try:
                bale.column(root, key)
            except (KeyError, TypeError):
                pass  # rows whose keys or types the flip changed
        for i in (0, -1):
            row = root[i]
            if isinstance(row, bale.DictView):
                handle = bale.region_of(row)
                handle.verify()
                assert_same(bale.thaw(row), bale.thaw(handle.root))
    return "ok"


def _corpus_table():
    records = [
        {
            "id": i * 1_000_003,
            "f": [i / 3, -0.0, math.nan][i % 3],
            "s": f"long string number {i} caf\xe9",
            "w": "\u20ac" * i,
            "tags": [f"t{j}" for j in range(i % 3)],
            "urls": [f"https://t.co/{i}{j}abcdefgh" for j in range(i % 3)],
            "nums": list(range(i % 4)),
            "mixed": [1, "a", None, 2.5][: i % 5],
            "m": [1, "a", None, True][i % 4],
        }
        for i in range(6)
    ]
    region = bale.compact(records)
    assert is_table(region) and "string columns" in kinds(region) and "list columns" in kinds(region)
    return bytes(region)


def _corpus_grown():
    records = [{"id": i, "name": f"user name {i}", "tags": ["x" * 9] * (i % 3), "n": [i / 2] * (i % 2)} for i in range(5)]
    r = bale.compact(records)
    grown = r.append([r.root[1], r.root[2]["tags"], {"t": r.root}])
    assert is_table(grown)
    return bytes(grown)


def _corpus_wide_strings():
    records = [{1: "\U0001f600\u20ac" * (i + 2) + str(i), 2: ["\U0001f680 rocket %d" % j for j in range(i % 3)], 3: 2**64 + i} for i in range(5)]
    region = bale.compact(records)
    assert is_table(region) and "string columns" in kinds(region)
    return bytes(region)


def _corpus_rows_column():
    # Lists of dicts in a column (a ROWS_COLUMN over a table), one of them
    # holding lists of dicts again, some empty; and a list appended after.
    records = [
        {"id": i, "l": [{"k": f"key {i}.{j}", "n": [j] * (j % 2), "p": [{"x": j * 1.5}] * (j % 3)} for j in range(i % 3)]}
        for i in range(5)
    ]
    region = bale.compact(records)
    assert "row columns (lists of dicts, over a table)" in kinds(region)
    return bytes(region.append([region.root[2]["l"], region.root[4]]))


def _corpus_keyed_table():
    # A KEYED_TABLE (no writer makes one yet): rows of their own keys, a
    # None row, a keyed table as a column and under a ROWS_COLUMN.
    return (pathlib.Path(__file__).resolve().parents[1] / "vectors" / "read_only" / "keyed_table.bale").read_bytes()


CORPORA = {
    "table": _corpus_table,
    "rows_column": _corpus_rows_column,
    "keyed_table": _corpus_keyed_table,
    "grown": _corpus_grown,
    "wide_strings": _corpus_wide_strings,
    "nested_table": lambda: NESTED_TABLE_REGION,
}


@pytest.mark.parametrize("corpus", sorted(CORPORA))
@pytest.mark.parametrize("verify", [False, True])
def test_flipping_each_bit_never_crashes(corpus, verify):
    data = CORPORA[corpus]()
    outcomes = {}
    failures = []
    for pos in range(len(data)):
        for bit in range(8):
            b = bytearray(data)
            b[pos] ^= 1 << bit
            if verify and HAVE_XXHASH:
                fix_checksum(b)
            try:
                outcome = _read_everything(bytes(b), verify)
            except (ValueError, bale.ThawError):
                outcome = "error"
            except AssertionError as e:  # collected, so that one case does not hide the others
                failures.append(f"byte {pos} bit {bit}: {str(e).splitlines()[0]}")
                continue
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert not failures, failures
    assert outcomes.get("refused", 0) > 0 and outcomes.get("ok", 0) > 0


@pytest.mark.skipif(not HAVE_XXHASH, reason="forging a checksum needs xxhash")
def test_a_table_header_turned_into_a_uuid_header_is_refused_or_consistent():
    # Found by the bit flips above: kind 0x1D (TABLE, len = rows) with bit 3
    # cleared is 0x15 (UUID, whose len must be 0). If verify accepts that,
    # the verified view must still equal its thaw.
    records = [{"id": i, "name": f"user name {i}"} for i in range(5)]
    data = bytearray(bytes(bale.compact({"t": records})))
    header = struct.pack("<Q", 0x1D | (5 << 8))  # kind byte, then the 56-bit len field
    pos = bytes(data).index(header)
    assert pos % 8 == 0
    data[pos] = 0x15
    fix_checksum(data)
    try:
        region = bale.load(bytes(data), verify=True)
    except bale.FormatError:
        return
    thawed = bale.thaw(region.root)
    assert region.root == thawed
    assert region.root["t"] == thawed["t"]


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_random_corruptions_and_truncations_never_crash(corpus):
    data = CORPORA[corpus]()
    rng = random.Random(20240611)
    for _ in range(2000):
        b = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            b[rng.randrange(64, len(b))] = rng.randrange(256)
        verify = rng.random() < 0.5
        if verify and HAVE_XXHASH:
            fix_checksum(b)
        try:
            _read_everything(bytes(b), verify)
        except (ValueError, bale.ThawError):
            pass
    for cut in range(0, len(data), 8):
        with pytest.raises(ValueError):
            bale.load(data[:cut])


def test_a_refused_key_is_named_at_its_first_record():
    import decimal

    key = decimal.Decimal("1.5")
    with pytest.raises(bale.CompactError, match=r"root\['a'\]\[0\]: key Decimal\('1.5'\)"):
        bale.compact({"a": [{key: i} for i in range(5)]})
