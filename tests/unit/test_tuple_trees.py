"""Tuples written by recursion (tuple_trees.rs) instead of the frame loop.

Whatever a tuple holds, the bytes must be those the frame loop writes
(`_compact_by_frames` is compact() with the recursion turned off), and
errors must name the same path: the recursion hands the tuples it is
inside over to frames when it meets anything but tuples and scalars, and
when it is nested deeper than it goes.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bale
from _bale_testlib import assert_same
from bale._bale import _compact_by_frames
from bale._datagen import bintree

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(-(2**29), 2**29),  # PAIR and int slots
    st.integers(), st.integers(-(2**80), 2**80),  # out-of-line and beyond 64 bits
    st.floats(), st.text(max_size=12), st.sampled_from(["shared string here", "é", "\U0001f600", ""]),
    st.binary(max_size=6), st.complex_numbers(allow_nan=False),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5).map(tuple),
        st.tuples(inner, inner),
        st.tuples(st.tuples(inner, inner), st.tuples(inner, inner)),
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
        st.frozensets(st.integers(0, 5), max_size=3),
    ),
    max_leaves=60,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(values)
def test_same_bytes_as_the_frame_loop_and_round_trips(x):
    region = bale.compact(x)
    assert bytes(region) == _compact_by_frames(x)
    assert_same(x, bale.thaw(region.root))


def nest(depth, leaf):
    for i in range(depth):
        leaf = (i, leaf, "s%d" % (i % 3))
    return leaf


@pytest.mark.parametrize("depth", [1, 63, 64, 65, 130, 5000])
@pytest.mark.parametrize("leaf", [7, [1, 2], {"a": (1, 2)}, 2**70], ids=["int", "list", "dict", "bigint"])
def test_deep_nests_hand_over_to_frames_with_the_same_bytes(depth, leaf):
    x = nest(depth, leaf)
    wrapped = [x, {"k": x}]
    for value in (x, wrapped):
        region = bale.compact(value)
        assert bytes(region) == _compact_by_frames(value)
        bale.load(bytes(region), verify=True)
    v = bale.compact(x).root
    for i in reversed(range(depth)):
        assert v[0] == i and v[2] == "s%d" % (i % 3)
        v = v[1]
    assert v == leaf


def test_trees_of_pairs_round_trip():
    for depth in (0, 1, 2, 3, 11):
        tree = bintree(depth)
        region = bale.compact(tree)
        assert bytes(region) == _compact_by_frames(tree)
        assert bale.thaw(region.root) == tree
        assert region.root == tree


class Opaque:
    pass


def chain(depth, leaf):
    for _ in range(depth):
        leaf = (1, leaf)
    return leaf


@pytest.mark.parametrize(
    "value, message",
    [
        ((1, (2, (3, Opaque()))), "root[1][1][1]: cannot compact Opaque"),
        ((1, 2**70, (3, Opaque())), "root[2][1]: cannot compact Opaque"),
        (((1, 2), [1, (3, Opaque())]), "root[1][1][1]: cannot compact Opaque"),
        ((1, {"a": (2, Opaque())}), "root[1]['a'][1]: cannot compact Opaque"),
        (chain(3, [Opaque()]), "root[1][1][1][0]: cannot compact Opaque"),
        (chain(70, Opaque()), "root" + "[1]" * 12 + "...<46 levels>..." + "[1]" * 12 + ": cannot compact Opaque"),
    ],
    ids=["nested", "after-bigint", "in-list", "in-dict", "list-leaf", "deeper-than-recursion"],
)
def test_errors_name_the_path_inside_tuples(value, message):
    with pytest.raises(bale.CompactError) as info:
        bale.compact(value)
    assert str(info.value) == message
    with pytest.raises(bale.CompactError) as info:
        _compact_by_frames(value)
    assert str(info.value) == message


def test_a_cycle_through_a_list_inside_tuples_is_refused():
    cell = []
    cell.append((1, (2, cell)))
    with pytest.raises(bale.CompactError, match=r"root\[0\]\[1\]\[1\]: cannot compact a cycle: this list is its own ancestor root"):
        bale.compact(cell)


def test_strings_met_again_are_written_once():
    s = "a string longer than seven"
    x = tuple((s, (i, s)) for i in range(50))
    region = bale.compact(x)
    assert bytes(region) == _compact_by_frames(x)
    assert bale._bale.region_stats(region)["kinds"]["strings"][0] == 1


def test_short_sequences_of_ints_beyond_the_slot_are_written_as_the_frame_loop_writes_them():
    import json

    big = [2**60, -(2**60) - 1, 2**62 + 5, 2**63 - 1]
    values = [[big[0], "a longer string"], [big[1], 1.5, None], [big[2], big[3]], [7, big[0], "x", 2.5]]
    for v in values:
        text = json.dumps(v)
        # The JSON source writes these lists through the walk's frames.
        assert bytes(bale.compact(v)) == bytes(bale.compact_json(text)), v
        assert bale.thaw(bale.compact(tuple(v))) == tuple(v)
    # Leaves of a tree beyond the slot: one read of each int, same values.
    tree = ((big[0], big[1]), ((big[2], 3), (big[3], -(2**61))))
    assert bale.thaw(bale.compact(tree)) == tree
    assert bale.compact(tree).root == tree
