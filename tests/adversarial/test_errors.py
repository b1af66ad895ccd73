"""CompactError (what cannot be compacted, and where) and FormatError (bad bytes)."""

import array
import collections
import datetime
import decimal
import enum
import re
import struct
import subprocess
import sys
import textwrap
import types

import pytest

import bale
from _bale_testlib import (
    HAVE_XXHASH,
    SLOT_NONE,
    Writer,
    fix_checksum,
    put_u32,
    put_u64,
    slot_const,
    slot_int,
    slot_list,
    slot_obj,
    slot_sstr,
    slot_str,
    slot_tuple,
    u64,
)

needs_xxhash = pytest.mark.skipif(not HAVE_XXHASH, reason="xxhash is not installed: cannot forge a valid checksum")


# Module-level so that __name__ == __qualname__.
class S(str):
    pass


class I(int):  # noqa: E742
    pass


class F(float):
    pass


class L(list):
    pass


class T(tuple):
    pass


class D(dict):
    pass


class St(set):
    pass


class FS(frozenset):
    pass


class B(bytes):
    pass


class Color(enum.IntEnum):
    RED = 1


class Plain:
    pass


Point = collections.namedtuple("Point", "x y")


def _gen():
    yield 1


UNSUPPORTED = [
    (lambda: 0, "function"),
    (object(), "object"),
    (Plain(), "Plain"),
    (S("s"), "S"),
    (I(1), "I"),
    (F(1.0), "F"),
    (L([1]), "L"),
    (T((1,)), "T"),
    (D(a=1), "D"),
    (St({1}), "St"),
    (FS({1}), "FS"),
    (B(b"b"), "B"),
    (collections.ChainMap({"a": 1}), "ChainMap"),
    (collections.UserDict(a=1), "UserDict"),
    (types.SimpleNamespace(a=1), "SimpleNamespace"),
    (collections.deque([1]), "deque"),
    (memoryview(b"x"), "memoryview"),
    (slice(1, 2), "slice"),
    (_gen(), "generator"),
    (iter([1]), "list_iterator"),
    (Ellipsis, "ellipsis"),
    (NotImplemented, "NotImplementedType"),
    (int, "type"),
    (re, "module"),
    (print, "builtin_function_or_method"),
]


def _message(obj):
    with pytest.raises(bale.CompactError) as info:
        bale.compact(obj)
    assert isinstance(info.value, TypeError)
    return str(info.value)


# ---------------------------------------------------------------------------
# CompactError
# ---------------------------------------------------------------------------


def test_compact_error_is_a_type_error():
    assert issubclass(bale.CompactError, TypeError)
    with pytest.raises(TypeError):
        bale.compact(object())


def _type_names(obj):
    """Accepted spellings of a type's name: ``__name__``, or CPython's
    ``tp_name`` for types implemented in C (``collections.OrderedDict``)."""
    t = type(obj)
    return {t.__name__, f"{t.__module__}.{t.__qualname__}"}


@pytest.mark.parametrize("obj,name", UNSUPPORTED, ids=[n for _, n in UNSUPPORTED])
def test_unsupported_root(obj, name):
    assert type(obj).__name__ == name
    msg = _message(obj)
    assert msg in {f"root: cannot compact {n}" for n in _type_names(obj)}, msg


@pytest.mark.parametrize("obj,name", UNSUPPORTED, ids=[n for _, n in UNSUPPORTED])
def test_unsupported_nested(obj, name):
    msg = _message({"users": [{}, {}, {}, {"id": 3, "on_click": obj}]})
    assert msg in {f"root['users'][3]['on_click']: cannot compact {n}" for n in _type_names(obj)}, msg


def test_the_example_from_the_docs():
    data = {"users": [{"id": i} for i in range(3)] + [{"id": 3, "on_click": lambda e: None}]}
    assert _message(data) == "root['users'][3]['on_click']: cannot compact function"


