"""Fractions and pathlib paths: the FRACTION and PATH kinds everywhere a
value goes (compact, views, keys, thaw, append, share=True, the store,
to_json, verify), and crafted bytes that break their rules."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap
from fractions import Fraction as F
from pathlib import PosixPath, PurePosixPath, PureWindowsPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bale
from _bale_testlib import fix_checksum, put_u64, thawed_both_ways as both_ways, u64

KIND_FRACTION = 0x20
KIND_PATH = 0x21


def same_exactly(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_exactly(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_exactly(a[k], b[k]) for k in a)
    if isinstance(a, (PureWindowsPath, PurePosixPath)):
        return str(a) == str(b)
    return a == b


# ---------------------------------------------------------------- fractions

FRACTIONS = [F(0), F(1, 2), F(-7, 3), F(2), F(-1), F(2**70, 3), F(3, 2**70), F(-(3**500), 2**64 + 1),
             F(1, 2**1074), F(3, 2**1074), F(1, 2**1075), F(2**53 + 1, 2), F(10**30, 1)]


@pytest.mark.parametrize("f", FRACTIONS, ids=str)
def test_fractions_round_trip_as_fractions(f):
    for got in both_ways([f, {"x": f}, (f, f)]):
        assert same_exactly(got, [f, {"x": f}, (f, f)])
    assert bale.compact(f).root == f
    assert type(bale.compact([f]).root[0]) is F


@settings(max_examples=200, deadline=None)
@given(st.fractions() | st.builds(F, st.integers(-(2**3000), 2**3000), st.integers(1, 2**3000)))
def test_any_fraction_round_trips(f):
    for got in both_ways({"f": f, "k": {f: 1}}):
        assert same_exactly(got, {"f": f, "k": {f: 1}})


NUMBERS = st.one_of(
    st.fractions(max_denominator=2**12),
    st.builds(F, st.integers(-(2**80), 2**80), st.sampled_from([1, 2, 4, 2**40, 2**80, 3])),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, width=64),
    st.sampled_from([0.5, -0.25, 2.0, 1, True, False, complex(0.5, 0), complex(2, 0), complex(0.5, 1),
                     F(1, 3), 1 / 3, 2.0**70, 2**70, F(2**70), float(2**53 + 1), 2**53 + 1]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(NUMBERS, max_size=12), st.lists(NUMBERS, max_size=12))
def test_keys_follow_python_equality_across_number_types(keys, probes):
    native = {k: i for i, k in enumerate(keys)}
    view = bale.compact(native).root
    assert len(view) == len(native)
    for p in keys + probes:
        assert (p in view) == (p in native), p
        assert view.get(p) == native.get(p), p
    frozen = frozenset(keys)
    sview = bale.compact(frozen).root
    for p in keys + probes:
        assert (p in sview) == (p in frozen), p
    assert bale.thaw(view) == native


def test_a_fraction_finds_the_float_and_the_int_it_equals():
    view = bale.compact({F(1, 2): "half", F(2): "two", (F(1, 4), 1): "tuple", F(2**70): "big"}).root
    assert view[0.5] == view[complex(0.5, 0)] == "half"
    assert view[2] == view[2.0] == "two"
    assert view[(0.25, 1)] == "tuple"
    assert view[2**70] == view[float(2**70)] == "big"
    assert F(1, 3) not in view and 1 / 3 not in view
    floats = bale.compact({0.5: "a", 7: "b", (0.125,): "c"}).root
    assert floats[F(1, 2)] == "a" and floats[F(7)] == "b" and floats[(F(1, 8),)] == "c"
    assert F(1, 3) not in floats


def test_equal_keys_of_two_types_are_one_key():
    # Python keeps the first key and the last value; so does the region.
    native = {0.5: 1, F(1, 2): 2, F(3): 3, 3: 4}
    assert bale.thaw(bale.compact(native).root) == native
    assert list(bale.thaw(bale.compact(native).root)) == [0.5, F(3)]


def test_stored_fractions_compare_as_numbers():
    a = bale.compact([F(1, 2), F(2), F(1, 3)]).root
    b = bale.compact([0.5, 2, F(1, 3)]).root
    assert a == b and a == [0.5, 2.0, F(1, 3)]
    assert a != bale.compact([0.5, 2, 1 / 3]).root


def test_huge_fractions_are_values_and_not_keys():
    huge = F(3**6000, 7)
    region = bale.compact([huge, {"h": huge}])
    assert region.root[0] == huge and region.root[1]["h"] == huge
    # Equality of two huge ones is Python's (they are not numbers of the format).
    assert region.root[0] == bale.compact(huge).root
    with pytest.raises(bale.CompactError, match=r"root: key Fraction.*more than 1024 bytes"):
        bale.compact({huge: 1})
    with pytest.raises(bale.CompactError, match="more than 1024 bytes"):
        bale.compact({F(1, 3**6000)})


def test_fraction_with_tampered_state_is_refused_not_written():
    x = F(1, 3)
    object.__setattr__(x, "_numerator", 2)
    object.__setattr__(x, "_denominator", 6)
    with pytest.raises(bale.CompactError, match="lowest terms"):
        bale.compact([x])
    y = F(1, 3)
    object.__setattr__(y, "_denominator", 0)
    with pytest.raises(bale.CompactError, match="denominator is not positive"):
        bale.compact(y)
    z = F(1, 3)
    object.__setattr__(z, "_numerator", "one")
    with pytest.raises(bale.CompactError, match="numerator is not an int"):
        bale.compact(z)


def test_fraction_subclasses_are_not_taken_for_fractions():
    class Money(F):
        pass

    with pytest.raises(bale.CompactError, match="Money"):
        bale.compact(Money(1, 2))


# ---------------------------------------------------------------- paths

PATHS = [PurePosixPath("/a//b/./c"), PurePosixPath(""), PurePosixPath("//x"), PurePosixPath("///x"),
         PosixPath("rel/x"), PosixPath("/"), PureWindowsPath("C:/Users/Ada"), PureWindowsPath(r"\\server\share\x"),
         PurePosixPath("é/日本/😀"), PurePosixPath(b"caf\xe9".decode("utf-8", "surrogateescape"))]


@pytest.mark.parametrize("p", PATHS, ids=repr)
def test_paths_round_trip_to_their_class(p):
    for got in both_ways([p, {"p": p}]):
        assert same_exactly(got, [p, {"p": p}])
    assert bale.compact(p).root == p
    assert type(bale.compact(p).root) is type(p)


def test_posix_paths_are_keys_across_pure_and_concrete_classes():
    view = bale.compact({PurePosixPath("a/b"): 1, PosixPath("/etc"): 2, (PurePosixPath("t"), 1): 3}).root
    assert view[PosixPath("a/b")] == 1 and view[PurePosixPath("a//b")] == 1
    assert view[PurePosixPath("/etc")] == 2
    assert view[(PosixPath("t"), 1)] == 3
    assert "a/b" not in view and PurePosixPath("a") not in view
    assert PureWindowsPath("a/b") not in view
    assert bale.thaw(bale.compact({PosixPath("x")}).root) == {PurePosixPath("x")}


def test_windows_paths_are_values_compared_by_python():
    with pytest.raises(bale.CompactError, match=r"PureWindowsPath cannot be a dict key.*ignoring case"):
        bale.compact({PureWindowsPath("A"): 1})
    view = bale.compact([PureWindowsPath("C:/Users/Ada")]).root
    assert view == [PureWindowsPath("c:/users/ada")]
    assert view == bale.compact([PureWindowsPath("c:/USERS/ada")]).root


def test_path_subclasses_are_not_taken_for_paths():
    class Mine(PurePosixPath):
        pass

    with pytest.raises(bale.CompactError, match="Mine"):
        bale.compact(Mine("a"))


# ------------------------------------------------- everywhere a value goes


def test_append_share_and_the_store(tmp_path):
    value = {"f": F(-5, 12), "p": PosixPath("/srv/data"), "keys": {F(1, 2): PurePosixPath("x")}}
    r = bale.compact(None)
    grown = r.append([value, value], share=True)
    thawed = bale.thaw(grown.root)
    assert thawed == [value, value] and thawed[0] is thawed[1]
    copied = bale.compact(0).append({"again": grown.root[0]})
    assert bale.thaw(copied.root["again"]) == value
    with bale.Store(tmp_path / "s.bstore") as s:
        s["k"] = value
        assert s["k"]["f"] == F(-5, 12) and s["k"]["keys"][0.5] == PurePosixPath("x")
        s["k2"] = {"base": s["k"], "n": 1}
    with bale.Store(tmp_path / "s.bstore", readonly=True) as s:
        assert bale.thaw(s["k2"]["base"]) == value
        s.verify()


def test_to_json_names_the_place():
    with pytest.raises(ValueError, match=r'root\["a"\]\[1\]: a Fraction has no JSON form'):
        bale.to_json(bale.compact({"a": [1, F(1, 3)]}))
    with pytest.raises(ValueError, match=r"root\[0\]: a PosixPath has no JSON form"):
        bale.to_json(bale.compact([PosixPath("/x")]))


def test_compacting_other_values_imports_neither_module():
    code = textwrap.dedent("""
        import sys, dataclasses, bale
        @dataclasses.dataclass
        class P:
            x: int
        bale.thaw(bale.compact([P(1), {"a": 1.5}]).root)
        assert "fractions" not in sys.modules, "fractions imported"
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


