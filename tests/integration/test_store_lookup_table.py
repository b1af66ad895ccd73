"""A store index file's lookup table (docs/STORE.md, *The lookup table*):
gets read it and agree with the index dict; index files written without
one are still read; damaged tables give FormatError, never a wrong entry
or a crash."""

from __future__ import annotations

import enum
import os
import random
import shutil

import pytest

import bale
from bale import _bale, _store


class Color(str, enum.Enum):
    RED = "red-key"


def _index_files(path):
    return sorted(os.path.join(path, n) for n in os.listdir(path) if n.startswith("idx-"))


def _region_len(path):
    with open(path, "rb") as f:
        return _bale.announced_length(f.read(64))


def _build(path, n=3000, seed=0):
    """A store whose keys span several index levels, with deletes, a dropped
    label, bytes and non-ASCII keys; returns the model of what it holds."""
    rng = random.Random(seed)
    model = {}
    with bale.Store(path) as s:
        for round_ in range(3):
            with s.batch():
                for i in range(n):
                    key = rng.choice([f"k{i}", f"k{i}-é", f"\u20ac{i}", f"k{i}".encode()])
                    label = "gone" if i % 11 == 0 else "kept"
                    s.put(key, {"i": i, "round": round_}, label=label)
                    model[key] = (label, {"i": i, "round": round_})
            for key in rng.sample(sorted(model, key=repr), n // 10):
                del s[key]
                del model[key]
        s.put("red-key", [1, 2])
        model["red-key"] = (None, [1, 2])
        assert s.drop("gone") > 0
        model = {k: v for k, (label, v) in model.items() if label != "gone"}
    return model


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = tmp_path_factory.mktemp("lookup") / "s.bstore"
    return path, _build(path)


def _check_gets(path, model, absent=("absent", b"absent", "k5-absent")):
    with bale.Store(path, readonly=True) as s:
        for key, value in model.items():
            assert bale.thaw(s[key]) == value, key
            assert key in s
        assert bale.thaw(s[Color.RED]) == [1, 2]  # a str subclass finds its str
        for key in absent:
            assert key not in s and s.get(key) is None
        assert len(s) == len(model)
        s.verify()


def test_index_files_carry_a_table_that_gets_read(built):
    path, model = built
    indexes = _index_files(path)
    assert indexes, "the store merged its delta into index files"
    for f in indexes:
        assert os.path.getsize(f) > _region_len(f), f"{f} has no lookup table"
        _bale._open_index(f, verify=True)
    _check_gets(path, model)


def test_index_files_without_a_table_are_read_through_their_dict(built, tmp_path):
    path, model = built
    old = tmp_path / "old.bstore"
    shutil.copytree(path, old)
    for f in _index_files(old):
        os.truncate(f, _region_len(f))  # as the previous version wrote them
    _check_gets(old, model)


def test_a_damaged_table_header_names_the_file(built, tmp_path):
    path, _ = built
    bad = tmp_path / "bad.bstore"
    shutil.copytree(path, bad)
    f = _index_files(bad)[0]
    with open(f, "r+b") as fh:
        fh.seek(_region_len(f) + 8)  # the bucket count
        fh.write(b"\xff")
    with pytest.raises(bale.FormatError, match=os.path.basename(f)):
        bale.Store(bad, readonly=True)


def test_damaged_buckets_give_format_errors_never_another_entry(built, tmp_path):
    """Any flipped bit in a bucket: each get gives its own value or raises
    FormatError (the first key a damaged table does not find makes the
    store check the whole table), and verify() raises."""
    path, model = built
    rng = random.Random(7)
    keys = sorted(model, key=repr)
    for trial in range(12):
        bad = tmp_path / f"bad{trial}.bstore"
        shutil.copytree(path, bad)
        f = rng.choice(_index_files(bad))
        start, size = _region_len(f) + 32, os.path.getsize(f)
        with open(f, "r+b") as fh:
            for _ in range(rng.choice([1, 1, 5])):
                at = rng.randrange(start, size)
                fh.seek(at)
                byte = fh.read(1)[0]
                fh.seek(at)
                fh.write(bytes([byte ^ (1 << rng.randrange(8))]))
        with bale.Store(bad, readonly=True) as s:
            for key in rng.sample(keys, 300) + ["absent"]:
                try:
                    got = s.get(key)
                except bale.FormatError:
                    continue
                if key in model:
                    assert got is not None and bale.thaw(got) == model[key], key
                else:
                    assert got is None
            with pytest.raises(bale.FormatError):
                s.verify()
        shutil.rmtree(bad)


def test_buckets_with_swapped_entries_give_format_errors_not_each_others_values(built, tmp_path):
    """Two buckets' entries (segment, end, flags, root) swapped, hash bits
    and key slots kept: each bucket still looks whole, and an unchecked
    table would hand one key the other's value."""
    path, model = built
    bad = tmp_path / "swapped.bstore"
    shutil.copytree(path, bad)
    f = max(_index_files(bad), key=os.path.getsize)
    start = _region_len(f) + 32
    with open(f, "r+b") as fh:
        fh.seek(start)
        table = bytearray(fh.read())
        used = [at for at in range(0, len(table), 32) if table[at + 8 : at + 16] != bytes(8)]
        segment = {at: table[at : at + 4] for at in used}
        live = [at for at in used if segment[at] != b"\xff" * 4]
        a, b = live[0], next(at for at in live[1:] if segment[at] == segment[live[0]] and table[at + 16 : at + 32] != table[live[0] + 16 : live[0] + 32])
        for lo, hi in ((0, 4), (16, 32)):
            table[a + lo : a + hi], table[b + lo : b + hi] = table[b + lo : b + hi], table[a + lo : a + hi]
        fh.seek(start)
        fh.write(table)
    with bale.Store(bad, readonly=True) as s:
        errors = 0
        for key, value in model.items():
            try:
                got = s[key]
            except bale.FormatError:
                errors += 1
                continue
            assert bale.thaw(got) == value, key
        # The swapped buckets match no key: their keys (and any other key
        # this level does not hold) are not found there, which checks the
        # whole table and raises.
        assert errors >= 2
        with pytest.raises(bale.FormatError):
            s.verify()


def test_reclaim_rewrites_the_index_with_its_table(tmp_path):
    path = tmp_path / "s.bstore"
    n = _store.DELTA_LIMIT + 1
    with bale.Store(path) as s:
        with s.batch():
            for i in range(n):
                s.put(f"key {i}", i, label="a" if i % 2 else "b")
        s.drop("b")
        s.reclaim()
    for f in _index_files(path):
        assert os.path.getsize(f) > _region_len(f)
    with bale.Store(path, readonly=True) as s:
        assert [s.get(f"key {i}") for i in range(n)] == [i if i % 2 else None for i in range(n)]
        s.verify()
