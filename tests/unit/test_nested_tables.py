"""Dicts and lists of dicts inside table rows stored as tables.

A table column whose cells are dicts of one key sequence is itself a TABLE
of those dicts; one whose cells are lists of dicts of one key sequence is a
ROWS_COLUMN: the dicts of all its lists are the rows of one child TABLE,
cut into the cells' lists by offsets (FORMAT.md, *Columns*), so a cell is a
slice of that table. None of this shows to users: cells are DictViews, or
ListViews of DictViews, and thaw, to_json, column, pickle, append and
verify behave as for values stored one by one.
"""

import collections
import json
import pickle

import pytest

import bale
from _bale_testlib import assert_same
from test_tables import is_table, kinds, round_trip

ROWS_KIND = "row columns (lists of dicts, over a table)"
TABLE_MAX_NESTING = 8  # bale_core::layout::TABLE_MAX_NESTING


def has_rows_column(region) -> bool:
    return ROWS_KIND in kinds(region)


def orders(n=12):
    """Records with a list of dicts (some empty), whose dicts hold a list of dicts."""
    return [
        {
            "id": i,
            "lines": [
                {"sku": f"sku-{i}-{j}", "qty": j + 1, "price": 1.5 * j, "tags": [f"t{t}" for t in range(j % 3)],
                 "parts": [{"pn": i * 100 + j * 10 + p, "ok": p % 2 == 0} for p in range(j % 3)]}
                for j in range(i % 4)
            ],
            "note": None if i % 3 else "rush",
        }
        for i in range(n)
    ]


def test_lists_of_dicts_in_a_column_are_one_table_and_read_back():
    records = orders()
    region = round_trip(records, table=True)
    assert has_rows_column(region)
    # The dicts of every "lines" list, and those of every "parts" list: two
    # more tables, not one per list.
    assert kinds(region)["tables (lists of dicts, by column)"][0] == 3
    root = region.root
    lines = root[5]["lines"]
    assert type(lines) is bale.ListView and len(lines) == 1
    assert lines == records[5]["lines"] and records[5]["lines"] == lines
    assert lines[-1]["sku"] == "sku-5-0" and lines[0]["parts"] == []
    row = root[7]["lines"][2]
    assert type(row) is bale.DictView
    assert dict(row["parts"][1]) == {"pn": 721, "ok": False}
    assert list(root[7]["lines"][1:]) == records[7]["lines"][1:]
    assert [dict(d) for d in reversed(root[7]["lines"])] == [dict(d) for d in reversed(records[7]["lines"])][:3]
    assert_same(records[7]["lines"], bale.thaw(root[7]["lines"]))
    assert_same(records[7]["lines"][2]["parts"], bale.thaw(root[7]["lines"][2]["parts"]))


def test_rows_of_one_list_are_the_rows_of_the_table_itself():
    records = orders()
    region = bale.compact(records)
    root = region.root
    # The same row read through its list, or through a slice of it.
    a = root[6]["lines"][1]
    b = root[6]["lines"][1:][0]
    assert a == b and dict(a) == records[6]["lines"][1]
    # A row has no place of its own: its region is rooted at a copy.
    copy = bale.region_of(a)
    assert copy.root == records[6]["lines"][1] and copy.verify() is None
    part = bale.region_of(root[6]["lines"])
    assert part.root == records[6]["lines"] and part.verify() is None


def test_column_reads_a_field_of_the_dicts_of_one_list():
    region = bale.compact(orders())
    lines = region.root[7]["lines"]
    assert list(bale.column(lines, "sku")) == ["sku-7-0", "sku-7-1", "sku-7-2"]
    # The first list's rows start the table: a slice from its first row.
    assert list(bale.column(region.root[1]["lines"], "qty")) == [1]
    with pytest.raises(KeyError):
        bale.column(lines, "missing")