@pytest.mark.parametrize(
    "data,path",
    [
        ([object()], "root[0]"),
        ([1, 2, [3, object()]], "root[2][1]"),
        ((1, (2, (3, object()))), "root[1][1][1]"),
        ({"a": object()}, "root['a']"),
        ({"it's": object()}, 'root["it\'s"]'),
        ({7: object()}, "root[7]"),
        ({-1: [object()]}, "root[-1][0]"),
        ({(1, 2): object()}, "root[(1, 2)]"),
        ({(1, "a"): {"b": (object(),)}}, "root[(1, 'a')]['b'][0]"),
        ({None: object()}, "root[None]"),
        ({b"k": object()}, "root[b'k']"),
        ({1.5: object()}, "root[1.5]"),
        ({True: object()}, "root[True]"),
        ({frozenset({1}): object()}, "root[frozenset({1})]"),
        ({"\u20ac": object()}, "root['\u20ac']"),
        ([{"a": [{"b": {"c": [0, 1, 2, 3, 4, object()]}}]}], "root[0]['a'][0]['b']['c'][5]"),
        ({f"k{i}": (i if i != 17 else object()) for i in range(30)}, "root['k17']"),
        (list(range(100_000)) + [object()], "root[100000]"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_paths(data, path):
    assert _message(data) == f"{path}: cannot compact object"


def test_set_element_path():
    assert _message({"s": {1, 2, object()}}) == "root['s']{...}: cannot compact object"
    assert _message({"s": frozenset({object()})}) == "root['s']{...}: cannot compact object"
    assert _message([{1, (2, object())}]).startswith("root[0]{...}")
    assert _message([{1, (2, object())}]).endswith(": cannot compact object")
    assert _message({object()}) == "root{...}: cannot compact object"


def test_unsupported_dict_key():
    msg = _message({object(): 1})
    assert msg.startswith("root")
    assert msg.endswith("cannot compact object")
    msg = _message({"ok": 1, (1, object()): 2})
    assert msg.startswith("root")
    assert msg.endswith("cannot compact object")


def test_unsupported_subclass_in_key_or_element():
    assert _message({S("k"): 1}).endswith("cannot compact S")
    assert _message({I(1)}).endswith("cannot compact I")
    assert _message([(1, F(2.0))]) == "root[0][1]: cannot compact F"


@pytest.mark.parametrize(
    "build,path",
    [
        (lambda: (lambda l: (l.append(l), l)[1])([]), "root[0]"),
        (lambda: (lambda d: (d.__setitem__("self", d), d)[1])({}), "root['self']"),
        (lambda: (lambda l: (l.extend([1, 2, l]), l)[1])([]), "root[2]"),
    ],
    ids=["list", "dict", "list-index-2"],
)
def test_direct_cycles(build, path):
    msg = _message(build())
    assert "cycle" in msg
    assert msg.startswith(path)


def test_mutual_cycle_through_a_tuple():
    a = []
    t = (a,)
    a.append(t)
    msg = _message(a)
    assert "cycle" in msg and msg.startswith("root[0][0]")
    msg = _message({"x": [1, a]})
    assert "cycle" in msg and msg.startswith("root['x'][1][0][0]")


def test_mutual_cycle_through_dicts():
    a, b = {}, {}
    a["b"] = b
    b["a"] = [a]
    msg = _message({"start": a})
    assert "cycle" in msg and msg.startswith("root['start']['b']['a'][0]")


def test_deep_cycle_is_not_a_recursion_error():
    head = []
    cur = head
    for _ in range(200_000):
        nxt = []
        cur.append(nxt)
        cur = nxt
    cur.append(head)
    with pytest.raises(bale.CompactError) as info:
        bale.compact(head)
    msg = str(info.value)
    assert "cycle" in msg
    # Very long paths may be abbreviated; the start of the path must be there.
    assert msg.startswith("root[0][0][0][0][0][0][0][0]")
    cur.clear()  # break the cycle for a fast dealloc


def test_a_callback_that_hands_back_a_deep_open_list_is_a_cycle(tmp_path):
    """Lists held by one reference skip the cycle check (they cannot be
    open already); one that a `get=` callback hands back, from deep in the
    path, must still be found open. Run in a child with bounded memory and
    time: missing it would compact without end."""
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(
        """
        import resource, bale
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

        class Back:
            pass

        root = cur = []
        for _ in range(100):
            nxt = []
            cur.append(nxt)
            cur = nxt
        cur.append(Back())
        # The list at depth 60, found again through the root when asked for.
        def get(obj):
            at = root
            for _ in range(60):
                at = at[0]
            return (at,)
        bale.register(Back, ["x"], get=get)
        try:
            bale.compact(root)
        except bale.CompactError as e:
            print("CompactError", e)
        """
    ))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    # Found where the callback's field closes it (100 lists deep, then
    # `.x`), not one lap later.
    assert p.stdout.startswith("CompactError root[0]"), p.stdout
    assert "...<78 levels>...[0][0][0][0][0][0][0][0][0][0][0].x: cannot compact a cycle" in p.stdout, p.stdout


def test_shared_subobjects_are_not_cycles():
    x = [1, "a"]
    data = [x, x, (x, x), {"a": x, "b": x}]
    assert bale.compact(data).root == data
    d = [0]
    for _ in range(12):
        d = [d, d]  # a DAG of 2**12 paths
    region = bale.compact(d)
    assert region.root[1][0][1][0] == d[1][0][1][0]
    bale.load(bytes(region), verify=True)


def test_error_leaves_input_unchanged():
    data = {"a": [1, 2], "b": object()}
    before = dict(data)
    with pytest.raises(bale.CompactError):
        bale.compact(data)
    assert data == before and data["a"] == [1, 2]


def test_nested_error_path_is_complete():
    x = object()
    for _ in range(20):
        x = [x]
    assert _message(x) == "root" + "[0]" * 20 + ": cannot compact object"


def test_very_deep_error_path():
    x = object()
    for _ in range(100_000):
        x = [x]
    msg = _message(x)
    # Very long paths may be abbreviated in the middle.
    assert msg.startswith("root[0][0][0][0][0][0][0][0]")
    assert msg.endswith("[0][0][0]: cannot compact object")


# ---------------------------------------------------------------------------
# FormatError: header checks (these fail at load, verified or not)
# ---------------------------------------------------------------------------

VALID = bytes(bale.compact({"a": [1, "hello world"], "b": None, "c": {f"k{i}": i for i in range(20)}}))


def _fails(buf, verify=False):
    with pytest.raises(bale.FormatError) as info:
        bale.load(buf, verify=verify)
    return str(info.value)


def test_format_error_is_a_value_error():
    assert issubclass(bale.FormatError, ValueError)
    assert not issubclass(bale.FormatError, TypeError)


@pytest.mark.parametrize("verify", [False, True])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 32, 63])
def test_short_buffers(n, verify):
    _fails(VALID[:n], verify)
    _fails(bytearray(VALID[:n]), verify)


