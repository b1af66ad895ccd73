"""Round trips: compact -> view / thaw / bytes+load / save+open gives back the value.

Values are compared with ``same`` (identical types at every level, floats by
bit pattern, dicts in insertion order), since nan != nan and 1 == 1.0 == True.
"""

import json
import math
import os
import struct
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bale
from _bale_testlib import assert_same, expected_thaw, float_bits, has_nan
from conftest import json_corpus_files

# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------

# Every code point, lone surrogates included (hypothesis excludes them by default).
any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
texts = st.one_of(
    st.text(any_char, max_size=20),
    st.text(st.characters(max_codepoint=0x7F, exclude_categories=()), max_size=20),
    st.text(st.characters(max_codepoint=0xFF, exclude_categories=()), max_size=20),
    st.text(st.characters(max_codepoint=0xFFFF, exclude_categories=()), max_size=20),
    st.sampled_from(["", "a", "abcdefg", "abcdefgh", "\ud800", "\udfff", "a\udc80b", "\U0001f600", "\U0010ffff", "\x00", "\x7f", "\x80", "\xff", "\u0100"]),
)
ints = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.sampled_from([0, 1, -1, 2**60 - 1, 2**60, -(2**60), -(2**60) - 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, -(2**64), 10**100]),
)
floats_no_nan = st.floats(allow_nan=False)
floats_any = st.one_of(
    st.floats(),
    st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan]),
    st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0]),
)
complex_no_nan = st.complex_numbers(allow_nan=False)
complex_any = st.builds(complex, floats_any, floats_any)

hashable_scalars = st.one_of(st.none(), st.booleans(), ints, floats_no_nan, complex_no_nan, texts, st.binary(max_size=20))
hashables = st.recursive(
    hashable_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4).map(tuple), st.frozensets(inner, max_size=4)),
    max_leaves=12,
)

value_scalars = st.one_of(
    st.none(), st.booleans(), ints, floats_any, complex_any, texts, st.binary(max_size=20),
    st.binary(max_size=20).map(bytearray),
)
values = st.recursive(
    value_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.lists(inner, max_size=6).map(tuple),
        st.dictionaries(hashables, inner, max_size=6),
        st.dictionaries(hashables, inner, min_size=9, max_size=14),  # big enough for a hash index
        st.sets(hashables, max_size=12),
        st.frozensets(hashables, max_size=12),
    ),
    max_leaves=40,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------


@SETTINGS
@given(values)
def test_thaw_of_compact_is_identical(x):
    region = bale.compact(x)
    assert_same(expected_thaw(x), bale.thaw(region.root))


@SETTINGS
@given(values)
def test_view_equals_original(x):
    if has_nan(x):
        return
    root = bale.compact(x).root
    assert root == x
    assert x == root
    assert not (root != x)


@SETTINGS
@given(values)
def test_bytes_and_load_round_trip(x):
    region = bale.compact(x)
    data = bytes(region)
    assert len(data) == region.nbytes
    again = bale.load(data)
    assert bytes(again) == data
    assert_same(expected_thaw(x), bale.thaw(again.root))
    checked = bale.load(data, verify=True)
    assert_same(expected_thaw(x), bale.thaw(checked.root))
    assert region.verify() is None


# The compactor (Python objects) and the copy of a region (stored values,
# `Region.compacted()`) are two sources of the core's one encoder
# (`bale_core::encoder`): a copy of a fresh region writes its bytes again,
# byte for byte (the header aside).
records_lists = st.lists(
    st.fixed_dictionaries(
        {"a": ints, "b": texts, "c": st.lists(st.one_of(ints, texts), max_size=3), "d": st.floats(allow_nan=False)}
    ),
    min_size=4,
    max_size=30,
)


@SETTINGS
@given(st.one_of(values, records_lists, st.lists(records_lists, max_size=3)))
def test_a_copy_writes_the_compactors_bytes_again(x):
    region = bale.compact(x)
    assert bytes(region.compacted())[64:] == bytes(region)[64:]


