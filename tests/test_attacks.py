"""Adversarial regressions (issue 17): bytes, data and callbacks that once
crashed bale or made it return wrong data. Each crash runs in a child
process, so a regression fails the test instead of killing the suite."""

import os
import struct
import subprocess
import sys
import textwrap

import pytest
import xxhash

import bale


def run_child(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter; returns the finished process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_child_ok(code: str) -> str:
    p = run_child(code)
    assert p.returncode == 0, f"child died ({p.returncode}): {p.stderr[-3000:]}"
    return p.stdout


def refresh_checksum(b: bytearray) -> bytes:
    b[32:40] = bytes(8)
    b[32:40] = struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(b)))
    return bytes(b)


def tuple_only_cycle() -> bytes:
    """A list that contains itself, with its LIST tags turned into TUPLE tags
    and the checksum fixed: a tuple that contains itself through tuples only."""
    l = [1]
    l.append(l)
    b = bytearray(bytes(bale.compact(l, share=True)))
    for o in range(24, len(b), 8):
        w = struct.unpack_from("<Q", b, o)[0]
        if w & 7 == 5 and o != 32:
            struct.pack_into("<Q", b, o, (w & ~7) | 6)
    return refresh_checksum(b)


# 1. A region that passes verify=True must never crash.


def test_verify_refuses_tuple_only_cycle():
    with pytest.raises(bale.FormatError, match="tuple contains itself through tuples only"):
        bale.load(tuple_only_cycle(), verify=True)


def test_unverified_tuple_only_cycle_is_a_format_error_not_a_crash():
    out = assert_child_ok(
        f"""
        import bale
        r = bale.load({tuple_only_cycle()!r})
        for name, op in [("hash", lambda: hash(r.root)), ("thaw", lambda: bale.thaw(r.root)),
                         ("repr", lambda: repr(r.root)), ("eq", lambda: r.root == (1,)),
                         ("in", lambda: r.root in {{1: 2}}), ("key", lambda: {{1: 2}}.get(r.root))]:
            try:
                op()
            except bale.FormatError:
                print(name, "FormatError")
        """
    )
    for name in ("hash", "thaw", "repr", "eq", "in", "key"):
        assert f"{name} FormatError" in out


def test_verify_accepts_cycles_through_lists_dicts_and_tuples():
    l = []
    t = (l, (l,))
    l.append(t)
    d = {"t": (l,)}
    d["self"] = (d, [d])
    for value in (l, t, d):
        r = bale.load(bytes(bale.compact(value, share=True)), verify=True)
        back = bale.thaw(r.root)
        assert repr(back) == repr(value)


def test_verify_accepts_shared_tuples_that_are_no_cycle():
    inner = (1, "x", 2**70)
    value = [(inner, inner), {"a": (inner,)}, (inner, (inner, inner))]
    r = bale.load(bytes(bale.compact(value, share=True)), verify=True)
    assert bale.thaw(r.root) == value


# 2. Deep data: RecursionError or a result, never a C stack overflow.


def test_hash_of_deep_tuple_view_raises_recursion_error():
    out = assert_child_ok(
        """
        import bale
        t = ()
        for i in range(300_000):
            t = (t, i)
        r = bale.load(bytes(bale.compact(t)), verify=True)
        for name, op in [("hash", lambda: hash(r.root)), ("repr", lambda: repr(r.root)),
                         ("lt", lambda: r.root < (1,)), ("eq", lambda: r.root == t)]:
            try:
                op()
                print(name, "ok")
            except RecursionError:
                print(name, "RecursionError")
        print("thaw", len(bale.thaw(r.root)))
        """
    )
    assert "hash RecursionError" in out
    assert "repr RecursionError" in out
    assert "thaw 2" in out


def test_hash_of_shallow_tuple_view_matches_native():
    t = ((1, 2), ("a", (3.5, None)), frozenset({1, 2}))
    r = bale.compact(t)
    assert hash(r.root) == hash(t)
    fs = frozenset({(1, 2), "x"})
    assert hash(bale.compact(fs).root) == hash(fs)


def test_deep_record_views_raise_recursion_error():
    out = assert_child_ok(
        """
        import dataclasses, bale
        @dataclasses.dataclass(frozen=True)
        class Node:
            next: object
        v = None
        for _ in range(50_000):
            v = Node(v)
        r = bale.compact(v)
        for name, op in [("hash", lambda: hash(r.root)), ("repr", lambda: repr(r.root)),
                         ("eq", lambda: r.root == r.root)]:
            try:
                op()
                print(name, "ok")
            except RecursionError:
                print(name, "RecursionError")
        """
    )
    for name in ("hash", "repr", "eq"):
        assert name in out


# 3. Thaw holds its own references (unverified bytes).


def test_thaw_of_duplicate_key_shape_holds_its_references():
    out = assert_child_ok(
        """
        import bale
        L = [1000, 2000]
        buf = bytearray(bytes(bale.compact({"a": L, "b": [L]}, share=True)))
        i = buf.index(bytes([0x0b, ord("b")] + [0] * 6)); buf[i + 1] = ord("a")
        try:
            t = bale.thaw(bale.load(bytes(buf)).root)
        except bale.FormatError as e:
            print("FormatError", e)
        else:
            junk = [[i, i] for i in range(10000)]
            print(t)
            assert t == {"a": [[1000, 2000]]}, t
            print("same")
        """
    )
    assert "same" in out or "FormatError" in out
