"""Lists, tuples and plain dicts are taken in the walk's loop when nothing
is shared (`Compactor::seq_value`, `visit`'s branch for sequences, inlined
there), and a list whose first item is a list or dict skips the tests for
rows of numbers and short rows of leaves. The bytes must be those of the
general path: the core's JSON source has neither, so `compact_json` is the
reference. Cycles through such lists must still be found, and the share
mode must still write a list met twice once."""

import json

import pytest

import bale

FIRSTS = [[], [1], [[2]], ["a", 1.5], {}, {"k": [1]}, {"a": 1, "b": "x"}]
RESTS = [[], [0], ["s", None], [[1, 2], {"z": 3}], list(range(6)), [{"r": i} for i in range(5)]]


def same_bytes(value):
    text = json.dumps(value)
    assert bytes(bale.compact(json.loads(text))) == bytes(bale.compact_json(text)), text[:200]


@pytest.mark.parametrize("first", FIRSTS, ids=repr)
def test_a_list_or_dict_first_then_anything(first):
    for rest in RESTS:
        value = [first, *rest]
        same_bytes(value)
        same_bytes({"x": value, "y": [value, value]})
        assert bale.thaw(bale.compact(value)) == value


@pytest.mark.parametrize("depth", [1, 2, 31, 32, 33, 100, 700])
def test_lists_nested_level_after_level(depth):
    # Past 32 levels open containers are found through `deep_path`.
    for leaf in ([7], [1.5, 2.5], ["s"], [{"a": 1}], []):
        value = leaf
        for _ in range(depth):
            value = [value]
        same_bytes([value, value])
        assert bale.thaw(bale.compact(value)) == value


def test_lists_of_few_dicts_and_tables_of_many_dicts():
    for n in range(1, 8):
        same_bytes([{"a": i, "b": str(i)} for i in range(n)])
        same_bytes([[{"a": i}] for i in range(n)])


@pytest.mark.parametrize("depth", [0, 1, 40])
def test_a_cycle_through_such_a_list_is_refused(depth):
    outer = [[]]
    inner = outer
    for _ in range(depth):
        inner[0] = [[]]
        inner = inner[0]
    inner[0].append(outer)
    with pytest.raises(bale.CompactError, match="cycle"):
        bale.compact(outer)
    got = bale.thaw(bale.compact(outer, share=True))
    node = got
    for _ in range(depth):
        node = node[0]
    assert node[0][0] is got


def test_share_mode_writes_a_list_met_twice_once():
    inner = [[1, 2], [3]]
    value = [inner, [inner], inner]
    got = bale.thaw(bale.compact(value, share=True))
    assert got == value
    assert got[0] is got[2] is got[1][0]


@pytest.mark.parametrize(
    "row",
    [[1.5], [1.5, -2.5], [0, 1, -(1 << 63)], [1, 2.5], [2.5, 1], [1, 1 << 70], [1, "a"], [1.5, None], [True, 1], [1, [2]]],
    ids=repr,
)
def test_rows_of_numbers_and_rows_that_are_not(row):
    # A row of one kind of number is written in the loop; any other item
    # (another number kind, an int beyond 64 bits, a leaf, a container)
    # leaves the list to `visit`.
    same_bytes([row, [row, row], {"r": row}])
    assert bale.thaw(bale.compact(row)) == row
