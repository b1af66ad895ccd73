"""Views combine with native values as the native types do, and say that they are read-only.

`view + [3]`, `[0] + view`, `tuple_view + (2,)`, `dict_view | {...}`,
`{...} | dict_view`, `set_view | {1}` and repetition give native results
(shallow, as slicing a view gives: nested containers stay views); operands
that the native type refuses are refused the same way. `json.dumps` of a view
names `bale.to_json` and `bale.json_default`; assignments name views as
read-only.
"""

import dataclasses
import json
import subprocess
import sys
from typing import NamedTuple

import pytest

import bale

DATA = {
    "l": [1, "two", [3, "x"]],
    "t": (1, "two", 3.0),
    "d": {"a": 1, "z": [1, "x"]},
    "s": {1, 2},
    "f": frozenset({3}),
    "n": [1.5, 2.5],
    "ints": [1, 2, 3],
}


@pytest.fixture(scope="module")
def root():
    return bale.compact(DATA).root


def _native_equal(result, expected):
    assert type(result) is type(expected)
    assert result == expected


def test_list_views_concatenate_and_repeat_like_lists(root):
    l, n, ints = root["l"], root["n"], root["ints"]
    assert isinstance(l, bale.ListView) and isinstance(n, bale.NumberListView)
    _native_equal(l + [3], DATA["l"] + [3])
    _native_equal([0] + l, [0] + DATA["l"])
    _native_equal(l + l, DATA["l"] + DATA["l"])
    _native_equal(l + n, DATA["l"] + DATA["n"])
    _native_equal(n + [1], DATA["n"] + [1])
    _native_equal([0] + n, [0] + DATA["n"])
    _native_equal(ints + l, DATA["ints"] + DATA["l"])
    _native_equal(l * 2, DATA["l"] * 2)
    _native_equal(3 * l, 3 * DATA["l"])
    _native_equal(n * 2, DATA["n"] * 2)
    _native_equal(l * -1, [])
    # Shallow, as slicing: the nested list is still a view of the region.
    assert isinstance((l + [])[2], bale.ListView)
    # In-place operators rebind to the native result; the view is unchanged.
    x = l
    x += [4]
    _native_equal(x, DATA["l"] + [4])
    assert len(l) == 3


def test_tuple_views_concatenate_and_repeat_like_tuples(root):
    t = root["t"]
    assert isinstance(t, bale.TupleView)
    _native_equal(t + (2,), DATA["t"] + (2,))
    _native_equal((0,) + t, (0,) + DATA["t"])
    _native_equal(t + t, DATA["t"] * 2)
    _native_equal(t * 2, DATA["t"] * 2)
    _native_equal(2 * t, DATA["t"] * 2)


def test_dict_views_merge_like_dicts(root):
    d = root["d"]
    _native_equal(d | {"b": 2}, DATA["d"] | {"b": 2})
    _native_equal({"b": 2} | d, {"b": 2} | DATA["d"])
    _native_equal({"a": 0} | d, DATA["d"])  # the right operand wins
    _native_equal(d | {"a": 0}, {"a": 0, "z": [1, "x"]})
    _native_equal(d | d, DATA["d"])
    assert list(({"b": 2} | d)) == ["b", "a", "z"]  # insertion order as dict | dict
    assert isinstance((d | {})["z"], bale.ListView)
    x = d
    x |= {"c": 3}
    _native_equal(x, DATA["d"] | {"c": 3})


def test_set_views_combine_like_sets(root):
    s, f = root["s"], root["f"]
    _native_equal(s | {5}, DATA["s"] | {5})
    _native_equal({5} | s, {5} | DATA["s"])
    _native_equal(s & {1}, {1})
    _native_equal(f | s, DATA["f"] | DATA["s"])


@pytest.mark.parametrize(
    "expr",
    [
        "root['l'] + (1,)",
        "(1,) + root['l']",
        "root['t'] + [1]",
        "[1] + root['t']",
        "root['d'] | [('a', 1)]",
        "root['l'] * 'a'",
        "root['l'] * 1.5",
        "root['d'] + {}",
    ],
)
def test_what_natives_refuse_views_refuse(root, expr):
    native_expr = expr.replace("root['l']", "DATA['l']").replace("root['t']", "DATA['t']").replace("root['d']", "DATA['d']")
    with pytest.raises(TypeError):
        eval(native_expr)
    with pytest.raises(TypeError):
        eval(expr)


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Pair(NamedTuple):
    a: int
    b: int


def test_assigning_to_a_record_view_says_views_are_read_only():
    region = bale.compact([Point(1, 2), Pair(3, 4)])
    p = region.root[0]
    with pytest.raises(AttributeError, match=r"cannot set field 'x' of a 'Point' record view: bale views are read-only"):
        p.x = 3
    with pytest.raises(AttributeError, match=r"cannot set attribute 'w' of a 'Point' record view: bale views are read-only"):
        p.w = 3
    with pytest.raises(AttributeError, match=r"cannot delete field 'y' .*read-only"):
        del p.y
    with pytest.raises(TypeError, match="read-only"):
        region.root[1][0] = 5
    assert p.x == 1 and region.root[1] == (3, 4)


@pytest.mark.parametrize("key", ["l", "t", "d", "s", "f", "n"])
def test_assigning_to_any_view_says_views_are_read_only(root, key):
    view = root[key]
    with pytest.raises(TypeError, match="bale views are read-only"):
        view[0] = 1
    with pytest.raises(TypeError, match="bale views are read-only"):
        del view[0]
    with pytest.raises(AttributeError, match="bale views are read-only"):
        view.attribute = 1
    with pytest.raises(AttributeError, match="bale views are read-only"):
        del view.attribute
    assert bale.thaw(view) == DATA[key]


def test_json_default_writes_views(root):
    plain = bale.compact({"l": DATA["l"], "t": DATA["t"], "d": DATA["d"], "n": DATA["n"]}).root
    expected = json.dumps({"l": DATA["l"], "t": DATA["t"], "d": DATA["d"], "n": DATA["n"]})
    assert json.dumps(plain, default=bale.json_default) == expected
    assert json.dumps(plain, default=bale.json_default, separators=(",", ":")).encode() == bale.to_json(plain)
    with pytest.raises(TypeError, match="Object of type SetView is not JSON serializable"):
        json.dumps(root["s"], default=bale.json_default)


_DUMPS = """
import sys
{first}
{second}
view = bale.compact({{"a": [1, 2]}}).root
try:
    json.dumps({{"x": view}})
except TypeError as e:
    print(e)
else:
    sys.exit("json.dumps of a view did not raise")
try:
    json.dumps(object())
except TypeError as e:
    print(e)
"""


@pytest.mark.parametrize("order", [("import bale", "import json"), ("import json", "import bale")])
def test_json_dumps_of_a_view_points_to_to_json(order):
    out = subprocess.run([sys.executable, "-c", _DUMPS.format(first=order[0], second=order[1])],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    view_error, other_error = out.stdout.splitlines()
    assert view_error.startswith("Object of type DictView is not JSON serializable")
    assert "bale.to_json(view)" in view_error and "default=bale.json_default" in view_error
    assert other_error == "Object of type object is not JSON serializable"