def test_to_json_and_pickle_of_rows_columns():
    records = orders()
    region = bale.compact(records)
    assert json.loads(bale.to_json(region.root)) == json.loads(json.dumps(records))
    assert json.loads(bale.to_json(region.root[3]["lines"])) == json.loads(json.dumps(records[3]["lines"]))
    for view in (region.root[3]["lines"], region.root[3]["lines"][2]):
        assert pickle.loads(pickle.dumps(view)) == view


def test_appending_a_list_of_a_rows_column_copies_its_rows():
    records = orders()
    region = bale.compact(records)
    lines = region.root[7]["lines"]
    grown = region.append([lines, lines[1:], lines[2]["parts"], region.root[5], region.root])
    root = grown.root
    assert_same(records[7]["lines"], bale.thaw(root[0]))
    assert_same(records[7]["lines"][1:], bale.thaw(root[1]))
    assert_same(records[7]["lines"][2]["parts"], bale.thaw(root[2]))
    assert_same(records[5], bale.thaw(root[3]))
    assert_same(records, bale.thaw(root[4]))
    assert grown.verify() is None
    assert bale.load(bytes(grown), verify=True).root == [
        records[7]["lines"], records[7]["lines"][1:], records[7]["lines"][2]["parts"], records[5], records]
    # And into a region of its own.
    again = bale.compact({"a": lines, "b": lines[2]})
    assert_same({"a": records[7]["lines"], "b": records[7]["lines"][2]}, bale.thaw(again.root))


@pytest.mark.parametrize(
    "make",
    [
        lambda i: {"id": i, "l": [{"k": i}] if i != 5 else None},  # a scalar cell among lists of dicts
        lambda i: {"id": i, "l": [{"k": i}] if i != 5 else [1]},  # a list of scalars among them
        lambda i: {"id": i, "l": [{"k": i}, 2]},  # a list of a dict and a scalar
        lambda i: {"id": i, "l": [{"k": i}] if i != 5 else [{"j": i}]},  # other keys in one list
        lambda i: {"id": i, "l": [{"k": i}, {"k": i, "z": 0}]},  # more keys in one dict
        lambda i: {"id": i, "l": [{}]},  # dicts of no keys
        lambda i: {"id": i, "l": [{"k": {"x": i} if i else None}]},  # a dict column with a None
        lambda i: {"id": i, "l": [{"k": (i,)}]},
        lambda i: {"id": i, "l": [[{"k": i}]]},  # lists of lists of dicts
        lambda i: {"id": i, "l": [1] if i == 0 else [{"k": i}]},  # scalars first
    ],
    ids=["none_cell", "scalar_list", "scalar_item", "other_keys", "more_keys", "no_keys",
         "nested_dict", "tuple_value", "nested_list", "scalars_first"],
)
def test_lists_of_dicts_that_make_no_table_keep_the_list_row_by_row(make):
    records = [make(i) for i in range(8)]
    region = round_trip(records, table=False)
    assert not has_rows_column(region)


def test_lists_of_ordered_dicts_keep_their_class_row_by_row():
    records = [{"id": i, "l": [collections.OrderedDict(k=i)]} for i in range(8)]
    region = bale.compact(records)
    assert is_table(region) is False and not has_rows_column(region)
    back = bale.thaw(region.root)
    assert back == records and type(back[3]["l"][0]) is collections.OrderedDict


def test_empty_lists_then_dicts_and_all_empty():
    records = [{"id": i, "l": [] if i < 5 else [{"k": i, "v": str(i)}]} for i in range(8)]
    region = round_trip(records, table=True)
    assert has_rows_column(region)
    region = round_trip([{"id": i, "l": []} for i in range(8)], table=True)
    assert not has_rows_column(region) and "list columns" in kinds(region)


def nested(depth, i):
    """A record holding a list of one dict, `depth` times over."""
    v = {"leaf": i}
    for _ in range(depth):
        v = {"l": [v], "i": i}
    return v


