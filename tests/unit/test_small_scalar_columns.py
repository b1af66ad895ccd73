"""A table's own column of None, bools and ints within 28 bits is a SLOT32_COLUMN
(kind 0x28): each cell the low 4 bytes of its slot, 4 bytes a row instead of a
LIST's 8, read the same by every reader.

Also what a reader does with one that no writer of bale makes: one as the
root (a ListView), one whose cells, padding or length were changed under a
good checksum (refused, never read past the end, never a wrong value).
"""

import json
import struct

import pytest

import bale
from _bale_testlib import Writer, fix_checksum, slot_obj

SLOT32_KIND = 0x28
SMALL = "small-scalar columns (None, bools, small ints; 32-bit)"
SLOT_NONE, SLOT_FALSE, SLOT_TRUE = 2, 10, 18


def kinds(region):
    return bale._bale.region_stats(region)["kinds"]


def records(n):
    return [
        {
            "flag": i % 3 == 0,
            "opt": None if i % 4 else i - n // 2,
            "edge": [2**28 - 1, -(2**28), None, False][i % 4],
            "none": None,
            "past": 2**28 if i == n - 1 else None,
            "count": i,
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("n", [4, 5, 1001])
def test_columns_of_none_bools_and_small_ints_take_4_bytes_a_row(n):
    recs = records(n)
    region = bale.compact(recs)
    region.verify()
    k = kinds(region)
    # flag, opt, edge and none; `past` holds an int of 29 bits: a LIST of slots.
    assert k[SMALL] == (4, 4 * (8 + (4 * n + 7) // 8 * 8))
    assert k["lists"] == (1, 8 * n)  # its slots (a LIST slot points at them: no header)
    back = bale.thaw(region.root)
    assert back == recs
    assert all(type(a["flag"]) is bool and type(a["edge"]) is type(b["edge"]) for a, b in zip(back, recs))
    row = region.root[1]
    assert row["flag"] is False and row["none"] is None and row["edge"] == -(2**28) and type(row["edge"]) is int
    assert region.root[3]["edge"] is False and region.root[0]["opt"] == -(n // 2)
    assert region.root == recs
    assert json.loads(bale.to_json(region.root)) == recs
    assert bale.column(region.root, "flag") == [r["flag"] for r in recs]
    assert bale.column(region.root, "opt") == [r["opt"] for r in recs]
    # The JSON source makes the same bytes.
    assert bytes(bale.compact_json(json.dumps(recs))) == bytes(region)


def test_lists_in_cells_and_other_lists_keep_their_slots():
    # Only a table's own columns are narrowed.
    region = bale.compact({"rows": [{"flags": [True, None], "n": i} for i in range(6)], "flat": [True, None, 1]})
    assert SMALL not in kinds(region)
    assert region.root["rows"][3]["flags"] == [True, None] and region.root["flat"] == [True, None, 1]


def test_copies_keep_the_small_scalar_columns():
    region = bale.compact(records(9))
    for copy in (region.compacted(), bale.load(bytes(region), verify=True)):
        assert kinds(copy)[SMALL] == kinds(region)[SMALL]
        assert bale.thaw(copy.root) == records(9)
    assert bale.thaw(bale.region_of(region.root[2]).root) == records(9)[2]


def small_column(cells, pad=0):
    """A region whose root is a SLOT32_COLUMN of the 32-bit ``cells`` (``pad`` after an odd count)."""
    payload = b"".join(struct.pack("<i", c) for c in cells)
    if len(cells) % 2:
        payload += struct.pack("<I", pad)
    w = Writer()
    off = w.obj(SLOT32_KIND, len(cells), payload)
    return w.finish(slot_obj(off))


def int_cell(v):
    return (v << 3) | 1


def test_a_root_small_scalar_column_reads_as_a_list():
    cells = [SLOT_NONE, SLOT_TRUE, SLOT_FALSE, int_cell(2**28 - 1), int_cell(-(2**28))]
    want = [None, True, False, 2**28 - 1, -(2**28)]
    region = bale.load(small_column(cells), verify=True)
    view = region.root
    assert type(view) is bale.ListView
    assert list(view) == want and view == want and view[-1] == -(2**28) and view[1] is True
    assert bale.thaw(view) == want and json.loads(bale.to_json(view)) == want
    with pytest.raises(TypeError):
        memoryview(view)


@pytest.mark.parametrize(
    "bad",
    [
        (3 << 3) | 2,  # a constant that is none of None, False, True
        (1 << 3) | 3,  # an inline string's tag
        64,  # an object reference
        (8 << 19) | 5,  # a list's tag
        7,  # a pair's tag
    ],
)
def test_a_cell_that_is_no_int_or_constant_is_refused(bad):
    data = small_column([SLOT_TRUE, bad, SLOT_NONE])
    with pytest.raises(bale.FormatError, match="small-scalar column cell"):
        bale.load(data, verify=True)
    view = bale.load(data).root
    assert view[0] is True and view[2] is None
    with pytest.raises(bale.FormatError, match="small-scalar column cell"):
        view[1]
    with pytest.raises(bale.FormatError):
        bale.thaw(view)


def test_changed_padding_or_length_under_a_good_checksum_is_refused():
    with pytest.raises(bale.FormatError, match="padding"):
        bale.load(small_column([SLOT_TRUE], pad=1), verify=True)
    b = bytearray(small_column([SLOT_TRUE, SLOT_NONE, SLOT_FALSE]))
    b[64:72] = struct.pack("<Q", SLOT32_KIND | 5 << 8)
    fix_checksum(b)
    for verify in (True, False):
        with pytest.raises(bale.FormatError, match="small-scalar column"):
            list(bale.load(bytes(b), verify=verify).root)


def test_the_streaming_writer_writes_them_too(tmp_path):
    recs = records(7)
    with bale.Writer(tmp_path / "r.bale") as w:
        for r in recs:
            w.append(r)
    region = bale.open(tmp_path / "r.bale", verify=True)
    assert kinds(region)[SMALL] == kinds(bale.compact(recs))[SMALL]
    assert bale.thaw(region.root) == recs
