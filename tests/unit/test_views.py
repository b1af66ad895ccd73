"""Views behave like the native values they come from, and are read-only."""

import collections.abc as abc

import pytest

import bale
from _bale_testlib import assert_same

SEQ_ITEMS = [0, "a", None, 2.5, (1, 2), [3, 4], {"k": 1}, "a", True, 10**30, b"xy", 1, -0.0, {5}, frozenset({6})]

SLICES = [
    slice(None), slice(1, None), slice(None, 3), slice(2, 9), slice(-3, None), slice(None, -2),
    slice(None, None, 2), slice(1, None, 3), slice(None, None, -1), slice(-2, 1, -1), slice(10, 2, -3),
    slice(100, None), slice(None, -100), slice(5, 5), slice(-100, 100), slice(3, 1), slice(None, None, 100),
]


def view_of(native):
    return bale.compact(native).root


@pytest.fixture(params=["list", "tuple"])
def seq(request):
    native = list(SEQ_ITEMS) if request.param == "list" else tuple(SEQ_ITEMS)
    return native, view_of(native)


# ---------------------------------------------------------------------------
# Sequences: ListView / TupleView
# ---------------------------------------------------------------------------


def test_view_types():
    assert type(view_of(["a"])) is bale.ListView
    assert type(view_of([1])) is bale.NumberListView
    assert type(view_of([1.5])) is bale.NumberListView
    assert type(view_of([1, "a"])) is bale.ListView
    assert type(view_of((1,))) is bale.TupleView
    assert type(view_of({1: 2})) is bale.DictView
    assert type(view_of({1})) is bale.SetView
    assert type(view_of(frozenset({1}))) is bale.FrozenSetView
    assert type(view_of([])) is bale.ListView
    assert type(view_of(())) is bale.TupleView
    assert type(view_of({})) is bale.DictView
    assert type(view_of(set())) is bale.SetView
    assert type(view_of(frozenset())) is bale.FrozenSetView


def test_abcs():
    assert isinstance(view_of([1]), abc.Sequence)
    assert isinstance(view_of((1,)), abc.Sequence)
    assert isinstance(view_of({1: 2}), abc.Mapping)
    assert isinstance(view_of({1}), abc.Set)
    assert isinstance(view_of(frozenset({1})), abc.Set)
    assert not isinstance(view_of([1]), abc.MutableSequence)
    assert not isinstance(view_of({1: 2}), abc.MutableMapping)
    assert not isinstance(view_of({1}), abc.MutableSet)


def test_len(seq):
    native, view = seq
    assert len(view) == len(native)
    assert len(view_of([])) == 0 and len(view_of(())) == 0


def test_indexing_positive_and_negative(seq):
    native, view = seq
    for i in range(-len(native), len(native)):
        assert view[i] == native[i]
        assert_same(bale.thaw(view[i]), native[i])


def test_index_out_of_range_raises_index_error(seq):
    native, view = seq
    for i in (len(native), len(native) + 1, -len(native) - 1, 2**40, -(2**40)):
        with pytest.raises(IndexError):
            view[i]
    with pytest.raises(IndexError):
        view_of([])[0]
    with pytest.raises(IndexError):
        view_of(())[-1]


def test_index_beyond_ssize_t_raises_index_error(seq):
    # Like native lists: [1][10**30] raises IndexError.
    native, view = seq
    for i in (2**63, 10**30, -(10**30)):
        with pytest.raises(IndexError):
            native[i]
        with pytest.raises(IndexError):
            view[i]


@pytest.mark.parametrize("bad", ["0", 1.0, None, (0,), [0], b"0"])
def test_bad_index_type_raises_type_error(seq, bad):
    native, view = seq
    with pytest.raises(TypeError):
        view[bad]


def test_bool_and_int_subclass_index_like_native(seq):
    native, view = seq
    assert view[True] == native[True]
    assert view[False] == native[False]


