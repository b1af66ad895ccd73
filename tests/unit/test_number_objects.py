"""Numbers held in objects (INT64, BIGINT, FLOAT): thaw and row reads make
them without a `Value` (`Reader::number_object`), so the same values and
the same refusals of malformed bytes must come out of that path as out of
`decode`."""

from __future__ import annotations

import struct

import pytest

import bale
from _bale_testlib import Writer, slot_list, slot_obj

KIND_INT64, KIND_BIGINT, KIND_FLOAT = 0x06, 0x07, 0x08


def test_numbers_in_lists_dicts_and_table_rows_round_trip():
    big = [2**64 + 1, -(2**100), 2**63, -(2**63) - 1, 10**40]
    floats = [1.5, -0.0, float("inf"), 1e-310]
    ints = [2**61, -(2**62), 2**63 - 1]
    value = {
        "list": big + floats + ints,
        "dict": {f"k{i}": v for i, v in enumerate(big + floats)},
        "rows": [{"a": b, "b": f} for b, f in zip(big * 2, floats * 3)],
    }
    for region in (bale.compact(value), bale.compact(value, share=True)):
        got = bale.thaw(region.root)
        assert got == value
        assert [type(x) for x in got["list"]] == [type(x) for x in value["list"]]
        assert struct.pack("<d", got["list"][6]) == struct.pack("<d", -0.0)
        rows = region.root["rows"]
        assert [dict(r) for r in rows] == value["rows"]
        assert [v for r in rows for v in r.values()] == [v for r in value["rows"] for v in r.values()]


def _list_of(kind: int, length: int, payload: bytes, *, after: bool = False) -> bytes:
    """A list of one object slot; with `after` the object lies after the list."""
    w = Writer()
    if after:
        items = w.words(0)
        obj = w.obj(kind, length, payload)
        struct.pack_into("<Q", w.buf, items, slot_obj(obj))
    else:
        obj = w.obj(kind, length, payload)
        items = w.words(slot_obj(obj))
    return w.finish(slot_list(1, items))


@pytest.mark.parametrize("kind, length, payload, message", [
    (KIND_BIGINT, 0, b"", "big int object"),
    (KIND_BIGINT, 1 << 40, b"\x01", "big int object"),
    (KIND_BIGINT, 16, b"\x01" * 8, "big int object"),
    (KIND_INT64, 0, b"", "int64 object"),
    (KIND_FLOAT, 0, b"", "float object"),
])
def test_truncated_number_objects_are_refused(kind, length, payload, message):
    data = _list_of(kind, length, payload)
    with pytest.raises(bale.FormatError, match=message):
        bale.thaw(bale.load(data).root)
    with pytest.raises(bale.FormatError):
        bale.load(data, verify=True)


@pytest.mark.parametrize("kind, length, payload", [
    (KIND_INT64, 0, struct.pack("<q", 2**62)),
    (KIND_FLOAT, 0, struct.pack("<d", 2.5)),
    (KIND_BIGINT, 9, (2**70).to_bytes(9, "little", signed=True)),
])
def test_number_objects_after_their_list_are_refused(kind, length, payload):
    # The order rule: what a container references lies before it.
    data = _list_of(kind, length, payload, after=True)
    with pytest.raises(bale.FormatError, match="lies|before|past|outside|extends"):
        bale.thaw(bale.load(data).root)
    assert bale.thaw(bale.load(_list_of(kind, length, payload)).root)[0] in (2**62, 2.5, 2**70)
