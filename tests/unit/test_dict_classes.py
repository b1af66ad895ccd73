"""OrderedDict, Counter and defaultdict: the DICT_CLASS kind everywhere a
dict goes (compact, views, thaw, tables, append, share=True, cycles, the
store, the streaming Writer, to_json, verify), factories that are refused,
callbacks that mutate, and crafted bytes."""

from __future__ import annotations

import collections.abc
import json
from collections import Counter, OrderedDict, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bale
from _bale_testlib import fix_checksum, put_u64, thawed_both_ways as both_ways, u64

KIND_DICT_CLASS = 0x22


def same_exactly(a, b):
    """Equal, of the same classes at every level, in the same order, with the same factories."""
    if type(a) is not type(b):
        return False
    if isinstance(a, defaultdict) and a.default_factory is not b.default_factory:
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_exactly(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_exactly(x, y) for x, y in zip(a, b))
    return a == b


def moved():
    od = OrderedDict([("b", 1), ("a", 2), ("c", [1, {"x": 2}])])
    od.move_to_end("b")  # its order is no longer its dict storage's order
    od.move_to_end("c", last=False)
    return od


VALUES = [
    moved(),
    OrderedDict(),
    Counter("abracadabra"),
    Counter(),
    *(defaultdict(f, {"k": f()}) for f in (list, dict, set, int, float, str, tuple)),
    defaultdict(None, {1: 2}),
    defaultdict(list),
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_each_class_round_trips_to_itself(value):
    for got in both_ways({"v": value, "in": [value]}):
        assert same_exactly(got, {"v": value, "in": [value]})


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=4) | st.integers(), st.integers() | st.text()), max_size=20),
       st.lists(st.integers(0, 19), max_size=5))
def test_ordered_dicts_keep_their_own_order(items, moves):
    od = OrderedDict(items)
    keys = list(od)
    for m in moves:
        if keys:
            od.move_to_end(keys[m % len(keys)], last=m % 2 == 0)
    view = bale.compact(od).root
    assert list(view) == list(od)
    for got in both_ways(od):
        assert same_exactly(got, od)


def test_thawed_defaultdicts_still_make_defaults():
    got = bale.thaw(bale.compact(defaultdict(list, {"a": [1]})).root)
    got["new"].append(3)
    assert got == {"a": [1], "new": [3]}
    counts = bale.thaw(bale.compact(Counter("aab")).root)
    counts.update("b")
    assert counts == Counter(a=2, b=2) and counts["zzz"] == 0


def test_views_are_mappings_in_the_stored_order():
    view = bale.compact({"od": moved(), "c": Counter("aab")}).root
    assert isinstance(view["od"], collections.abc.Mapping)
    assert list(view["od"]) == list(moved()) and view["od"]["a"] == 2
    assert dict(view["c"]) == {"a": 2, "b": 1}
    assert "zzz" not in view["c"]  # a view reads; it makes no defaults


def test_equality_follows_each_class():
    od = bale.compact(OrderedDict([("a", 1), ("b", 2)])).root
    assert od == OrderedDict([("a", 1), ("b", 2)])
    assert od != OrderedDict([("b", 2), ("a", 1)])  # two OrderedDicts: order counts
    assert od == {"b": 2, "a": 1}  # against a dict it does not
    assert od != bale.compact(OrderedDict([("b", 2), ("a", 1)])).root
    assert od == bale.compact({"b": 2, "a": 1}).root
    # Counters: a missing key counts as zero (Python 3.10+).
    assert bale.compact(Counter(a=0)).root == bale.compact(Counter()).root
    assert bale.compact(Counter(a=1)).root != bale.compact(Counter()).root


def test_lists_of_them_keep_their_class_and_are_not_tables():
    rows = [OrderedDict([("id", i), ("name", str(i))]) for i in range(10)]
    region = bale.compact(rows)
    assert "tables (lists of dicts, by column)" not in bale._bale.region_stats(region)["kinds"]
    assert same_exactly(bale.thaw(region.root), rows)