@pytest.mark.parametrize("s", SLICES, ids=str)
def test_slicing_matches_native(seq, s):
    native, view = seq
    got = view[s]
    want = native[s]
    if isinstance(native, list):
        assert isinstance(got, (list, bale.ListView))
    else:
        assert isinstance(got, (tuple, bale.TupleView))
    assert len(got) == len(want)
    assert got == want
    assert [bale.thaw(x) for x in got] == list(want)
    assert_same(list(want), [bale.thaw(x) for x in got])


def test_iteration(seq):
    native, view = seq
    items = list(view)
    assert len(items) == len(native)
    for got, want in zip(items, native):
        assert_same(want, bale.thaw(got))
    it = iter(view)
    assert iter(it) is it
    assert next(it) == native[0]


def test_reversed(seq):
    native, view = seq
    assert list(reversed(view)) == list(reversed(native))


def test_contains(seq):
    native, view = seq
    for x in native:
        assert x in view
    for x in ["b", 3, (1, 3), [3], {"k": 2}, b"x", 7.5]:
        assert (x in view) == (x in native) == False  # noqa: E712
    # Python equality: 1 == 1.0 == True, 0 == -0.0 == False.
    assert 1.0 in view and 0 in view and 0.0 in view
    assert [3, 4] in view and (3, 4) not in view
    assert (1.0, 2.0) in view


def test_index_method(seq):
    native, view = seq
    for x in native:
        assert view.index(x) == native.index(x)
    n = len(native)
    for x in ["a", 1, 0, None]:
        for start in range(-n - 2, n + 2, 3):
            for stop in range(-n - 2, n + 3, 4):
                try:
                    want = native.index(x, start, stop)
                except ValueError:
                    with pytest.raises(ValueError):
                        view.index(x, start, stop)
                else:
                    assert view.index(x, start, stop) == want
        for start in range(-n - 2, n + 2):
            try:
                want = native.index(x, start)
            except ValueError:
                with pytest.raises(ValueError):
                    view.index(x, start)
            else:
                assert view.index(x, start) == want
    with pytest.raises(ValueError):
        view.index("absent")
    with pytest.raises(ValueError):
        view.index("a", 2, 7)


def test_count(seq):
    native, view = seq
    for x in list(native) + ["absent", 1.0, 0, False, True, [3, 4]]:
        assert view.count(x) == native.count(x)


def test_sequence_equality(seq):
    native, view = seq
    assert view == native and native == view
    assert not (view != native) and not (native != view)
    assert view == view_of(native)
    assert view_of(native) == view
    assert view != view_of(native[:-1])
    other = native[:-1] + native[-1:] * 2
    assert view != other and other != view
    assert not (view == other)
    assert view != native[:-1]


def test_equality_across_element_types():
    assert view_of([1, 2]) == [1, 2]
    assert view_of([1, 2]) != [1, 3]
    assert view_of([1, 2.0, True]) == [1.0, 2, 1]
    assert view_of([[1], (2,)]) == [[1], (2,)]
    assert view_of([[1], (2,)]) != [(1,), (2,)]


def test_list_view_does_not_equal_tuple_and_vice_versa():
    # [1, 2] != (1, 2) natively; views keep that.
    assert view_of([1, 2]) != (1, 2)
    assert view_of((1, 2)) != [1, 2]
    assert view_of([1, 2]) != view_of((1, 2))
    assert not (view_of((1, 2)) == [1, 2])


def test_tuple_view_hash_matches_native():
    for t in [(), (1, "a"), (1, 2.5, None, True, b"x"), ((1, 2), "x", frozenset({1, 2})), (10**40, -0.0, 1j), ("\U0001f600", "\xe9")]:
        view = view_of(t)
        assert hash(view) == hash(t)
        assert {view: 1}[t] == 1
        assert {t: 1}[view] == 1
    nested = view_of([(1, (2, 3))])[0]
    assert hash(nested) == hash((1, (2, 3)))
    assert hash(nested[1]) == hash((2, 3))


def test_frozenset_view_hash_matches_native():
    for f in [frozenset(), frozenset({1}), frozenset({1, "a", (2, 3), None}), frozenset(range(100)), frozenset({frozenset({1}), 2.5})]:
        view = view_of(f)
        assert hash(view) == hash(f)
        assert view in {f}
        assert f in {view}