@pytest.mark.parametrize("verify", [False, True])
def test_empty_inputs(verify):
    _fails(b"", verify)
    _fails(bytearray(), verify)
    _fails(memoryview(b""), verify)


@pytest.mark.parametrize("verify", [False, True])
@pytest.mark.parametrize("pos", range(8))
def test_bad_magic(pos, verify):
    b = bytearray(VALID)
    b[pos] ^= 0x20
    _fails(b, verify)


@pytest.mark.parametrize("verify", [False, True])
def test_wrong_version_names_both_versions(verify):
    b = bytearray(VALID)
    put_u32(b, 8, 2)
    msg = _fails(b, verify)
    assert re.search(r"(?<!\d)2(?!\d)", msg), msg
    assert re.search(r"(?<!\d)1(?!\d)", msg), msg


@pytest.mark.parametrize("version", [0, 3, 0xFFFFFFFF])
def test_other_versions(version):
    b = bytearray(VALID)
    put_u32(b, 8, version)
    _fails(b)


@pytest.mark.parametrize("verify", [False, True])
def test_big_endian_marker(verify):
    b = bytearray(VALID)
    b[12:16] = b"\x01\x02\x03\x04"
    msg = _fails(b, verify)
    assert "byte order" in msg.lower() or "endian" in msg.lower(), msg


def test_garbage_byte_order_marker():
    b = bytearray(VALID)
    b[12:16] = b"\x00\x00\x00\x00"
    _fails(b)


