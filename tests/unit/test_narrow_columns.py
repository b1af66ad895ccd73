"""A table's own columns in 4 bytes a row instead of 8:

* ints that all fit 32 bits: an INT32_LIST (kind 0x27), raw i32;
* None, bools and ints within 28 bits: a SLOT32_COLUMN (kind 0x28), each
  cell the low half of its slot;
* strings that repeat (tags, categories): a STR_CODE_COLUMN (kind 0x29),
  each cell a u32 code into a list of the column's distinct strings.

Every reader reads them as before; lists in cells keep 8 bytes an item (a
NumberListView gives numpy int64). Also what a reader does with either when
no writer of bale made it: as the root, or with cells, padding or length
changed under a good checksum (refused, never read past the end, never a
wrong value).
"""

import json
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bale
from _bale_testlib import Writer, fix_checksum, slot_int, slot_list, slot_obj, slot_sstr, slot_str

INT32_KIND, SLOT32_KIND, CODES_KIND = 0x27, 0x28, 0x29
INT32 = "lists (ints, raw 32-bit)"
INT64 = "lists (ints, raw)"
SMALL = "small-scalar columns (None, bools, small ints; 32-bit)"
CODES = "string-code columns (repeated strings; 32-bit codes)"
SLOT_NONE, SLOT_FALSE, SLOT_TRUE = 2, 10, 18


def kinds(region):
    return bale._bale.region_stats(region)["kinds"]


def padded(n):
    """The payload bytes of n 4-byte cells."""
    return (4 * n + 7) // 8 * 8


def compacted(recs, same_as_json=True):
    """``compact(recs)``, verified and read back every way; the JSON source makes the same bytes
    (unless ``same_as_json`` is false: ``compact`` writes a string object held many times once,
    the JSON source each occurrence of a stored string)."""
    region = bale.compact(recs)
    region.verify()
    assert bale.thaw(region.root) == recs and region.root == recs
    assert json.loads(bale.to_json(region.root)) == recs
    if same_as_json:
        assert bytes(bale.compact_json(json.dumps(recs))) == bytes(region)
    return region


def copies_keep(region, kind, want):
    for copy in (region.compacted(), bale.load(bytes(region), verify=True)):
        assert kinds(copy)[kind] == kinds(region)[kind]
        assert bale.thaw(copy.root) == want
    assert bale.thaw(bale.region_of(region.root[2]).root) == want[2]


def streamed(tmp_path, recs):
    with bale.Writer(tmp_path / "r.bale") as w:
        for r in recs:
            w.append(r)
    region = bale.open(tmp_path / "r.bale", verify=True)
    assert bale.thaw(region.root) == recs
    return region


def crafted(kind, cells, pad=0):
    """A region whose root is an object of ``kind`` over the 32-bit ``cells`` (``pad`` after an odd count)."""
    payload = b"".join(struct.pack("<i", c) for c in cells) + (struct.pack("<I", pad) if len(cells) % 2 else b"")
    w = Writer()
    return w.finish(slot_obj(w.obj(kind, len(cells), payload)))


def with_length(data, kind, n):
    """``data`` (a crafted root at 64) announcing ``n`` cells, its checksum fixed."""
    b = bytearray(data)
    b[64:72] = struct.pack("<Q", kind | n << 8)
    fix_checksum(b)
    return bytes(b)


# --- INT32_LIST ---------------------------------------------------------------------------


def int_records(n):
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
def test_int_columns_that_fit_32_bits_take_4_bytes_a_row(n):
    recs = int_records(n)
    region = compacted(recs)
    # Two 32-bit columns (payload padded to a word when n is odd), two of 64 bits.
    assert kinds(region)[INT32] == (2, 2 * (8 + padded(n)))
    assert kinds(region)[INT64] == (2, 2 * (8 + 8 * n))
    assert list(region.root[n - 1].items()) == list(recs[n - 1].items())
    assert region.root[1]["edges"] == -(2**31) and type(region.root[1]["edges"]) is int
    for key in ("small", "edges", "past_high"):
        col = bale.column(region.root, key)
        assert col.dtype == np.int64 and col.tolist() == [r[key] for r in recs]