def test_a_copy_writes_a_string_met_again_once_even_when_another_took_its_cache_entry():
    # Found by the property test above: "abcdefgh" (one object, referenced
    # twice) and "00\x80" fall on one entry of the copy's direct-mapped cache
    # of strings, so the copy wrote "abcdefgh" a second time. A source this
    # small now remembers every string it copied.
    s = "".join(["abcd", "efgh"])
    big = 10**100
    x = [[{"a": 0, "d": 0.0, "b": 0, "c": []}], [
        {"a": 0, "b": 0, "c": [0, 0], "d": 0.0}, {"d": 0.0, "b": 0, "c": [0, 0, s], "a": 0},
        {"a": 2**63, "b": "\x83", "c": [], "d": 0.0}, {"a": 0, "d": 0.0, "c": [0], "b": "0" * 17},
        {"b": "0" * 16 + "\u0100", "c": [0], "a": 0, "d": 0.0}, {"b": 0, "a": 0, "c": [0, 0], "d": 0.0},
        {"a": 0, "c": [0, 0, "0" * 10 + "\U00010000"], "b": 0, "d": 0.0}, {"a": 0, "b": "\x82", "c": [0, 0, big], "d": 0.0},
        {"a": 0, "b": "\x81", "d": 0.0, "c": [0, 0, "0" * 6 + "\U00010000"]}, {"a": 2**60, "b": "0" * 9, "c": [0, 0, 0], "d": 0.0},
        {"a": big, "b": "\x80", "c": [2**60, 2**60, "0" * 4 + "\U00010000"], "d": 0.0},
        {"c": [""], "b": "00\x80", "a": 0, "d": 0.0}, {"a": 0, "b": s, "c": [], "d": 0.0}]]
    region = bale.compact(x)
    assert bytes(region.compacted())[64:] == bytes(region)[64:]


@SETTINGS
@given(values)
def test_a_copy_of_a_shared_region_writes_its_bytes_again(x):
    region = bale.compact(x, share=True)
    assert bytes(region.compacted())[64:] == bytes(region)[64:]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_save_and_open_round_trip(x):
    region = bale.compact(x)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "value.bale")
        region.save(path)
        opened = bale.open(path, verify=True)
        assert bytes(opened) == bytes(region)
        assert_same(expected_thaw(x), bale.thaw(opened.root))
        del opened


# ---------------------------------------------------------------------------
# Scalars, explicitly
# ---------------------------------------------------------------------------

SCALARS = [
    None, True, False,
    0, 1, -1, 7, 2**60 - 1, -(2**60), 2**60, -(2**60) - 1, 2**62, 2**63 - 1, -(2**63),
    2**63, -(2**63) - 1, 2**64 - 1, 2**64, -(2**64), 10**100, -(10**100), 2**1000 + 1, -(2**4000),
    0.0, -0.0, 1.5, -2.25, 1e308, 5e-324, -5e-324, math.inf, -math.inf, math.nan, -math.nan,
    struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0],
    struct.unpack("<d", struct.pack("<Q", 0xFFF800000000BEEF))[0],
    0j, complex(-0.0, -0.0), complex(1, 2), complex(math.inf, math.nan), complex(-0.0, 1e-300),
    "", "a", "abcdefg", "abcdefgh", "hello world", "\x00", "\x7f", "\x80", "\xe9t\xe9", "\xff" * 9,
    "\u0100", "\u20ac uro", "\ud800", "\udfff", "a\ud800b\udc00", "\U0001f600", "\U0010ffff", "mixed \xe9 \u20ac \U0001f600 \ud83d",
    "x" * 65535, "x" * 65536, "\xe9" * 70000, "\u20ac" * 70000, "\U0001f600" * 70000, "\ud800" * 66000,
    b"", b"\x00", b"abcdefg", bytes(range(256)), b"\xff" * 100_000,
]


@pytest.mark.parametrize("value", SCALARS, ids=lambda v: repr(v)[:40])
def test_scalar_root_is_the_plain_value(value):
    region = bale.compact(value)
    root = region.root
    assert type(root) is type(value)
    assert_same(value, root)
    assert_same(value, bale.thaw(root))
    assert_same(value, bale.load(bytes(region), verify=True).root)