def test_tuple_view_containing_unhashable_is_unhashable():
    view = view_of((1, [2]))
    with pytest.raises(TypeError):
        hash(view)


@pytest.mark.parametrize("native", [[1, 2], {"a": 1}, {1, 2}, [], {}, set()], ids=repr)
def test_mutable_views_are_unhashable(native):
    with pytest.raises(TypeError):
        hash(view_of(native))


REPR_CASES = [
    [], (), {}, set(), frozenset(),
    [1, "a", None, 2.5, -0.0, float("inf"), b"x\x00", 1j], (1,), (1, 2), {"a": [1, (2,)], 3: {"b": None}},
    {1, 2, 3}, frozenset({"x"}), [set(), frozenset(), {}, (), []], {"s": {1}, "f": frozenset({(1, 2)})},
    ["quote's", 'dq"', "\ud800", "\U0001f600", "\n"], {(1, 2): "t", None: 0, b"b": 1.5, 10**30: 2},
    list(range(50)), {f"k{i}": i for i in range(30)}, set(range(40)), [float("nan")],
]


@pytest.mark.parametrize("native", REPR_CASES, ids=lambda v: repr(v)[:30])
def test_repr_matches_native(native):
    assert repr(view_of(native)) == repr(native)
    assert str(view_of(native)) == str(native)


def test_repr_of_nested_views():
    root = view_of({"a": [{"b": (1, {2})}]})
    assert repr(root["a"]) == repr([{"b": (1, {2})}])
    assert repr(root["a"][0]["b"]) == "(1, {2})"
    assert repr(root["a"][0]["b"][1]) == "{2}"


# ---------------------------------------------------------------------------
# Read-only
# ---------------------------------------------------------------------------


def test_sequence_views_are_read_only():
    for view in (view_of([1, 2, 3]), view_of((1, 2, 3))):
        with pytest.raises(TypeError):
            view[0] = 1
        with pytest.raises(TypeError):
            del view[0]
        with pytest.raises(TypeError):
            view[0:1] = [5]
        for name, args in [("append", (4,)), ("extend", ([4],)), ("insert", (0, 4)), ("pop", ()), ("remove", (1,)), ("clear", ()), ("sort", ()), ("reverse", ())]:
            with pytest.raises((TypeError, AttributeError)):
                getattr(view, name)(*args)
        with pytest.raises((TypeError, AttributeError)):
            view.foo = 1
        assert list(view) == [1, 2, 3]


def test_in_place_add_does_not_change_the_region():
    region = bale.compact([1, 2, 3])
    view = region.root
    try:
        view += [4]
    except (TypeError, AttributeError):
        pass
    assert list(region.root) == [1, 2, 3]


def test_dict_view_is_read_only():
    view = view_of({"k": 1, "j": 2})
    with pytest.raises(TypeError):
        view["k"] = 1
    with pytest.raises(TypeError):
        view["new"] = 1
    with pytest.raises(TypeError):
        del view["k"]
    for name, args in [("update", ({"a": 1},)), ("pop", ("k",)), ("popitem", ()), ("clear", ()), ("setdefault", ("z", 1))]:
        with pytest.raises((TypeError, AttributeError)):
            getattr(view, name)(*args)
    with pytest.raises((TypeError, AttributeError)):
        view.foo = 1
    assert view == {"k": 1, "j": 2}


def test_set_views_are_read_only():
    for view in (view_of({1, 2}), view_of(frozenset({1, 2}))):
        for name, args in [("add", (3,)), ("discard", (1,)), ("remove", (1,)), ("pop", ()), ("clear", ()), ("update", ({5},))]:
            with pytest.raises((TypeError, AttributeError)):
                getattr(view, name)(*args)
        with pytest.raises((TypeError, AttributeError)):
            view.foo = 1
        assert view == {1, 2}


def test_region_is_read_only():
    region = bale.compact([1])
    with pytest.raises((TypeError, AttributeError)):
        region.root = [2]
    assert region.root == [1]


# ---------------------------------------------------------------------------
# Mappings: DictView
# ---------------------------------------------------------------------------