@pytest.mark.parametrize("verify", [False, True])
@pytest.mark.parametrize("delta", [-8, -1, 1, 8, 2**32, 2**63, -len(VALID)])
def test_total_len_mismatch(delta, verify):
    b = bytearray(VALID)
    put_u64(b, 16, len(VALID) + delta)
    _fails(b, verify)


@pytest.mark.parametrize("verify", [False, True])
@pytest.mark.parametrize("extra", [1, 7, 8, 64])
def test_trailing_bytes(extra, verify):
    _fails(VALID + bytes(extra), verify)


@pytest.mark.parametrize("verify", [False, True])
@pytest.mark.parametrize("cut", [1, 8, 16, len(VALID) - 64])
def test_truncated(cut, verify):
    _fails(VALID[:-cut], verify)


@pytest.mark.parametrize("verify", [False, True])
def test_truncated_with_matching_total_len(verify):
    for cut in (8, 16, 24, len(VALID) - 64):
        b = bytearray(VALID[:-cut])
        put_u64(b, 16, len(b))
        try:
            region = bale.load(b, verify=verify)
        except bale.FormatError:
            continue
        assert not verify, "a truncated region passed verification"
        with pytest.raises(bale.FormatError):
            bale.thaw(region.root)


@pytest.mark.parametrize("verify", [False, True])
@pytest.mark.parametrize("pos", [40, 41, 43, 44, 50, 63])
def test_reserved_bytes_and_unknown_flags_must_be_zero(pos, verify):
    b = bytearray(VALID)
    b[pos] = 0x02 if pos == 40 else 0x01  # bit 1 of flags is unknown in version 1
    if HAVE_XXHASH:
        fix_checksum(b)
    _fails(b, verify)


def test_valid_region_loads():
    assert bale.load(VALID).root["a"] == [1, "hello world"]
    assert bale.load(VALID, verify=True).verify() is None


# ---------------------------------------------------------------------------
# FormatError: checksum (only with verification)
# ---------------------------------------------------------------------------


def test_flipped_payload_byte_fails_only_verification():
    b = bytearray(VALID)
    pos = b.index(b"hello world")
    b[pos + 4] ^= 0x01  # 'o' -> 'n': still valid ASCII
    region = bale.load(b)
    assert region.root["a"][1] == "helln world"
    _fails(b, verify=True)
    with pytest.raises(bale.FormatError):
        region.verify()


def test_flipped_checksum_byte_fails_only_verification():
    for pos in range(32, 40):
        b = bytearray(VALID)
        b[pos] ^= 0x80
        assert bale.load(b).root["b"] is None
        _fails(b, verify=True)


def test_flipped_padding_byte_fails_only_verification():
    b = bytearray(VALID)
    pos = b.index(b"hello world") + len("hello world")  # zero padding after the string
    assert b[pos] == 0
    b[pos] = 0x55
    assert bale.load(b).root["a"][1] == "hello world"
    _fails(b, verify=True)


def test_every_single_bit_flip_fails_verification():
    for pos in range(64, len(VALID)):
        for bit in (0, 7):
            b = bytearray(VALID)
            b[pos] ^= 1 << bit
            _fails(b, verify=True)


@needs_xxhash
def test_checksum_is_xxh3_of_the_region_with_a_zero_field():
    b = bytearray(VALID)
    stored = u64(b, 32)
    fix_checksum(b)
    assert u64(b, 32) == stored


# ---------------------------------------------------------------------------
# FormatError: crafted structures (docs/FORMAT.md). Every access to a malformed
# part raises FormatError, verified or not; verify=True refuses at load.
# ---------------------------------------------------------------------------


def walk(value):
    """Touch everything: thaw, repr, len, iteration, indexing."""
    bale.thaw(value)
    repr(value)
    if isinstance(value, (bale.ListView, bale.TupleView)):
        len(value)
        for i in range(len(value)):
            walk(value[i])
        list(value)
    elif isinstance(value, bale.DictView):
        for k, v in value.items():
            walk(k)
            walk(v)
    elif isinstance(value, (bale.SetView, bale.FrozenSetView)):
        for e in value:
            walk(e)