def test_nesting_up_to_the_limit_is_one_table_a_level_deeper_is_row_by_row():
    records = [nested(TABLE_MAX_NESTING, i) for i in range(6)]
    region = round_trip(records, table=True)
    assert kinds(region)["tables (lists of dicts, by column)"][0] == TABLE_MAX_NESTING + 1
    deeper = [nested(TABLE_MAX_NESTING + 1, i) for i in range(6)]
    # (Its lists of one dict are too short to be tables themselves.)
    region = round_trip(deeper, table=False)
    assert not has_rows_column(region)


def test_a_dict_in_a_list_of_its_own_is_a_cycle():
    d = {"k": 1, "l": []}
    d["l"].append(d)
    with pytest.raises(bale.CompactError, match="cycle"):
        bale.compact([d] * 5)
    with pytest.raises(bale.CompactError, match="cycle"):
        bale.compact([{"k": 1, "l": [d]} for _ in range(5)])


@pytest.mark.parametrize("n", [4, 100_000])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_rows_of_empty_lists_expand_within_the_readers_budget(n, depth):
    # Each row holds a one-dict list whose dict holds an empty list: the
    # most values per byte a rows column makes (FORMAT.md, *Validity*).
    def make(_):
        v = {"l": []}
        for _ in range(depth):
            v = {"t": [v]}
        return v

    records = [make(i) for i in range(n)]
    region = bale.compact(records)
    assert is_table(region) and has_rows_column(region)
    assert bale.thaw(region.root) == records
    assert bale.load(bytes(region), verify=True).root == records
    assert json.loads(bale.to_json(region.root)) == records
    assert region.append([region.root[n - 1]]).root == [records[-1]]


def test_compact_json_writes_the_same_rows_columns():
    records = orders()
    text = json.dumps(records)
    assert bytes(bale.compact_json(text)) == bytes(bale.compact(json.loads(text)))
    assert has_rows_column(bale.compact_json(text))


def test_the_citm_corpus_is_one_table_per_list_of_lists():
    from conftest import json_corpus_files

    path = next((p for p in json_corpus_files() if p.name == "citm_catalog.json"), None)
    if path is None:
        pytest.skip("citm_catalog.json is not in ../shared/data/json")
    value = json.loads(path.read_bytes())
    region = bale.compact(value)
    assert has_rows_column(region)
    assert bale.thaw(region.root) == value
    assert region.verify() is None
    assert bytes(bale.compact_json(path.read_bytes())) == bytes(region)


def users(n=10):
    return [
        {
            "id": i,
            "user": {"name": f"user {i}", "followers": i * 7, "geo": {"lat": i / 2, "lon": -i / 3}},
            "tags": [{"text": f"t{t}", "at": [t, t + 3]} for t in range(i % 3)],
        }
        for i in range(n)
    ]


def test_a_column_of_dicts_is_a_table_of_its_own_rows():
    records = users()
    region = round_trip(records, table=True)
    # The records, their users, the users' geo dicts, the tags' dicts.
    assert kinds(region)["tables (lists of dicts, by column)"][0] == 4
    root = region.root
    user = root[3]["user"]
    assert type(user) is bale.DictView and user == records[3]["user"]
    assert user["geo"]["lon"] == -1.0 and list(user) == ["name", "followers", "geo"]
    assert [u["name"] for u in bale.column(root, "user")] == [f"user {i}" for i in range(10)]
    assert_same(records[3]["user"], bale.thaw(user))
    assert json.loads(bale.to_json(user)) == records[3]["user"]
    assert pickle.loads(pickle.dumps(user)) == user
    grown = region.append([user, root[4]])
    assert_same([records[3]["user"], records[4]], bale.thaw(grown.root))
    assert bytes(bale.compact_json(json.dumps(records))) == bytes(bale.compact(json.loads(json.dumps(records))))