@pytest.mark.parametrize("value", SCALARS, ids=lambda v: repr(v)[:40])
def test_scalar_inside_containers(value):
    data = [value, (value,), {"k": value}, {"k%d" % i: value for i in range(10)}]
    region = bale.compact(data)
    root = region.root
    assert_same(value, root[0])
    assert_same(value, root[1][0])
    assert_same(value, root[2]["k"])
    assert_same(value, root[3]["k7"])
    assert_same(data, bale.thaw(root))
    if not has_nan(value):
        assert root == data


def test_negative_zero_keeps_its_sign():
    root = bale.compact([-0.0, 0.0, complex(-0.0, -0.0)]).root
    assert math.copysign(1.0, root[0]) == -1.0
    assert math.copysign(1.0, root[1]) == 1.0
    assert math.copysign(1.0, root[2].real) == -1.0
    assert math.copysign(1.0, root[2].imag) == -1.0


def test_nan_bit_patterns_are_kept():
    patterns = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001, 0x7FFFFFFFFFFFFFFF, 0xFFF0000000000001]
    nans = [struct.unpack("<d", struct.pack("<Q", p))[0] for p in patterns]
    # Precondition: CPython itself keeps these bits through a float object.
    assert [struct.unpack("<Q", float_bits(x))[0] for x in nans] == patterns
    root = bale.compact(nans).root
    assert [struct.unpack("<Q", float_bits(x))[0] for x in root] == patterns
    assert [struct.unpack("<Q", float_bits(x))[0] for x in bale.thaw(root)] == patterns


def test_bytearray_is_stored_as_bytes():
    region = bale.compact([bytearray(b"abc"), {"k": bytearray()}])
    assert type(region.root[0]) is bytes and region.root[0] == b"abc"
    thawed = bale.thaw(region.root)
    assert thawed == [b"abc", {"k": b""}]
    assert type(thawed[0]) is bytes and type(thawed[1]["k"]) is bytes
    assert type(bale.compact(bytearray(b"xy")).root) is bytes


def test_compact_copies_so_later_changes_do_not_show():
    data = {"a": [1, 2], "b": bytearray(b"xy"), "s": {1}}
    region = bale.compact(data)
    data["a"].append(3)
    data["b"][0] = 0
    data["s"].add(2)
    data["c"] = 1
    assert_same({"a": [1, 2], "b": b"xy", "s": {1}}, bale.thaw(region.root))


def test_container_types_survive_at_every_level():
    x = {
        "list": [1, [2, (3, {4: frozenset({5, (6, 7)})})]],
        "tuple": (1, (2, [3])),
        "set": {1, "a", (2, 3), frozenset({4})},
        "frozenset": frozenset({None, b"b", 2.5}),
        (1, "k"): {},
        frozenset({1, 2}): set(),
        None: (),
        b"bytes": [],
        2.5: frozenset(),
        10**30: "big",
        -3: "neg",
    }
    assert_same(x, bale.thaw(bale.compact(x).root))


def test_dict_insertion_order_is_kept():
    keys = [f"k{(i * 7919) % 1000}" for i in range(1000)]
    x = {k: i for i, k in enumerate(keys)}
    root = bale.compact(x).root
    assert list(root) == list(x)
    assert list(root.keys()) == list(x.keys())
    assert list(root.values()) == list(x.values())
    assert list(bale.thaw(root)) == list(x)


def test_equal_keys_of_different_types_keep_the_first_key_object():
    # {1: 'a', True: 'b'} is {1: 'b'}; the stored key must stay the int 1.
    x = {1: "a", True: "b", 2.0: "c", 2: "d"}
    assert_same(x, bale.thaw(bale.compact(x).root))


def test_thaw_passes_natives_through():
    assert bale.thaw(5) == 5
    assert bale.thaw("s") == "s"
    assert bale.thaw(None) is None
    assert bale.thaw([1]) == [1]
    assert bale.thaw({"a": (1,)}) == {"a": (1,)}


def test_thaw_of_a_region_is_the_thaw_of_its_root():
    value = {"a": [1, (2, "x")], "b": None}
    region = bale.compact(value)
    assert_same(value, bale.thaw(region))
    assert_same(5, bale.thaw(bale.compact(5)))