def _bad_everywhere(buf):
    """Malformed data: FormatError at load or on access; verify refuses."""
    with pytest.raises(bale.FormatError):
        region = bale.load(buf)
        walk(region.root)
    with pytest.raises(bale.FormatError):
        bale.load(buf, verify=True)


def _bad_only_verified(buf):
    """Structurally readable but invalid: unverified reads work, verify refuses."""
    region = bale.load(buf)
    with pytest.raises(bale.FormatError):
        bale.load(buf, verify=True)
    with pytest.raises(bale.FormatError):
        region.verify()
    try:
        walk(region.root)
    except bale.FormatError:
        pass


def _single_root(root_slot, *chunks):
    w = Writer()
    for c in chunks:
        w.raw(c)
    return w.finish(root_slot)


def q(*words):
    return b"".join(struct.pack("<Q", x & 0xFFFFFFFFFFFFFFFF) for x in words)


@needs_xxhash
def test_crafted_valid_regions_verify():
    # Sanity check of the crafted-region writer: these are valid.
    assert bale.load(_single_root(slot_int(5)), verify=True).root == 5
    assert bale.load(_single_root(SLOT_NONE), verify=True).root is None
    assert bale.load(_single_root(slot_sstr(b"abc")), verify=True).root == "abc"
    w = Writer()
    s = w.raw(b"hello world")
    lst = w.words(slot_int(1), slot_str(0, 11, s))
    assert bale.load(w.finish(slot_list(2, lst)), verify=True).root == [1, "hello world"]
    w = Writer()
    o = w.obj(0x0A, 2, q(slot_int(1), slot_int(2)))
    assert bale.load(w.finish(slot_obj(o)), verify=True).root == [1, 2]


@pytest.mark.parametrize(
    "root",
    [
        7 | (1 << 63), 0x7 | (5 << 3) | (1 << 61),  # tag 7 (PAIR) with top bits set
        slot_const(3), slot_const(2**40),  # unknown constants
        0,                            # OBJ 0
        8, 16, 24, 32, 56,            # OBJ into the header
        64 + 8 * 1000,                # OBJ beyond total_len
        2**63,                        # OBJ far beyond
        slot_list(3, 8 * 10_000),     # LIST payload beyond the region
        slot_tuple(2, 0),             # TUPLE payload in the header
        slot_list(65535, 64),         # LIST longer than the region
        slot_str(0, 100, 64),         # STR longer than the region
        slot_str(3, 65535, 64),
    ],
)
def test_bad_root_slots(root):
    _bad_everywhere(_single_root(root, q(0, 0, 0)))


def test_root_object_with_unknown_kind():
    for kind in (0x00, 0x10, 0x7F, 0xFF):
        _bad_everywhere(_single_root(slot_obj(64), q(kind | (1 << 8), 0)))


def test_root_object_with_huge_length():
    for kind in (0x01, 0x04, 0x05, 0x07, 0x0A, 0x0B, 0x0C, 0x0F):
        for length in (2**56 - 1, 2**40, 1000):
            _bad_everywhere(_single_root(slot_obj(64), q(kind | (length << 8), 0)))


def test_self_referencing_list_object():
    # A LIST object at 64 whose only element points at itself: not before it.
    _bad_everywhere(_single_root(slot_obj(64), q(0x0A | (1 << 8), slot_obj(64))))


def test_forward_reference():
    # The element points at an object after its container.
    _bad_everywhere(_single_root(slot_obj(64), q(0x0A | (1 << 8), slot_obj(80), 0x06, 5)))


def test_list_slot_whose_payload_overlaps_its_own_slot():
    w = Writer()
    a = w.words(slot_int(1), 0)  # second word patched below to point at a itself
    buf = bytearray(w.finish(slot_list(2, a)))
    put_u64(buf, a + 8, slot_list(2, a))
    if HAVE_XXHASH:
        fix_checksum(buf)
    _bad_everywhere(bytes(buf))


