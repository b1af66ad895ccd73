"""bale.to_json: JSON straight from the region."""

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bale
from conftest import json_corpus_files


@pytest.mark.parametrize("src", [p for p in json_corpus_files() if p.suffix == ".json"], ids=lambda p: p.name)
def test_corpus_round_trips(src):
    value = json.loads(src.read_text(encoding="utf-8"))
    r = bale.compact(value)
    assert json.loads(bale.to_json(r)) == value
    assert json.loads(bale.to_json(r.root)) == value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_matches_json_dumps_for_json_values(value):
    try:
        json.dumps(value).encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates: tested below
    out = bale.to_json(bale.compact(value))
    assert json.loads(out) == value
    # Same text as json.dumps without spaces, except float spelling.
    again = json.loads(out)
    assert json.dumps(again, separators=(",", ":"), ensure_ascii=False) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_non_string_keys_as_json_dumps_writes_them():
    value = {1: "a", 2.5: "b", False: "c", None: "d", 10**30: "e"}
    assert json.loads(bale.to_json(value)) == json.loads(json.dumps(value))


def test_tuples_are_arrays_and_big_ints_exact():
    assert bale.to_json((1, (2, [3]))) == b"[1,[2,[3]]]"
    assert bale.to_json([-(2**200), 2**63]) == f"[{-(2**200)},{2**63}]".encode()


@pytest.mark.parametrize(
    "value, message",
    [
        ({"a": [math.nan]}, 'root["a"][0]: NaN has no JSON form'),
        ([1, math.inf], "root[1]: inf has no JSON form"),
        ({"b": b"x"}, 'root["b"]: bytes have no JSON form'),
        ([{1, 2}], "root[0]: a set has no JSON form"),
        ([1j], "complex"),
        ({(1, 2): 1}, "dict key of kind tuple"),
        (["\ud800"], "lone surrogate U+D800"),
    ],
)
def test_what_json_cannot_hold_raises_naming_the_place(value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        bale.to_json(value)


def test_cycles_are_refused():
    loop = []
    loop.append(loop)
    r = bale.compact(loop, share=True)
    with pytest.raises(ValueError, match="contains itself"):
        bale.to_json(r)
    x = [1, 2]
    shared = bale.compact([x, x], share=True)
    assert bale.to_json(shared) == b"[[1,2],[1,2]]"


def test_strings_escape_like_json():
    s = 'quote " backslash \\ newline \n tab \t nul \x00 \x1f caf\u00e9 \u20ac \U0001f600'
    out = bale.to_json([s])
    assert json.loads(out) == [s]
    assert b"\\u0000" in out and "\u20ac".encode() in out


def dumps_like_bale(value):
    """What bale.to_json promises to equal: json.dumps without NaN or infinities, compact, UTF-8."""
    return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_floats_are_written_as_float_repr_like_json_dumps():
    assert bale.to_json({1e16: 1}) == b'{"1e+16":1}' == dumps_like_bale({1e16: 1})
    assert bale.to_json({1e-07: 1.0}) == b'{"1e-07":1.0}'
    values = [1e16, 1e-07, 1e-05, 0.0001, 1e15, 100.0, -0.0, 5e-324, 1.7976931348623157e308, 2.5e-300]
    assert bale.to_json(values) == dumps_like_bale(values)
    assert bale.to_json([{"x": v} for v in values]) == dumps_like_bale([{"x": v} for v in values])  # a table's column


@pytest.mark.parametrize("key", [math.nan, math.inf, -math.inf])
def test_non_finite_float_keys_raise_naming_the_place_as_json_dumps_without_allow_nan(key):
    with pytest.raises(ValueError):
        json.dumps({key: 1}, allow_nan=False)
    with pytest.raises(ValueError, match=re.escape(f"root[0][{key!r}]: the float key {key!r} has no JSON form")):
        bale.to_json([{"a": 1, key: 2}])


float_keyed = st.dictionaries(
    st.floats() | st.integers() | st.text(max_size=4) | st.booleans() | st.none(),
    st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.text(max_size=4) | st.lists(st.floats(), max_size=4),
    max_size=12,
)


@settings(max_examples=500, deadline=None)
@given(st.lists(float_keyed, max_size=4) | float_keyed)
def test_float_keys_and_values_match_json_dumps_byte_for_byte(value):
    try:
        expected = dumps_like_bale(value)
    except (ValueError, UnicodeEncodeError):
        with pytest.raises(ValueError):
            bale.to_json(value)
        return
    assert bale.to_json(value) == expected
    assert bale.to_json(bale.compact(value).root) == expected


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_json_values_match_json_dumps_byte_for_byte(value):
    try:
        expected = dumps_like_bale(value)
    except UnicodeEncodeError:
        return  # lone surrogates: tested above
    assert bale.to_json(bale.compact(value)) == expected
