"""A table's column of ints that all fit 32 bits is an INT32_LIST (kind 0x27):
4 bytes a row instead of an INT_LIST's 8, read the same by every reader.

Also what a reader does with one that no writer of bale makes: a list of
them as the root (its NumberListView exports int32), one whose padding or
length was changed under a good checksum (refused, never read past the end).
"""

import json
import struct

import numpy as np
import pytest

import bale
from _bale_testlib import Writer, fix_checksum, slot_obj

INT32_KIND = 0x27
INT32 = "lists (ints, raw 32-bit)"
INT64 = "lists (ints, raw)"


def kinds(region):
    return bale._bale.region_stats(region)["kinds"]


def records(n):
    """Columns at and past the edges of i32: two of them fit, two do not (by one)."""
    return [
        {
            "small": i - n // 2,
            "edges": [2**31 - 1, -(2**31)][i % 2],
            "past_high": 2**31 if i == n - 1 else i,
            "past_low": -(2**31) - 1 if i == 0 else -i,
            "name": f"row {i}",
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("n", [4, 5, 1001])
def test_columns_that_fit_32_bits_take_4_bytes_a_row(n):
    recs = records(n)
    region = bale.compact(recs)
    region.verify()
    k = kinds(region)
    # Two 32-bit columns (payload padded to a word when n is odd), two of 64 bits.
    assert k[INT32] == (2, 2 * (8 + (4 * n + 7) // 8 * 8))
    assert k[INT64] == (2, 2 * (8 + 8 * n))
    assert bale.thaw(region.root) == recs
    assert region.root == recs and list(region.root[n - 1].items()) == list(recs[n - 1].items())
    assert region.root[1]["edges"] == -(2**31) and type(region.root[1]["edges"]) is int
    assert json.loads(bale.to_json(region.root)) == recs
    for key in ("small", "edges", "past_high"):
        col = bale.column(region.root, key)
        assert col.dtype == np.int64 and col.tolist() == [r[key] for r in recs]
    # The JSON source makes the same bytes.
    assert bytes(bale.compact_json(json.dumps(recs))) == bytes(region)


def test_the_int32_columns_halve_the_bytes_of_small_int_records():
    recs = [{"a": i, "b": i * 3, "c": -i, "d": i % 7} for i in range(10_000)]
    small, wide = bale.compact(recs), bale.compact([{**r, "d": 2**40} for r in recs])
    assert kinds(small)[INT32] == (4, 4 * (8 + 40_000))
    assert INT64 not in kinds(small)
    # Each 32-bit column saves 4 bytes a row against the same column of 64 bits.
    assert wide.nbytes - small.nbytes == 4 * 10_000
    assert bale.thaw(small.root) == recs


def test_lists_in_cells_and_lists_of_ints_keep_64_bits():
    # Only a table's own columns are narrowed: a list cell's NumberListView exports int64.
    region = bale.compact({"rows": [{"ids": [i, -i], "n": i} for i in range(6)], "flat": [1, 2, 3]})
    cell = region.root["rows"][2]["ids"]
    assert type(cell) is bale.NumberListView and memoryview(cell).format == "q"
    assert np.asarray(cell).dtype == np.int64 and cell == [2, -2]
    assert memoryview(region.root["flat"]).format == "q"
    assert kinds(region)[INT32] == (1, 8 + 24)


def test_copies_keep_the_int32_columns():
    region = bale.compact(records(9))
    for copy in (region.compacted(), bale.load(bytes(region), verify=True)):
        assert kinds(copy)[INT32] == kinds(region)[INT32]
        assert bale.thaw(copy.root) == records(9)
    row = region.root[3]
    assert bale.thaw(bale.region_of(row).root) == records(9)[3]


def test_the_streaming_writer_narrows_its_int_columns_too(tmp_path):
    recs = records(7)
    with bale.Writer(tmp_path / "r.bale") as w:
        for r in recs:
            w.append(r)
    region = bale.open(tmp_path / "r.bale", verify=True)
    assert kinds(region)[INT32] == kinds(bale.compact(recs))[INT32]
    assert bale.thaw(region.root) == recs


def int32_list(values, pad=0):
    """A region whose root is an INT32_LIST of ``values`` (its last 4 bytes ``pad`` when odd)."""
    payload = b"".join(struct.pack("<i", v) for v in values)
    if len(values) % 2:
        payload += struct.pack("<I", pad)
    w = Writer()
    off = w.obj(INT32_KIND, len(values), payload)
    return w.finish(slot_obj(off))


def test_a_root_int32_list_is_a_number_list_view_over_int32():
    values = [5, -1, 2**31 - 1, -(2**31), 0]
    region = bale.load(int32_list(values), verify=True)
    view = region.root
    assert type(view) is bale.NumberListView
    assert len(view) == 5 and list(view) == values and view[-2] == -(2**31) and view[1:3] == [-1, 2**31 - 1]
    assert view == values and bale.thaw(view) == values and view.tolist() == values
    m = memoryview(view)
    assert m.readonly and m.format == "i" and m.itemsize == 4 and m.nbytes == 20 and m.tolist() == values
    arr = np.asarray(view)
    assert arr.dtype == np.int32 and arr.tolist() == values
    assert json.loads(bale.to_json(view)) == values
    assert bale.load(int32_list([])).root == []


def test_changed_padding_or_length_under_a_good_checksum_is_refused():
    with pytest.raises(bale.FormatError, match="padding"):
        bale.load(int32_list([1, 2, 3], pad=0xFF), verify=True)
    # Unverified, the items read as they are (padding is not an item).
    assert list(bale.load(int32_list([1, 2, 3], pad=0xFF)).root) == [1, 2, 3]
    # A length past the region's end: refused by the reader, verified or not.
    b = bytearray(int32_list([1, 2, 3]))
    b[64:72] = struct.pack("<Q", INT32_KIND | 5 << 8)
    fix_checksum(b)
    for verify in (True, False):
        with pytest.raises(bale.FormatError, match="number list"):
            list(bale.load(bytes(b), verify=verify).root)
    # In a table, a 32-bit column's length must still be the table's.
    region = bytearray(bale.compact(records(4)))
    at = bytes(region).find(struct.pack("<Q", INT32_KIND | 4 << 8))
    assert at > 0
    region[at : at + 8] = struct.pack("<Q", INT32_KIND | 2 << 8)
    fix_checksum(region)
    with pytest.raises(bale.FormatError, match="column"):
        bale.load(bytes(region), verify=True)