def test_list_slot_payload_reaching_past_its_referrer():
    w = Writer()
    a = w.words(slot_int(1))
    # Outer payload claims 3 elements starting at `a`, but it is itself at a+8.
    outer = w.words(slot_list(3, a))
    _bad_everywhere(w.finish(slot_list(1, outer)))


def test_ascii_string_with_high_byte():
    w = Writer()
    s = w.raw(b"abc\x80")
    _bad_everywhere(w.finish(slot_str(0, 4, s)))
    w = Writer()
    o = w.obj(0x01, 4, b"abc\xff")
    _bad_everywhere(w.finish(slot_obj(o)))


def test_inline_string_with_high_byte():
    raw = bytes([3 | (2 << 3), 0x41, 0x80, 0, 0, 0, 0, 0])
    _bad_everywhere(_single_root(u64(raw, 0)))


def test_ucs4_beyond_unicode():
    w = Writer()
    s = w.raw(struct.pack("<I", 0x110000))
    _bad_everywhere(w.finish(slot_str(3, 1, s)))
    w = Writer()
    o = w.obj(0x04, 2, struct.pack("<II", 0x41, 0xFFFFFFFF))
    _bad_everywhere(w.finish(slot_obj(o)))


def test_dict_whose_shape_is_not_a_shape():
    w = Writer()
    lst = w.obj(0x0A, 1, q(slot_sstr(b"k")))
    d = w.obj(0x0E, lst >> 3, q(slot_int(1)))
    _bad_everywhere(w.finish(slot_obj(d)))


def test_dict_whose_shape_is_after_it():
    w = Writer()
    d = w.obj(0x0E, (64 + 16) >> 3, q(slot_int(1)))
    w.obj(0x0F, 1, q(slot_sstr(b"k")))
    _bad_everywhere(w.finish(slot_obj(d)))


def test_set_with_index_entries_out_of_range():
    n = 9
    w = Writer()
    elems = q(*[slot_int(i) for i in range(n)])
    index = struct.pack("<32I", *([0xFFFF] * 32))
    o = w.obj(0x0C, n, elems + index)
    _bad_everywhere_or_lookup(w.finish(slot_obj(o)), [i for i in range(n)])


def _bad_everywhere_or_lookup(buf, probes):
    region = bale.load(buf)
    try:
        root = region.root
        for p in probes:
            p in root
        walk(root)
    except bale.FormatError:
        pass
    with pytest.raises(bale.FormatError):
        bale.load(buf, verify=True)


def test_set_index_that_is_full_does_not_loop():
    # 9 elements, 32 index entries all pointing at element 0: a lookup for an
    # absent value never meets an empty entry and must stop after `cap` probes.
    n = 9
    w = Writer()
    o = w.obj(0x0C, n, q(*[slot_int(i) for i in range(n)]) + struct.pack("<32I", *([1] * 32)))
    buf = w.finish(slot_obj(o))
    region = bale.load(buf)
    try:
        assert 12345 not in region.root
    except bale.FormatError:
        pass
    with pytest.raises(bale.FormatError):
        bale.load(buf, verify=True)


@needs_xxhash
def test_non_minimal_string_width_fails_verification():
    w = Writer()
    s = w.raw(b"abc")
    _bad_only_verified(w.finish(slot_str(1, 3, s)))  # Latin-1 width for ASCII content
    w = Writer()
    s = w.raw(struct.pack("<3H", 0x41, 0x42, 0xE9))
    _bad_only_verified(w.finish(slot_str(2, 3, s)))  # UCS-2 width for Latin-1 content


@needs_xxhash
def test_int64_object_in_slot_range_fails_verification():
    w = Writer()
    o = w.obj(0x06, 0, struct.pack("<q", 5))
    _bad_only_verified(w.finish(slot_obj(o)))


@needs_xxhash
def test_non_minimal_bigint_fails_verification():
    w = Writer()
    o = w.obj(0x07, 10, (2**64).to_bytes(10, "little", signed=True))  # 9 bytes suffice
    _bad_only_verified(w.finish(slot_obj(o)))
    w = Writer()
    o = w.obj(0x07, 9, (5).to_bytes(9, "little", signed=True))  # fits an INT slot
    _bad_only_verified(w.finish(slot_obj(o)))


