"""Thaw's loop (`thawing.rs`): the leading scalars of a short list or tuple
are made at once and a frame fills the rest (`fill_scalars`); lists, tuples
and plain dicts met as elements are made without a `Value`, their frames
pushed where they are made (`container_made`, Note [Frames pushed where
made]). Every mix of positions thaws to the value compacted, in plain and
shared regions, and the depth limit still holds on every path."""

import collections
import itertools

import pytest

import bale
from bale import _bale

BIG = 1 << 70
ITEMS = [
    BIG,
    -(BIG + 12345),
    2.5,
    "a string longer than seven",
    "short",
    "caf\xe9 \u20ac \U0001f600",
    None,
    True,
    7,
    [1, 2],
    [],
    (3, (4, BIG)),
    {"a": 1, "b": [BIG, "x" * 20]},
    {},
]


def exact(a, b):
    """Equal, with the same types all the way down (1 == 1.0 == True hides a wrong kind)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            exact(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            exact(a[k], b[k])
    else:
        assert a == b or (a != a and b != b)


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("length", [1, 2, 3, 4, 5])
def test_short_sequences_of_every_mix_thaw_to_what_was_compacted(length, share):
    # Every item in every position of lists and tuples up to one past the
    # length filled at once (4): a container at position k leaves items
    # 0..k made by `fill_scalars` and the rest to the frame.
    mixes = list(itertools.islice(itertools.product(ITEMS, repeat=length), 0, 4000, 7 if length > 2 else 1))
    value = [list(m) for m in mixes] + [tuple(m) for m in mixes]
    exact(bale.thaw(bale.compact(value, share=share)), value)


def test_a_tree_of_tuples_over_big_ints_and_strings():
    level = [(BIG + i, f"leaf number {i}") if i % 3 else (float(i), None) for i in range(2000)]
    while len(level) > 1:
        level = [tuple(level[i : i + 2]) for i in range(0, len(level), 2)]
    exact(bale.thaw(bale.compact(level[0])), level[0])


def test_a_repeated_string_in_short_tuples_is_one_object():
    # fill_scalars reads strings through the thaw's string memo, as the loop does.
    word = "a word of the vocabulary"
    got = bale.thaw(bale.compact([(word, i) for i in range(100)]))
    assert len({id(t[0]) for t in got}) == 1


def test_dicts_in_dicts_of_every_kind():
    hetero = [{f"k{(i * 7 + j) % 30}": j for j in range(3 + i % 5)} for i in range(200)]
    value = {
        "plain": {"inner": {"deeper": {"x": [1, {"y": BIG}]}}},
        # Past 32 key sequences, dicts name their keys by ids (ID_DICT).
        "hetero": {f"h{i}": d for i, d in enumerate(hetero)},
        "classes": {
            "ordered": collections.OrderedDict([("b", 1), ("a", {"c": 2})]),
            "default": collections.defaultdict(list, {"k": [1]}),
            "counter": collections.Counter("abca"),
        },
        "empty": {"e": {}},
    }
    region = bale.compact(value)
    assert "dicts (key ids)" in _bale.region_stats(region)["kinds"]
    got = bale.thaw(region)
    exact(got, value)
    assert type(got["classes"]["default"]) is collections.defaultdict
    assert got["classes"]["default"].default_factory is list


@pytest.mark.parametrize("kind", ["list", "tuple", "dict", "mixed"])
def test_the_depth_limit_holds_on_every_path(kind):
    # repr of a view thaws with the recursion limit as its depth limit; the
    # frame that passes it is refused where it is pushed.
    v = 0
    for i in range(1500):
        if kind == "list" or (kind == "mixed" and i % 3 == 0):
            v = [v]
        elif kind == "tuple" or (kind == "mixed" and i % 3 == 1):
            v = (v, "s" * 9, BIG)
        else:
            v = {"a": v, "b": 2.5}
    region = bale.compact(v)
    with pytest.raises(RecursionError, match="nests more than"):
        repr(region.root)
    # The whole value thaws: thaw itself has no depth limit.
    got = bale.thaw(region)
    for _ in range(1500):
        got = got[0] if isinstance(got, (list, tuple)) else got["a"]
    assert got == 0