# --------------------------------------------------------- crafted bytes


def _single(value):
    """The bytes of a region whose root is one typed object at offset 64."""
    b = bytearray(bytes(bale.compact(value)))
    assert u64(b, 0x18) == 64 and u64(b, 64) & 0xFF in (KIND_FRACTION, KIND_PATH)
    return b


def test_fraction_not_in_lowest_terms_fails_verification():
    b = _single(F(1, 3))
    b[72], b[73] = 2, 6
    fix_checksum(b)
    with pytest.raises(bale.FormatError, match="lowest terms"):
        bale.load(bytes(b), verify=True)
    # Unverified, thaw makes the Fraction its integers give.
    assert bale.thaw(bale.load(bytes(b)).root) == F(1, 3)


@pytest.mark.parametrize("k, payload, message", [
    (2, b"\x01\x00\x03", "not minimal"),   # numerator 1 in two bytes
    (1, b"\x01\x03\x00", "not minimal"),   # denominator 3 in two bytes
    (1, b"\x01\xff", "not positive"),       # denominator -1
    (1, b"\x01\x00", "not positive"),       # denominator 0
])
def test_malformed_fraction_bytes_are_refused_on_every_read(k, payload, message):
    b = _single(F(1, 3))
    put_u64(b, 64, KIND_FRACTION | (k | (len(payload) - k) << 28) << 8)
    b[72:72 + len(payload)] = payload
    fix_checksum(b)
    for verify in (True, False):
        with pytest.raises(bale.FormatError, match=message):
            region = bale.load(bytes(b), verify=verify)
            region.root