def test_int32_columns_halve_the_bytes_of_small_int_records():
    recs = [{"a": i, "b": i * 3, "c": -i, "d": i % 7} for i in range(10_000)]
    small, wide = bale.compact(recs), bale.compact([{**r, "d": 2**40} for r in recs])
    assert kinds(small)[INT32] == (4, 4 * (8 + 40_000))
    assert INT64 not in kinds(small)
    # Each 32-bit column saves 4 bytes a row against the same column of 64 bits.
    assert wide.nbytes - small.nbytes == 4 * 10_000
    assert bale.thaw(small.root) == recs


def test_int_lists_in_cells_and_other_lists_keep_64_bits():
    region = bale.compact({"rows": [{"ids": [i, -i], "n": i} for i in range(6)], "flat": [1, 2, 3]})
    cell = region.root["rows"][2]["ids"]
    assert type(cell) is bale.NumberListView and memoryview(cell).format == "q"
    assert np.asarray(cell).dtype == np.int64 and cell == [2, -2]
    assert memoryview(region.root["flat"]).format == "q"
    assert kinds(region)[INT32] == (1, 8 + 24)


def test_copies_and_the_streaming_writer_keep_int32_columns(tmp_path):
    copies_keep(bale.compact(int_records(9)), INT32, int_records(9))
    assert kinds(streamed(tmp_path, int_records(7)))[INT32] == kinds(bale.compact(int_records(7)))[INT32]


def test_a_root_int32_list_is_a_number_list_view_over_int32():
    values = [5, -1, 2**31 - 1, -(2**31), 0]
    view = bale.load(crafted(INT32_KIND, values), verify=True).root
    assert type(view) is bale.NumberListView
    assert len(view) == 5 and list(view) == values and view[-2] == -(2**31) and view[1:3] == [-1, 2**31 - 1]
    assert view == values and bale.thaw(view) == values and view.tolist() == values
    m = memoryview(view)
    assert m.readonly and m.format == "i" and m.itemsize == 4 and m.nbytes == 20 and m.tolist() == values
    arr = np.asarray(view)
    assert arr.dtype == np.int32 and arr.tolist() == values
    assert json.loads(bale.to_json(view)) == values
    assert bale.load(crafted(INT32_KIND, [])).root == []


def test_an_int32_list_with_padding_or_length_changed_is_refused():
    with pytest.raises(bale.FormatError, match="padding"):
        bale.load(crafted(INT32_KIND, [1, 2, 3], pad=0xFF), verify=True)
    # Unverified, the items read as they are (padding is not an item).
    assert list(bale.load(crafted(INT32_KIND, [1, 2, 3], pad=0xFF)).root) == [1, 2, 3]
    # A length past the region's end: refused by the reader, verified or not.
    longer = with_length(crafted(INT32_KIND, [1, 2, 3]), INT32_KIND, 5)
    for verify in (True, False):
        with pytest.raises(bale.FormatError, match="number list"):
            list(bale.load(longer, verify=verify).root)
    # In a table, a 32-bit column's length must still be the table's.
    region = bytearray(bale.compact(int_records(4)))
    at = bytes(region).find(struct.pack("<Q", INT32_KIND | 4 << 8))
    assert at > 0
    region[at : at + 8] = struct.pack("<Q", INT32_KIND | 2 << 8)
    fix_checksum(region)
    with pytest.raises(bale.FormatError, match="column"):
        bale.load(bytes(region), verify=True)


# --- SLOT32_COLUMN --------------------------------------------------------------------------