def test_factories_that_are_code_are_refused_by_name():
    with pytest.raises(bale.CompactError, match=r"root\['d'\]: cannot compact a defaultdict whose default_factory is <function"):
        bale.compact({"d": defaultdict(lambda: 0)})
    with pytest.raises(bale.CompactError, match="default_factory is <class 'bytes'>"):
        bale.compact(defaultdict(bytes))
    with pytest.raises(bale.CompactError, match="MyOD"):
        bale.compact(type("MyOD", (OrderedDict,), {})())


def test_share_cycles_and_append():
    od = OrderedDict()
    od["self"] = od
    od["list"] = [od]
    dd = defaultdict(list)
    dd["me"] = dd
    for value in (od, dd):
        for got in both_ways(value, share=True):
            assert type(got) is type(value) and list(got) == list(value)
            assert all(got[k] is got for k in ("self", "me") if k in got)
    got = bale.thaw(bale.compact([od, od, dd], share=True).root)
    assert got[0] is got[1] and got[0]["self"] is got[0] and got[0]["list"][0] is got[0]
    assert type(got[2]) is defaultdict and got[2]["me"] is got[2]
    grown = bale.compact(None).append([od, od], share=True)
    got = bale.thaw(grown.root)
    assert got[0] is got[1] and got[0]["self"] is got[0] and type(got[0]) is OrderedDict
    copied = bale.compact(0).append({"z": bale.compact(moved()).root})
    assert same_exactly(bale.thaw(copied.root["z"]), moved())


def test_store_and_writer(tmp_path):
    value = {"od": moved(), "c": Counter("xyz"), "d": defaultdict(set, {"k": {1}})}
    with bale.Store(tmp_path / "s.bstore") as s:
        s["k"] = value
        assert list(s["k"]["od"]) == list(moved())
    with bale.Store(tmp_path / "s.bstore", readonly=True) as s:
        assert same_exactly(bale.thaw(s["k"]), value)
    path = tmp_path / "w.bale"
    with bale.Writer(path) as w:
        for i in range(6):
            w.append(OrderedDict([("i", i), ("s", "x")]))
        w.append(value)
    got = bale.thaw(bale.open(path, verify=True).root)
    assert type(got[0]) is OrderedDict and same_exactly(got[6], value)


def test_to_json_writes_them_as_objects():
    out = bale.to_json(bale.compact({"od": moved(), "c": Counter("ab")}))
    assert json.loads(out) == {"od": dict(moved()), "c": {"a": 1, "b": 1}}
    assert list(json.loads(out)["od"]) == list(moved())


def test_a_callback_that_mutates_the_ordered_dict_is_caught():
    class Sneaky:
        def __init__(self, target):
            self.target = target

    od = OrderedDict()

    def get(obj):
        od.clear()  # empties the dict being compacted, from inside compaction
        return (1,)

    bale.register(Sneaky, ["x"], get=get, make=lambda x: Sneaky(None))
    od["a"] = Sneaky(od)
    od["b"] = list(range(5))
    with pytest.raises(bale.CompactError, match="changed size during compaction"):
        bale.compact(od)


# --------------------------------------------------------- crafted bytes


def _class_word_at(b: bytes) -> int:
    root = u64(b, 0x18)
    assert u64(b, root) & 0xFF == KIND_DICT_CLASS
    return root + 8


@pytest.mark.parametrize("word, message", [
    (0, "unknown dict class"),
    (4, "unknown dict class"),
    (1 | 1 << 8, "factory bits"),
    (3 | 8 << 8, "factory bits"),
])
def test_bad_class_words_are_refused_on_every_read(word, message):
    b = bytearray(bytes(bale.compact(OrderedDict(a=1))))
    put_u64(b, _class_word_at(b), word)
    fix_checksum(b)
    for verify in (True, False):
        with pytest.raises(bale.FormatError, match=message):
            bale.load(bytes(b), verify=verify).root


def test_a_class_dict_referenced_twice_without_sharing_fails_verification():
    b = bytearray(bytes(bale.compact([OrderedDict(a=1), OrderedDict(a=1)])))
    # The list's two slots: point the second at the first dict.
    root = u64(b, 0x18)
    pos = (root >> 19) << 3  # a LIST slot: its items' offset
    put_u64(b, pos + 8, u64(b, pos))
    fix_checksum(b)
    with pytest.raises(bale.FormatError):
        bale.load(bytes(b), verify=True)