DICT_NATIVE = {"a": 1, "b": [1, 2], "c": {"d": None}, 3: "three", (1, 2): "tuple", None: "none", b"k": 2.5, 2.5: "float", frozenset({1}): "fs", 10**30: "big"}


@pytest.fixture(params=["small", "big"])
def mapping(request):
    native = {"a": 1, "b": [1, 2], "c": {"d": None}, 3: "three"} if request.param == "small" else DICT_NATIVE
    return native, view_of(native)


def test_mapping_getitem_and_keyerror(mapping):
    native, view = mapping
    for k, v in native.items():
        assert view[k] == v
        assert_same(v, bale.thaw(view[k]))
    for missing in ["z", 4, (1, 3), b"z", 3.5, frozenset({2}), "A", ""]:
        with pytest.raises(KeyError):
            view[missing]


def test_mapping_get(mapping):
    native, view = mapping
    for k, v in native.items():
        assert view.get(k) == v
        assert view.get(k, "default") == v
    assert view.get("missing") is None
    assert view.get("missing", "default") == "default"


def test_mapping_keys_values_items_in_insertion_order(mapping):
    native, view = mapping
    assert list(view) == list(native)
    assert list(view.keys()) == list(native.keys())
    assert list(view.values()) == list(native.values())
    assert list(view.items()) == list(native.items())
    assert len(view.keys()) == len(native)
    assert view.keys() == native.keys()
    assert view.items() == native.items()
    first = next(iter(native))
    assert first in view.keys()
    assert (first, native[first]) in view.items()


def test_mapping_values_is_a_values_view(mapping):
    from collections.abc import ValuesView

    native, view = mapping
    values = view.values()
    assert isinstance(values, ValuesView) and isinstance(values, bale.DictValues)
    assert len(values) == len(native)
    assert repr(values) == f"dict_values({list(native.values())!r})"
    for v in native.values():
        assert v in values  # equal: a view of a list equals the list
    assert "not a value" not in values and [1, 3] not in values
    stored = list(values)
    assert all(s in values for s in stored)  # identical or equal
    assert values._mapping == view
    # Each iterator starts over; one exhausted stays exhausted.
    it = iter(values)
    assert list(it) == list(native.values()) and list(it) == []
    assert list(values) == list(native.values())
    # The values keep the region alive after the view is gone.
    del view
    assert list(values) == list(native.values())


def test_row_values_read_by_column_equal_the_records():
    records = [{"i": i, "f": i / 7, "s": f"s{i % 5}", "l": [i] * (i % 3), "n": None if i % 2 else i} for i in range(300)]
    root = bale.compact(records).root
    assert [list(r.values()) for r in root] == [list(r.values()) for r in records]
    assert [len(r.values()) for r in root] == [5] * 300
    assert all(rec["l"] in row.values() for rec, row in zip(records, root))


def test_mapping_contains_and_len(mapping):
    native, view = mapping
    assert len(view) == len(native)
    for k in native:
        assert k in view
    assert "missing" not in view
    assert 4 not in view


def test_mapping_equality():
    native = {"a": 1, "b": [1, 2]}
    view = view_of(native)
    assert view == native and native == view
    assert view == {"b": [1, 2], "a": 1}  # dict equality ignores order
    assert view != {"a": 1}
    assert view != {"a": 1, "b": [1, 3]}
    assert view != {"a": 1, "c": [1, 2]}
    assert view == view_of({"b": [1, 2], "a": 1.0})
    assert view != [("a", 1), ("b", [1, 2])]
    assert view_of({}) == {}


def test_key_equality_int_float_bool():
    for native in [{1: "one", "x": 0}, {i: i for i in range(1, 40)}]:
        view = view_of(native)
        for key in (1, 1.0, True, complex(1, 0)):
            assert view[key] == native[key]
            assert key in view
            assert view.get(key) == native[key]
    view = view_of({0: "zero", 1.5: "f", 2**64: "big", 2**61: "mid"})
    for key in (0, 0.0, -0.0, False, 0j):
        assert view[key] == "zero"
    assert view[1.5] == "f" and view[complex(1.5, 0)] == "f"
    assert view[float(2**64)] == "big"
    assert view[float(2**61)] == "mid"
    for missing in (2, 1.25, "0", b"0", None, (0,)):
        assert missing not in view