def test_fraction_byte_counts_out_of_range_are_refused():
    b = _single(F(1, 3))
    put_u64(b, 64, KIND_FRACTION | ((1 << 28) - 1) << 8)  # no denominator bytes
    fix_checksum(b)
    with pytest.raises(bale.FormatError, match="byte count"):
        bale.load(bytes(b)).root
    put_u64(b, 64, KIND_FRACTION | (1 | 5000 << 28) << 8)  # past the region
    fix_checksum(b)
    with pytest.raises(bale.FormatError):
        bale.load(bytes(b)).root


def _patch_path(text: bytes, cls: int = 1) -> bytes:
    b = _single(PurePosixPath("abcdefgh"))
    put_u64(b, 64, KIND_PATH | (cls | len(text) << 8) << 8)
    b[72:80] = text.ljust(8, b"\0")
    fix_checksum(b)
    return bytes(b)


@pytest.mark.parametrize("text, cls, message", [
    (b"a//b", 1, "normal form"),
    (b"a/", 2, "normal form"),
    (b"", 3, "empty"),
    (b"\xff", 3, "not UTF-8"),
    (b"\xed\xa0", 1, "not UTF-8"),
    (b"a", 0, "unknown path class"),
    (b"a", 5, "unknown path class"),
])
def test_malformed_paths_are_refused_on_every_read(text, cls, message):
    data = _patch_path(text, cls)
    for verify in (True, False):
        with pytest.raises(bale.FormatError, match=message):
            bale.load(data, verify=verify).root


def test_a_windows_path_class_this_system_cannot_make_is_a_thaw_error():
    if sys.platform == "win32":
        pytest.skip("WindowsPath can be made here")
    data = _patch_path(b"C:\\x", 4)
    region = bale.load(data, verify=True)
    with pytest.raises(bale.ThawError, match="cannot make the WindowsPath at byte 64 on this system"):
        bale.thaw(region.root)


def test_lone_surrogates_in_path_text_round_trip():
    data = _patch_path(b"a\xed\xb3\xbf", 1)
    assert str(bale.load(data, verify=True).root) == "a\udcff"


def test_equal_fraction_keys_in_crafted_bytes_fail_verification():
    # Two distinct stored keys that Python calls equal: 0.5 and Fraction(1, 2).
    b = bytearray(bytes(bale.compact({0.5: 1, F(1, 3): 2})))
    at = bytes(b).find(bytes([1, 3]), 64)
    b[at + 1] = 2  # Fraction(1, 3) -> Fraction(1, 2), hashed as 0.5
    fix_checksum(b)
    with pytest.raises(bale.FormatError):
        bale.load(bytes(b), verify=True)