def flag_records(n):
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
    recs = flag_records(n)
    region = compacted(recs)
    # flag, opt, edge and none; `past` holds an int of 29 bits: a LIST of slots.
    assert kinds(region)[SMALL] == (4, 4 * (8 + padded(n)))
    assert kinds(region)["lists"] == (1, 8 * n)  # its slots (a LIST slot points at them: no header)
    back = bale.thaw(region.root)
    assert all(type(a["flag"]) is bool and type(a["edge"]) is type(b["edge"]) for a, b in zip(back, recs))
    row = region.root[1]
    assert row["flag"] is False and row["none"] is None and row["edge"] == -(2**28) and type(row["edge"]) is int
    assert region.root[3]["edge"] is False and region.root[0]["opt"] == -(n // 2)
    assert bale.column(region.root, "flag") == [r["flag"] for r in recs]
    assert bale.column(region.root, "opt") == [r["opt"] for r in recs]


def test_flag_lists_in_cells_and_other_lists_keep_their_slots():
    region = bale.compact({"rows": [{"flags": [True, None], "n": i} for i in range(6)], "flat": [True, None, 1]})
    assert SMALL not in kinds(region)
    assert region.root["rows"][3]["flags"] == [True, None] and region.root["flat"] == [True, None, 1]


def test_copies_and_the_streaming_writer_keep_small_scalar_columns(tmp_path):
    copies_keep(bale.compact(flag_records(9)), SMALL, flag_records(9))
    assert kinds(streamed(tmp_path, flag_records(7)))[SMALL] == kinds(bale.compact(flag_records(7)))[SMALL]


def int_cell(v):
    return (v << 3) | 1


def test_a_root_small_scalar_column_reads_as_a_list():
    want = [None, True, False, 2**28 - 1, -(2**28)]
    view = bale.load(crafted(SLOT32_KIND, [SLOT_NONE, SLOT_TRUE, SLOT_FALSE, int_cell(2**28 - 1), int_cell(-(2**28))]), verify=True).root
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
    data = crafted(SLOT32_KIND, [SLOT_TRUE, bad, SLOT_NONE])
    with pytest.raises(bale.FormatError, match="small-scalar column cell"):
        bale.load(data, verify=True)
    view = bale.load(data).root
    assert view[0] is True and view[2] is None
    with pytest.raises(bale.FormatError, match="small-scalar column cell"):
        view[1]
    with pytest.raises(bale.FormatError):
        bale.thaw(view)


def test_a_small_scalar_column_with_padding_or_length_changed_is_refused():
    with pytest.raises(bale.FormatError, match="padding"):
        bale.load(crafted(SLOT32_KIND, [SLOT_TRUE], pad=1), verify=True)
    longer = with_length(crafted(SLOT32_KIND, [SLOT_TRUE, SLOT_NONE, SLOT_FALSE]), SLOT32_KIND, 5)
    for verify in (True, False):
        with pytest.raises(bale.FormatError, match="small-scalar column"):
            list(bale.load(longer, verify=verify).root)


# --- STR_CODE_COLUMN ------------------------------------------------------------------------

COLORS = ["red", "green", "light goldenrod yellow", "caf\u00e9 au lait", "\u6df1\u7ea2", "\U0001f7e5 red square"]


def tag_records(n):
    """Columns of repeated strings (every width, inline and stored), of distinct ones, and a mixed one."""
    return [
        {
            "color": COLORS[i * 7 % len(COLORS)],
            "size": ["small", "large"][i % 2],
            "name": f"record number {i}",
            "mixed": "same" if i % 5 else i,
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("n", [30, 31, 1001])
def test_columns_of_repeated_strings_take_4_bytes_a_row(n):
    recs = tag_records(n)
    region = compacted(recs, same_as_json=False)
    # color and size: codes (16 bytes of header and dictionary slot, a code a row);
    # name (distinct) and mixed (not only strings) are not.
    assert kinds(region)[CODES] == (2, 2 * (16 + padded(n)))
    row = region.root[n - 1]
    assert list(row.items()) == list(recs[n - 1].items())
    assert all(type(r["color"]) is str for r in bale.thaw(region.root))
    assert bale.column(region.root, "color") == [r["color"] for r in recs]
    assert region.root == recs and hash(region.root[3]["color"]) == hash(recs[3]["color"])
    # Thawed, each distinct string is one object, as a LIST of shared strings gives.
    back = bale.thaw(region.root)
    assert back[0]["color"] is back[6]["color"]


def test_the_json_source_writes_codes_for_repeated_inline_strings():
    # Inline strings are their slots, so the JSON source, which stores each
    # occurrence of a longer string, finds the same codes as compact.
    recs = [{"size": ["small", "medium", "large"][i % 3], "n": i} for i in range(40)]
    region = compacted(recs)
    assert kinds(region)[CODES] == (1, 16 + padded(40))


@pytest.mark.parametrize(
    "column",
    [
        # (Strings of 6-7 characters: inline slots are smaller than a STR_COLUMN.)
        # The first 1024 all distinct, few after: no codes (the probe).
        [f"s{i:05d}" for i in range(1024)] + ["aaaaaa", "bbbbbb"] * 5000,
        # All distinct: given up at the probe.
        [f"x{i:06d}" for i in range(3000)],
        # Two strings, then too many distinct ones: given up past the probe.
        ["aaaaaa", "bbbbbb"] * 512 + [f"y{i:06d}" for i in range(3000)],
        # Repeated, then a string too long for a string slot (an object): given up at it.
        ["aaaaaa", "bbbbbb"] * 100 + ["z" * 70_000] + ["aaaaaa"] * 100,
    ],
)
def test_codes_given_up_leave_a_list_of_the_same_slots(column):
    recs = [{"s": s} for s in column]
    region = compacted(recs, same_as_json=all(len(s) < 8 for s in column))
    assert CODES not in kinds(region)
    assert bale.column(region.root, "s") == column


def test_a_column_coded_past_the_probe_is_one():
    # Strings of 6 characters: slots (inline) are smaller than a STR_COLUMN, and codes smaller still.
    column = [f"s{i:05d}" for i in range(1023)] * 2 + [f"t{i:05d}" for i in range(900)] + ["aaaaaa"] * 3000
    region = compacted([{"s": s} for s in column])
    assert kinds(region)[CODES] == (1, 16 + padded(len(column)))


def test_codes_halve_the_bytes_of_repeated_string_columns():
    words = [f"word number {i}" for i in range(10)]
    recs = [{"a": words[i % 10], "b": words[i * 3 % 10]} for i in range(10_000)]
    region = bale.compact(recs)
    assert kinds(region)[CODES] == (2, 2 * (16 + 40_000))
    assert "lists" in kinds(region) and kinds(region)["lists"][1] == 2 * 8 * 10  # the two dictionaries
    assert bale.thaw(region.root) == recs


def test_strings_in_cells_and_other_lists_keep_their_slots():
    region = bale.compact({"rows": [{"tags": ["x" * 9, "y" * 9], "n": i} for i in range(20)], "flat": ["z" * 9] * 20})
    assert CODES not in kinds(region)
    assert region.root["rows"][3]["tags"] == ["x" * 9, "y" * 9] and region.root["flat"] == ["z" * 9] * 20


def test_distinct_or_few_strings_are_no_codes():
    # Distinct strings: a STR_COLUMN or a LIST; three rows of one string: a LIST is smaller.
    for recs in ([{"s": f"string {i}"} for i in range(50)], [{"s": "the same string"}] * 3 + [{"s": "x"}]):
        assert CODES not in kinds(compacted(recs, same_as_json=False))


def test_copies_keep_string_code_columns():
    copies_keep(bale.compact(tag_records(20)), CODES, tag_records(20))


def test_the_streaming_writer_reads_and_writes_the_same_records(tmp_path):
    # bale.Writer keeps a STR_COLUMN (or a LIST) for strings: codes are for compact and compact_json.
    region = streamed(tmp_path, tag_records(30))
    assert CODES not in kinds(region)


def crafted_codes(dictionary, codes, pad=0, dict_slot=None):
    """A region whose root is a STR_CODE_COLUMN of ``codes`` over a LIST of ``dictionary`` slots."""
    w = Writer()
    at = w.words(*dictionary)
    payload = struct.pack("<Q", slot_list(len(dictionary), at) if dict_slot is None else dict_slot)
    payload += b"".join(struct.pack("<I", c) for c in codes) + (struct.pack("<I", pad) if len(codes) % 2 else b"")
    return w.finish(slot_obj(w.obj(CODES_KIND, len(codes), payload)))


def test_a_root_string_code_column_reads_as_a_list():
    w = Writer()
    stored = w.raw("a stored string".encode())
    words = [slot_sstr(b"ab"), slot_str(0, 15, stored)]
    # The stored string's units lie before the dictionary: written by hand here.
    at = w.words(*words)
    payload = struct.pack("<Q", slot_list(2, at)) + struct.pack("<3I", 1, 0, 1) + bytes(4)
    data = w.finish(slot_obj(w.obj(CODES_KIND, 3, payload)))
    view = bale.load(data, verify=True).root
    want = ["a stored string", "ab", "a stored string"]
    assert type(view) is bale.ListView
    assert list(view) == want and view == want and view[-1] == want[2] and view[1:] == want[1:]
    assert bale.thaw(view) == want and json.loads(bale.to_json(view)) == want
    copy = bale.compact(view)
    assert bale.thaw(copy.root) == want


@pytest.mark.parametrize(
    "dictionary, codes, message",
    [
        ([slot_sstr(b"a"), slot_sstr(b"b")], [0, 2, 1], "code names no string"),
        ([slot_sstr(b"a"), slot_int(5)], [0, 1, 0], "dictionary item is no string"),
        ([slot_sstr(b"a"), slot_list(1, 64)], [0, 1, 0], "dictionary item is no string"),
        ([slot_sstr(b"a"), 64], [0, 1, 0], "dictionary item is no string"),
    ],
)
def test_a_bad_code_or_dictionary_item_is_refused(dictionary, codes, message):
    data = crafted_codes(dictionary, codes)
    with pytest.raises(bale.FormatError, match=message):
        bale.load(data, verify=True)
    view = bale.load(data).root
    assert view[0] == "a"
    with pytest.raises(bale.FormatError, match=message):
        view[1]
    with pytest.raises(bale.FormatError, match=message):
        bale.thaw(view)
    with pytest.raises(bale.FormatError):
        bale.compact(view)


@pytest.mark.parametrize("dict_slot", [slot_int(1), 5, slot_list(2, 1 << 20), 64 + 16])
def test_a_dictionary_that_is_no_list_before_its_column_is_refused(dict_slot):
    data = crafted_codes([slot_sstr(b"a"), slot_sstr(b"b")], [0, 1], dict_slot=dict_slot)
    for verify in (True, False):
        with pytest.raises(bale.FormatError):
            list(bale.load(data, verify=verify).root)


def test_a_string_code_column_with_padding_or_length_changed_is_refused():
    dictionary = [slot_sstr(b"a"), slot_sstr(b"b")]
    with pytest.raises(bale.FormatError, match="padding"):
        bale.load(crafted_codes(dictionary, [1], pad=1), verify=True)
    assert list(bale.load(crafted_codes(dictionary, [1], pad=1)).root) == ["b"]
    data = bytearray(crafted_codes(dictionary, [0, 1, 1]))
    data[80:88] = struct.pack("<Q", CODES_KIND | 5 << 8)
    fix_checksum(data)
    for verify in (True, False):
        with pytest.raises(bale.FormatError, match="string-code column"):
            list(bale.load(bytes(data), verify=verify).root)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 2600),
    vocab=st.integers(1, 3000),
    first_distinct=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_columns_of_inline_strings_match_the_json_source(n, vocab, first_distinct, seed):
    """Columns drawn from a vocabulary of inline strings, of any length and any number of
    distinct strings (across the probe and the most a dictionary may hold): compact and the
    JSON source write the same bytes (codes or not), and every reader reads the strings."""
    import random

    rng = random.Random(seed)
    words = [f"{i:x}".rjust(rng.randint(4, 7), "w") for i in range(vocab)]
    column = [words[rng.randrange(vocab)] for _ in range(n)]
    if first_distinct:
        column[: min(n, 1024)] = [f"d{i:05d}" for i in range(min(n, 1024))]
    recs = [{"s": s, "i": i} for i, s in enumerate(column)]
    region = compacted(recs)
    if n:
        assert bale.column(region.root, "s") == column
        assert bale.load(bytes(region), verify=True).root[n - 1]["s"] == column[-1]
    if n >= 1024 and first_distinct:
        assert CODES not in kinds(region)