def test_key_equality_in_big_dicts():
    native = {}
    for i in range(1000):
        native[i] = f"int{i}"
        native[f"s{i}"] = i
        native[(i, str(i))] = -i
        native[i + 0.5] = "half"
        native[frozenset({i, -i - 1})] = "fs"
    native[2**100] = "big"
    native[None] = "none"
    native[b"bytes"] = "b"
    view = view_of(native)
    for k, v in native.items():
        assert view[k] == v
    for i in range(0, 1000, 7):
        assert view[float(i)] == f"int{i}"
        assert view[(float(i), str(i))] == -i
        assert view[frozenset({float(i), -i - 1.0})] == "fs"
    assert view[True] == "int1" and view[False] == "int0"
    assert float(2**100) == 2**100 and view[float(2**100)] == "big"
    for missing in (1000, "s1000", (1, "2"), 0.25, frozenset({0}), b"other", 10**31):
        assert missing not in view
        with pytest.raises(KeyError):
            view[missing]


def test_hundred_thousand_keys():
    native = {f"key{i}": i for i in range(100_000)}
    native.update({i: -i for i in range(100_000)})
    view = view_of(native)
    assert len(view) == 200_000
    for k, v in native.items():
        if view[k] != v:
            raise AssertionError(f"view[{k!r}] = {view[k]!r} != {v!r}")
    assert "key100000" not in view and 100_000 not in view and -1 not in view
    assert view == native


# ---------------------------------------------------------------------------
# Sets: SetView / FrozenSetView
# ---------------------------------------------------------------------------

SET_NATIVE = {1, "a", (1, 2), None, 2.5, b"x", frozenset({3}), 10**30}


@pytest.fixture(params=["set", "frozenset", "bigset", "bigfrozenset"])
def aset(request):
    base = SET_NATIVE if "big" not in request.param else SET_NATIVE | set(range(100, 140)) | {f"s{i}" for i in range(20)}
    native = set(base) if request.param.endswith("set") and "frozen" not in request.param else frozenset(base)
    return native, view_of(native)


def test_set_contains_and_len(aset):
    native, view = aset
    assert len(view) == len(native)
    for x in native:
        assert x in view
    for x in ["b", 2, (1, 3), b"y", frozenset({4}), 10**31, 2.25]:
        assert x not in native
        assert x not in view
    assert 1.0 in view and True in view and (1.0, 2) in view and frozenset({3.0}) in view


def test_set_iteration(aset):
    native, view = aset
    items = list(view)
    assert len(items) == len(native)
    assert set(items) == set(native)
    assert list(view) == list(native)  # the compacted order is the native iteration order


def test_set_comparisons(aset):
    native, view = aset
    smaller = set(list(native)[:-2])
    bigger = set(native) | {"extra"}
    assert view == native and native == view
    assert view == set(native) and view == frozenset(native)
    assert view == view_of(set(native))
    assert view != smaller and view != bigger
    assert view <= native and view >= native
    assert not (view < native) and not (view > native)
    assert view < bigger and view <= bigger and not (view > bigger)
    assert view > smaller and view >= smaller and not (view < smaller)
    assert smaller < view and bigger > view
    assert view.isdisjoint({"zz", 12345})
    assert not view.isdisjoint({1})


def test_set_operators(aset):
    native, view = aset
    other = {1, "zz", (1, 2), 999}
    for op in ("__and__", "__or__", "__sub__", "__xor__"):
        want = getattr(set(native), op)(other)
        got = getattr(view, op)(other)
        assert got == want, op
    assert (view & other) == (set(native) & other)
    assert (view | other) == (set(native) | other)
    assert (view - other) == (set(native) - other)
    assert (view ^ other) == (set(native) ^ other)
    assert (other & view) == (other & set(native))
    assert (other | view) == (other | set(native))
    assert (other - view) == (other - set(native))
    assert (other ^ view) == (other ^ set(native))
    assert (view & view_of(other)) == (set(native) & other)