@pytest.mark.parametrize(
    "make",
    [
        lambda i: {"id": i, "u": {"a": i} if i != 6 else {"b": i}},  # other keys in one row
        lambda i: {"id": i, "u": {"a": i} if i != 6 else {"a": i, "b": 0}},
        lambda i: {"id": i, "u": {"a": i} if i else 0},  # a scalar first
        lambda i: {"id": i, "u": {"a": i} if i != 6 else [{"a": i}]},  # a list among dicts
        lambda i: {"id": i, "u": collections.OrderedDict(a=i) if i == 2 else {"a": i}},
        lambda i: {"id": i, "u": {"a": {i}}},  # a value no column holds
    ],
    ids=["other_keys", "more_keys", "scalar_first", "list_among_dicts", "ordered_dict", "set_value"],
)
def test_dicts_that_make_no_table_keep_the_records_row_by_row(make):
    records = [make(i) for i in range(8)]
    region = bale.compact(records)
    assert not is_table(region)
    assert bale.thaw(region.root) == records and region.root == records
    assert bytes(bale.load(bytes(region), verify=True)) == bytes(region)


def test_dicts_whose_rows_would_expand_past_the_budget_are_row_by_row():
    # A dict row takes no bytes: three values (the row, the dict, the empty
    # list) in four bytes of offset, past the readers' four values per word.
    tight = [{"u": {"l": []}} for _ in range(10)]
    region = round_trip(tight, table=False)
    assert bale.thaw(region.root) == tight
    # One more column pays for it.
    region = round_trip([{"u": {"l": [], "a": None}} for _ in range(10)], table=True)


@pytest.mark.parametrize("depth", [1, 4, TABLE_MAX_NESTING])
def test_dicts_nested_deep_in_many_rows_thaw_and_verify(depth):
    def make(i):
        v = {"l": [], "a": i}
        for _ in range(depth):
            v = {"d": v, "t": [{"l": [], "b": None}] * (i % 3)}
        return v

    records = [make(i) for i in range(20_000)]
    region = bale.compact(records)
    assert is_table(region)
    assert bale.thaw(region.root) == records
    assert bale.load(bytes(region), verify=True).root == records
    assert json.loads(bale.to_json(region.root)) == records


def test_the_sweeps_nested_records_are_one_tree_of_tables():
    import pathlib
    import sys

    # bench_sweep imports its baselines, which only environments with the
    # bench extra have (not the other interpreters' `.ci/test-python.sh`).
    pytest.importorskip("msgspec")
    pytest.importorskip("orjson")
    # bench_sweep raises the recursion limit when imported: put back, for
    # the tests of the depth limit that may run after this one.
    limit, path = sys.getrecursionlimit(), list(sys.path)
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        from bench_sweep import nested_records
    finally:
        sys.setrecursionlimit(limit)
        sys.path[:] = path

    records = json.loads(json.dumps(nested_records(300)))
    region = bale.compact(records)
    k = kinds(region)
    assert is_table(region) and has_rows_column(region)
    assert "dicts" not in k, k
    assert bale.thaw(region.root) == records and region.root == records
    assert bytes(bale.compact_json(json.dumps(records))) == bytes(region)


class _MutatingKey(str):
    """A str key whose hash empties the list being compacted and the nested dicts it reaches."""

    victims: list = []

    def __hash__(self):
        for v in self.victims:
            v.clear()
        return str.__hash__(self)


@pytest.mark.parametrize("where", ["dict", "list_of_dicts"])
def test_a_nested_key_that_runs_python_code_ends_the_table_before_it_runs(where):
    # The gathered cells are borrowed pointers: a nested dict whose key may
    # run Python code (a str subclass) ends the table before anything is
    # kept; the row path then refuses the key by its class, with its path,
    # and the records are as they were.
    inner = [{_MutatingKey("k"): i, "v": [i]} for i in range(8)]
    records = [{"id": i, "u": d} if where == "dict" else {"id": i, "u": [d]} for i, d in enumerate(inner)]
    _MutatingKey.victims = [d["v"] for d in inner] + [records]
    try:
        with pytest.raises(bale.CompactError, match=r"root\[0\]\['u'\].*cannot compact _MutatingKey"):
            bale.compact(records)
    finally:
        _MutatingKey.victims = []
    assert len(records) == 8 and all(d["v"] == [i] for i, d in enumerate(inner))
