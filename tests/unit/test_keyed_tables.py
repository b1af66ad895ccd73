"""KEYED_TABLE (kind 0x26): a table whose rows name their own keys, or are None.

Readers of format version 1 read it (docs/FORMAT.md, *Columns*); bale's writers do not make
one yet, so these tests read the region built by hand in crates/bale-core/tests/golden.rs
(``tests/vectors/read_only/keyed_table.bale``, its value in ``vectors.json`` beside it) and
forgeries of it. The bit flips and random corruptions of ``test_tables.py`` cover it too
(its ``keyed_table`` corpus).
"""

from __future__ import annotations

import json
import pathlib
import pickle
import struct

import pytest

import bale
from _bale_testlib import HAVE_XXHASH, assert_same, fix_checksum

HERE = pathlib.Path(__file__).resolve().parents[1] / "vectors" / "read_only"
VECTOR = (HERE / "keyed_table.bale").read_bytes()
EXPECTED = eval(json.loads((HERE / "vectors.json").read_text())[0]["python"])
KIND_KEYED_TABLE = 0x26


def keyed_tables(data: bytes) -> list[int]:
    """Offsets of the KEYED_TABLE objects of the vector (their header words)."""
    return [
        off for off in range(64, len(data), 8) if data[off] == KIND_KEYED_TABLE and off in _object_starts(data)
    ]


def _object_starts(data: bytes) -> set[int]:
    # The vector's objects: the root and what its stats walk reaches is more
    # than a test needs; the three tables are found by their row counts.
    root = struct.unpack_from("<Q", data, 24)[0]
    return {root} | {
        off for off in range(64, len(data), 8) if struct.unpack_from("<Q", data, off)[0] in (0x26 | 5 << 8, 0x26 | 2 << 8)
    }


def test_the_vector_holds_three_keyed_tables():
    stats = bale._bale.region_stats(bale.load(VECTOR, verify=True), top=0)["kinds"]
    assert stats["keyed tables (lists of dicts of several key sequences, by column)"][0] == 3
    assert "dicts" not in stats and "tables (lists of dicts, by column)" not in stats
    assert len(keyed_tables(VECTOR)) == 3


@pytest.mark.parametrize("verify", [False, True])
def test_thaw_gives_each_row_its_own_keys_in_its_own_order(verify):
    thawed = bale.thaw(bale.load(VECTOR, verify=verify).root)
    assert_same(thawed, EXPECTED)
    assert [list(row) for row in thawed if row is not None] == [list(row) for row in EXPECTED if row is not None]
    assert list(thawed[2]) == ["org", "id"]


def test_views_read_rows_in_place():
    root = bale.load(VECTOR, verify=True).root
    assert isinstance(root, bale.ListView) and len(root) == 5
    assert root[1] is None
    row = root[2]
    assert isinstance(row, bale.DictView)
    assert list(row) == ["org", "id"] and len(row) == 2
    assert row["id"] == 3 and row["org"] == {"login": "o"}
    assert "name" not in row and "id" in row
    with pytest.raises(KeyError):
        row["name"]
    assert row.get("name", 7) == 7
    assert list(row.values()) == [{"login": "o"}, 3]
    assert dict(row.items()) == EXPECTED[2]
    assert root[3] == {} and len(root[3]) == 0 and list(root[3]) == []
    assert root[0]["tags"][1] is None and root[0]["tags"][0] == {"t": "x"}
    assert root[4]["org"] == {"login": "p", "url": None}
    assert list(root[4]["org"]) == ["login", "url"]
    assert list(root) == EXPECTED and list(reversed(root)) == EXPECTED[::-1]
    assert root == EXPECTED and root[:3] == EXPECTED[:3]
    # A row is equal to the dict of its keys, not to one with another key.
    assert row != {"org": {"login": "o"}, "id": 3, "name": None}
    assert root[0] != root[4]


def test_to_json_pickle_and_copies():
    region = bale.load(VECTOR, verify=True)
    assert json.loads(bale.to_json(region.root)) == EXPECTED
    assert pickle.loads(pickle.dumps(region.root)) == EXPECTED
    assert pickle.loads(pickle.dumps(region.root[2])) == EXPECTED[2]
    # Copies (compacting the view, appending it) keep the keyed tables.
    for copy in (region.compacted(), bale.compact(0).append(region.root), bale.compact(region.root)):
        copy.verify()
        assert_same(bale.thaw(copy.root), EXPECTED)
        copied = bale._bale.region_stats(copy, top=0)["kinds"]
        assert copied["keyed tables (lists of dicts of several key sequences, by column)"][0] == 3
    # A row alone is copied as a dict.
    one = bale.compact(region.root[2])
    assert list(one.root) == ["org", "id"] and one.root == EXPECTED[2]


def test_a_store_copies_a_keyed_table(tmp_path):
    root = bale.load(VECTOR, verify=True).root
    with bale.Store(tmp_path / "s") as store:
        store["rows"] = root
        store["one"] = root[4]
        assert store["rows"] == EXPECTED and store["one"] == EXPECTED[4]
        assert_same(bale.thaw(store["rows"]), EXPECTED)


def test_column_reads_rows_one_by_one_and_names_a_row_that_is_none():
    root = bale.load(VECTOR, verify=True).root
    with pytest.raises(TypeError, match="item 1 is not a dict"):
        bale.column(root, "id")
    # The ROWS_COLUMN's list of a dict and a None.
    with pytest.raises(TypeError, match="item 1 is not a dict"):
        bale.column(root[0]["tags"], "t")


@pytest.mark.skipif(not HAVE_XXHASH, reason="forging a checksum needs xxhash")
@pytest.mark.parametrize(
    "where, value, message",
    [
        ("row", 7, "keyed table row names no key list of its table"),
        ("id", 9, "dict key id is beyond its key table"),
        ("word", 0, "key-list word"),
    ],
)
def test_forged_key_lists_are_refused_by_verify_and_on_read(where, value, message):
    root = struct.unpack_from("<Q", VECTOR, 24)[0]
    k = 4  # id, name, org, tags
    word = root + 16 + 8 * k
    lists = struct.unpack_from("<Q", VECTOR, word)[0] & 0xFF
    offs = word + 8
    ids = offs + (2 * (lists + 1) + 7) // 8 * 8
    total = (struct.unpack_from("<Q", VECTOR, word)[0] >> 16) & 0xFFFF
    rows = ids + (total + 7) // 8 * 8
    data = bytearray(VECTOR)
    data[{"row": rows + 2, "id": ids, "word": word}[where]] = value
    fix_checksum(data)
    with pytest.raises(bale.FormatError, match=message):
        bale.load(bytes(data), verify=True)
    # Unverified, the bad row or id is refused when it is read, with the same words.
    try:
        region = bale.load(bytes(data))
    except bale.FormatError as e:
        assert message in str(e)
        return
    with pytest.raises(bale.FormatError, match=message):
        bale.thaw(region.root)
    with pytest.raises(bale.FormatError, match=message):
        list(region.root)