def test_set_view_is_not_equal_to_list():
    assert view_of({1, 2}) != [1, 2]
    assert view_of(frozenset({1})) != (1,)


def test_big_set():
    native = set(range(0, 200_000, 2)) | {f"s{i}" for i in range(1000)}
    view = view_of(native)
    assert len(view) == len(native)
    for x in native:
        if x not in view:
            raise AssertionError(f"{x!r} missing from the set view")
    for i in range(1, 200_000, 2):
        if i in view:
            raise AssertionError(f"{i!r} unexpectedly in the set view")
    assert float(1000) in view and "s999" in view and "s1000" not in view
    assert view == native


# ---------------------------------------------------------------------------
# Nesting
# ---------------------------------------------------------------------------


def test_nested_access_returns_views_and_plain_scalars():
    root = view_of({"a": [1, {"b": (2, {3}, frozenset({4}), "s", b"b", 2.5, None, True, 1j, 10**30)}]})
    assert type(root) is bale.DictView
    assert type(root["a"]) is bale.ListView
    assert type(root["a"][1]) is bale.DictView
    inner = root["a"][1]["b"]
    assert type(inner) is bale.TupleView
    assert type(inner[1]) is bale.SetView
    assert type(inner[2]) is bale.FrozenSetView
    assert [type(x) for x in inner[3:]] == [str, bytes, float, type(None), bool, complex, int]
    assert type(root["a"][0]) is int


def test_views_outlive_their_parents():
    root = bale.compact({"a": [{"b": (1, 2)}]}).root
    inner = root["a"][0]["b"]
    del root
    import gc

    gc.collect()
    assert inner == (1, 2)


def test_deep_nesting_view_walk():
    depth = 50_000
    x = "leaf"
    for i in range(depth):
        x = {"d": [i, x]} if i % 2 else (i, x)
    view = bale.compact(x).root
    native = x
    for _ in range(depth):
        if isinstance(native, dict):
            assert type(view) is bale.DictView
            view, native = view["d"], native["d"]
            assert type(view) is bale.ListView
            assert view[0] == native[0]
            view, native = view[1], native[1]
        else:
            assert type(view) is bale.TupleView
            assert view[0] == native[0]
            view, native = view[1], native[1]
    assert view == native == "leaf"


def test_shared_key_sequences_read_correctly():
    records = [{"id": i, "name": f"n{i}", "tags": ["a", "b"][: i % 3]} for i in range(500)]
    records += [{"name": "other order", "id": -1}]
    view = view_of(records)
    assert view == records
    assert list(view[-1]) == ["name", "id"]
    assert view[123]["name"] == "n123"
    assert view[-1]["id"] == -1


def test_read_every_value_reads_what_a_scan_reads():
    from bale._bale import _read_every_value

    records = [{"a": i, "b": str(i) * 3, "c": [i, i + 1]} for i in range(50)]
    table = bale.compact(records)  # a TABLE: rows read by column
    rows = bale.compact(records + [{"other": 1}])  # dicts of two shapes, row by row
    assert _read_every_value(table.root) == 150
    assert _read_every_value(rows.root) == 151
    # deep: the scalars under the root (the two ints of each "c" list, and the rest)
    assert _read_every_value(table.root, deep=True) == 50 * 4
    assert _read_every_value(bale.compact({"x": [1, (2, 3)], "y": {"z": None}}).root, deep=True) == 4
    with pytest.raises(TypeError, match="list or tuple view of dicts"):
        _read_every_value(bale.compact({"a": 1}).root)
    with pytest.raises(TypeError, match="item 0 is not a dict"):
        _read_every_value(bale.compact([1, "a"]).root)
    with pytest.raises(TypeError, match="takes a view"):
        _read_every_value([1], deep=True)
    # A deep walk would not end in a cycle: refused. Shared data is walked as the tree it reads as.
    loop = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match="holds cycles"):
        _read_every_value(bale.compact(loop, share=True).root, deep=True)
    inner = [1, 2]
    assert _read_every_value(bale.compact([inner, inner, {"k": inner}], share=True).root, deep=True) == 6