@needs_xxhash
def test_duplicate_keys_fail_verification():
    w = Writer()
    shape = w.obj(0x0F, 2, q(slot_sstr(b"k"), slot_sstr(b"k")))
    d = w.obj(0x0E, shape >> 3, q(slot_int(1), slot_int(2)))
    _bad_only_verified(w.finish(slot_obj(d)))
    w = Writer()
    shape = w.obj(0x0F, 2, q(slot_int(1), SLOT_NONE))
    f = w.obj(0x08, 0, struct.pack("<d", 1.0))
    shape = w.obj(0x0F, 2, q(slot_int(1), slot_obj(f)))  # 1 and 1.0 are one key
    d = w.obj(0x0E, shape >> 3, q(slot_int(1), slot_int(2)))
    _bad_only_verified(w.finish(slot_obj(d)))


@needs_xxhash
def test_unhashable_set_element_fails_verification():
    w = Writer()
    inner = w.words(slot_int(1))
    o = w.obj(0x0D, 1, q(slot_list(1, inner)))
    _bad_only_verified(w.finish(slot_obj(o)))


@needs_xxhash
def test_container_referenced_twice_without_shared_flag_fails_verification():
    w = Writer()
    inner = w.words(slot_int(1), slot_int(2))
    outer = w.words(slot_list(2, inner), slot_list(2, inner))
    _bad_only_verified(w.finish(slot_list(2, outer)))


@needs_xxhash
def test_unknown_kind_deep_inside_fails_verification_and_access():
    w = Writer()
    bad = w.obj(0x33, 0, q(0))
    lst = w.words(slot_int(1), slot_obj(bad))
    buf = w.finish(slot_list(2, lst))
    region = bale.load(buf)
    assert region.root[0] == 1
    with pytest.raises(bale.FormatError):
        region.root[1]
    with pytest.raises(bale.FormatError):
        bale.thaw(region.root)
    with pytest.raises(bale.FormatError):
        bale.load(buf, verify=True)


@needs_xxhash
def test_wrong_hash_index_fails_verification():
    keys = [f"key{i}" for i in range(12)]
    region = bale.compact({k: i for i, k in enumerate(keys)})
    b = bytearray(region)
    # Find the SHAPE: kind 0x0F with len 12; its index (32 u32 entries) follows the 12 key slots.
    for off in range(64, len(b), 8):
        if u64(b, off) == 0x0F | (12 << 8):
            break
    else:
        raise AssertionError("no SHAPE found")
    index_at = off + 8 + 12 * 8
    entries = list(struct.unpack_from("<32I", b, index_at))
    # Rotate the index by one position: every entry now sits one slot too late.
    rotated = entries[-1:] + entries[:-1]
    struct.pack_into("<32I", b, index_at, *rotated)
    fix_checksum(b)
    buf = bytes(b)
    with pytest.raises(bale.FormatError):
        bale.load(buf, verify=True)
    root = bale.load(buf).root
    # Unverified lookups may miss (a wrong answer is allowed), but not crash.
    for k in keys:
        try:
            root.get(k)
        except bale.FormatError:
            pass


@needs_xxhash
def test_values_and_items_of_a_dict_with_a_wrong_index_raise_only_format_error():
    # Iterating values()/items() must not depend on looking keys up again:
    # with a damaged index that lookup misses, and KeyError is not allowed.
    keys = [f"key{i}" for i in range(12)]
    b = bytearray(bale.compact({k: i for i, k in enumerate(keys)}))
    for off in range(64, len(b), 8):
        if int.from_bytes(b[off : off + 8], "little") == 0x0F | (12 << 8):
            break
    index_at = off + 8 + 12 * 8
    struct.pack_into("<32I", b, index_at, *([0] * 32))  # an empty index: every lookup misses
    fix_checksum(b)
    root = bale.load(bytes(b)).root
    for op in (lambda: list(root.values()), lambda: list(root.items()), lambda: bale.thaw(root), lambda: repr(root), lambda: list(root)):
        try:
            op()
        except bale.FormatError:
            pass