def test_thaw_of_nested_views():
    root = bale.compact({"a": [1, {"b": (2, {3}, frozenset({4}))}]}).root
    inner = root["a"][1]
    assert_same({"b": (2, {3}, frozenset({4}))}, bale.thaw(inner))
    assert_same((2, {3}, frozenset({4})), bale.thaw(inner["b"]))
    assert_same({3}, bale.thaw(inner["b"][1]))
    assert_same(frozenset({4}), bale.thaw(inner["b"][2]))


def test_long_containers_over_65535_elements():
    x = {
        "list": list(range(70_000)),
        "tuple": tuple(str(i) for i in range(70_000)),
        "set": set(range(70_000)),
        "frozenset": frozenset(range(-70_000, 0)),
        "dict": {i: -i for i in range(70_000)},
    }
    region = bale.compact(x)
    assert_same(x, bale.thaw(region.root))
    assert region.root == x
    assert region.root["list"][69_999] == 69_999
    assert region.root["tuple"][-1] == "69999"
    assert 69_999 in region.root["set"] and 70_000 not in region.root["set"]
    assert region.root["dict"][69_999] == -69_999
    bale.load(bytes(region), verify=True)


def test_million_nested_pairs():
    t = ()
    for i in range(10**6):
        t = (i, t)
    region = bale.compact(t)
    # Walk the view iteratively (no ==, which recurses in CPython).
    v = region.root
    for i in range(10**6 - 1, -1, -1):
        assert len(v) == 2
        assert v[0] == i
        v = v[1]
    assert len(v) == 0 and v == ()
    thawed = bale.thaw(region.root)
    a, b = t, thawed
    for _ in range(10**6):
        assert type(b) is tuple and len(b) == 2 and b[0] == a[0]
        a, b = a[1], b[1]
    assert b == () and type(b) is tuple
    bale.load(bytes(region), verify=True)
    del thawed, t, a


def test_deeply_nested_lists_and_dicts():
    x = []
    for i in range(100_000):
        x = [i, {"next": x}] if i % 2 else [x]
    region = bale.compact(x)
    assert_same(x, bale.thaw(region.root))
    bale.load(bytes(region), verify=True)


# ---------------------------------------------------------------------------
# Real JSON corpora (../shared/data/json)
# ---------------------------------------------------------------------------


def _read_corpus_file(path):
    if path.suffix == ".ndjson":
        with path.open(encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    with path.open(encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("name", [p.name for p in json_corpus_files()])
def test_json_corpus_round_trips(json_corpus, name):
    data = _read_corpus_file(json_corpus / name)
    region = bale.compact(data)
    assert_same(data, bale.thaw(region.root))
    assert region.root == data
    checked = bale.load(bytes(region), verify=True)
    assert_same(data, bale.thaw(checked.root))
    assert region.verify() is None


def test_json_corpus_is_found(json_corpus):
    names = {p.name for p in json_corpus_files()}
    assert {"twitter.json", "canada.json", "citm_catalog.json"} <= names


@pytest.mark.parametrize("container", [list, tuple, lambda v: [{"v": x, "l": [x, x]} for x in v]])
def test_ints_around_digit_and_slot_boundaries(container):
    # Ints are read from CPython's layout (up to 63 bits as an i64, up to
    # 120 as an i128, longer ones into bytes) and made from digits (up to
    # 128 bits) where the layout is checked, else through the C-API: every
    # boundary must round trip exactly (2^63 - 1 has a top digit of 7, 2^63
    # of 8), as exact ints of the same hash.
    edges = [0, 1, -1]
    for e in (29, 30, 31, 59, 60, 61, 62, 63, 64, 90, 119, 120, 121, 126, 127, 128, 150):
        edges += [2**e - 1, 2**e, 2**e + 1, -(2**e) + 1, -(2**e), -(2**e) - 1]
    value = container(edges)
    r = bale.compact(value)
    assert bale.thaw(r.root) == value
    thawed = bale.thaw(bale.compact(edges).root)
    assert [(type(v), hash(v)) for v in thawed] == [(int, hash(v)) for v in edges]
    assert bale.load(bytes(r), verify=True).root == value
    pairs = [(a, b) for a in edges[:12] for b in edges[-12:]]
    assert bale.thaw(bale.compact(pairs).root) == pairs
