"""References between a store's segments (docs/STORE.md, *References between
segments*; FORMAT.md, *References to other segments*): a value built from
views of values stored under other labels references them where they lie;
the segments they lie in are kept while anything kept references them."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest

import bale
from bale import _bale, _store

BIG = {"name": "Ada", "tags": ["x"] * 2000, "scores": list(range(2000)), "nested": {"deep": [{"a": i} for i in range(50)]}}


def seg_bytes(path) -> int:
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path) if n.startswith("seg-") and n.endswith(".bale"))


def rows(s) -> dict:
    return {seg: info.row() for seg, info in s._snap.segments.items()}


def test_a_value_built_from_another_labels_value_references_it(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", BIG, label="A")
        before = seg_bytes(path)
        s.put("b", {"base": s["a"], "tags": s["a"]["tags"], "note": 1}, label="B")
        added = seg_bytes(path) - before
        copy_size = len(bytes(bale.compact(BIG)))
        # Two references of 40 bytes and a small dict, against a copy of `a`.
        assert added < 400 < copy_size
        b = s["b"]
        assert isinstance(b["base"], bale.DictView) and isinstance(b["tags"], bale.ListView)
        assert bale.thaw(b) == {"base": BIG, "tags": BIG["tags"], "note": 1}
        assert b["base"]["nested"]["deep"][49]["a"] == 49
        assert b == {"base": BIG, "tags": BIG["tags"], "note": 1}
        assert b["base"] == s["a"]
        seg_a, seg_b = (s._live_entry(k)[0] for k in ("a", "b"))
        assert rows(s)[seg_b][6] == (seg_a,) and rows(s)[seg_a][6] == ()
        assert s.info()["references"] == 1
        assert s.verify()["values"] == 2
        # The JSON and a copy out of the store read through the reference.
        import json

        assert json.loads(bale.to_json(b)) == {"base": BIG, "tags": BIG["tags"], "note": 1}
        out = bale.compact(b)
        assert bale.thaw(out) == {"base": BIG, "tags": BIG["tags"], "note": 1}
        assert _bale._extern_segments(out) == []


def test_dropping_the_referenced_label_keeps_its_data_until_nothing_references_it(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", BIG, label="A")
        s.put("a2", [1, 2, 3], label="A")
        s.put("b", {"base": s["a"]}, label="B")
        view = s["b"]["base"]["tags"]
        seg_a = s._live_entry("a")[0]
        assert s.drop("A") == 2
        assert "a" not in s and "a2" not in s and s.get("a") is None and len(s) == 1
        assert s.labels() == {"B": 1}
        row = rows(s)[seg_a]
        assert row[7] is True and row[2] == 0  # held: dead values, bytes kept
        assert os.path.exists(path / _store._segment_name(seg_a))
        assert bale.thaw(s["b"]["base"]) == BIG and view[1999] == "x"
        assert s.verify()["values"] == 1
        # Another process, readonly, reads through the reference too.
        code = "import bale,sys; s=bale.Store(sys.argv[1], readonly=True); print(s['b']['base']['scores'][1999], 'a' in s)"
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
        assert out.split() == ["1999", "False"]
        # Once `b` is gone and its segment empties, A's segment goes too.
        del s["b"]
        s.reclaim()
        assert seg_a not in rows(s) and not os.path.exists(path / _store._segment_name(seg_a))
        # The view taken before still reads (its mapping outlives the file).
        assert view[0] == "x" and len(view) == 2000


def test_a_chain_of_references_survives_drops_of_every_label_but_the_last(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        s.put("v0", {"i": 0, "pad": list(range(100))}, label="L0")
        for i in range(1, 6):
            s.put(f"v{i}", {"i": i, "prev": s[f"v{i - 1}"]}, label=f"L{i}")
        for i in range(5):
            s.drop(f"L{i}")
        value = bale.thaw(s["v5"])
        for i in range(5, 0, -1):
            assert value["i"] == i
            value = value["prev"]
        assert value == {"i": 0, "pad": list(range(100))}
        assert s.info()["held_segments"] == 5
        s.verify()
        s.drop("L5")
        assert s.info()["segments"] == 0 and len(s) == 0


def test_what_is_copied_rather_than_referenced(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        s.put("a", {"t": (1, 2, "x" * 50), "set": {1, 2}, "d": {"k": [1] * 100}, "l": list(range(100))}, label="A")
        a = s["a"]
        # Tuples, sets and scalars are copied; dicts and lists referenced.
        s.put("b", {"t": a["t"], "set": a["set"], "n": 5, "key": {a["t"]: 1}}, label="B")
        assert _bale._extern_segments(s.region("b")) == []
        s.put("c", [a["d"], a["l"]], label="B")
        assert _bale._extern_segments(s.region("c")) == [s._live_entry("a")[0]]
        # A view of the same segment (same label) is a plain reference, as before.
        s.put("d", {"again": a["l"]}, label="A")
        assert _bale._extern_segments(s.region("d")) == []
        assert bale.thaw(s["b"]) == {"t": (1, 2, "x" * 50), "set": {1, 2}, "n": 5, "key": {(1, 2, "x" * 50): 1}}
        s.verify()


def test_views_of_another_store_object_are_copied(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", BIG, label="A")
    other = bale.Store(path, readonly=True)
    with bale.Store(path) as s:
        s.put("b", {"base": other["a"]}, label="B")
        assert _bale._extern_segments(s.region("b")) == []
        assert bale.thaw(s["b"]["base"]) == BIG
    other.close()
    # A copy of the directory is another store: its views are copied too.
    import shutil

    shutil.copytree(path, tmp_path / "t")
    with bale.Store(tmp_path / "t", readonly=True) as t, bale.Store(path) as s:
        s.put("c", {"base": t["a"]}, label="C")
        assert _bale._extern_segments(s.region("c")) == []


def test_references_inside_a_batch_and_to_values_of_the_same_batch(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        with s.batch():
            s.put("a", BIG, label="A")
            s.put("b", {"base": s["a"]}, label="B")
        assert _bale._extern_segments(s.region("b")) == [s._live_entry("a")[0]]
    with bale.Store(path, readonly=True) as r:
        assert bale.thaw(r["b"]["base"]) == BIG
        r.verify()


def test_a_view_from_a_batch_given_up_is_copied_not_referenced(tmp_path):
    """The given-up batch's bytes are overwritten by the next appends: a
    reference to them would read another value."""
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("seed", 0, label="A")
        kept = None
        with pytest.raises(RuntimeError):
            with s.batch():
                s.put("ghost", {"who": "ghost", "pad": list(range(300))}, label="A")
                kept = s["ghost"]
                raise RuntimeError("give up")
        assert "ghost" not in s
        s.put("real", {"who": "real", "pad": list(range(300, 600))}, label="A")  # over the ghost's bytes
        s.put("b", {"base": kept}, label="B")
        assert _bale._extern_segments(s.region("b")) == []
        assert bale.thaw(s["b"]["base"]) == {"who": "ghost", "pad": list(range(300))}
    with bale.Store(path, readonly=True) as r:
        assert r["b"]["base"]["who"] == "ghost"
        r.verify()


def test_reclaim_moves_values_with_their_references_and_skips_referenced_segments(tmp_path):
    with bale.Store(tmp_path / "s", segment_size=4096) as s:
        s.put("a", {"pad": list(range(50))}, label="A")
        for i in range(30):
            s.put(f"b{i}", {"base": s["a"], "i": i, "pad": "p" * 100}, label="B")
        for i in range(25):
            del s[f"b{i}"]
        seg_a = s._live_entry("a")[0]
        s.reclaim()
        for i in range(25, 30):
            assert bale.thaw(s[f"b{i}"]) == {"base": {"pad": list(range(50))}, "i": i, "pad": "p" * 100}
            assert _bale._extern_segments(s.region(f"b{i}")) == [seg_a]
        s.verify()
        # Segment A is referenced: reclaim leaves it where it is.
        assert s._live_entry("a")[0] == seg_a


def test_a_version_1_store_is_read_and_upgraded(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", {"x": 1}, label="A")
    # Rewrite the commit as version 1 wrote it: rows of six fields.
    name = max(
        (os.path.join(path, n) for n in _store.SUPER_NAMES if not isinstance(_store._read_superblock(os.path.join(path, n)), str)),
        key=lambda n: _store._read_superblock(n)[0],
    )
    generation, _, payload = _store._read_superblock(name)
    record = bale.thaw(bale.load(payload).root)
    record["segments"] = {k: v[:6] for k, v in record["segments"].items()}
    body = bytes(bale.compact(record))
    head = _store.SUPER_HEADER.pack(_store.MAGIC, 1, 0, generation, len(body), 0)
    checksum = _bale._xxh3(head[:-8] + body)
    with open(name, "wb") as f:
        f.write(_store.SUPER_HEADER.pack(_store.MAGIC, 1, 0, generation, len(body), checksum) + body)
    with bale.Store(path) as s:
        assert bale.thaw(s["a"]) == {"x": 1}
        s.put("b", {"base": s["a"]}, label="B")
    with open(os.path.join(path, _store.SUPER_NAMES[(generation + 1) % 2]), "rb") as f:
        assert struct.unpack("<8sI", f.read(12))[1] == _store.VERSION
    with bale.Store(path, readonly=True) as r:
        assert bale.thaw(r["b"]) == {"base": {"x": 1}}
        r.verify()


# --- lying and damaged stores ---------------------------------------------------------------


def extern_offset(path, seg) -> int:
    data = (path / _store._segment_name(seg)).read_bytes()
    for off in range(64, len(data) - 40, 8):
        if data[off] == 0x24 and data[off + 1 : off + 8] == bytes(7):
            return off
    raise AssertionError("no EXTERN object")


def damage_extern(path, seg, word, value) -> None:
    """Changes one word of the segment's EXTERN and fixes its span checksum:
    a liar, not a torn write."""
    off = extern_offset(path, seg) + 8 * word
    name = path / _store._segment_name(seg)
    data = bytearray(name.read_bytes())
    data[off : off + 8] = struct.pack("<Q", value)
    name.write_bytes(data)
    sums = path / _store._sums_name(seg)
    spans = [list(x) for x in _store.SPAN.iter_unpack(sums.read_bytes())]
    for sp in spans:
        if sp[0] <= off < sp[1]:
            sp[2] = _bale._xxh3(bytes(data[sp[0] : sp[1]]))
    sums.write_bytes(b"".join(_store.SPAN.pack(*sp) for sp in spans))


@pytest.fixture
def referencing_store(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", {"x": [1, 2, 3]}, label="A")
        s.put("t", (1, 2), label="A")
        s.put("b", {"base": s["a"]}, label="B")
        segs = s._live_entry("a")[0], s._live_entry("b")[0], s._live_entry("t")
    return path, segs


@pytest.mark.parametrize(
    "word, value, message",
    [
        (1, 999, "not a segment of this store's snapshot"),
        (1, "own", "names its own segment"),
        (2, 1 << 40, "which holds"),
        (2, 60, "of at least 64"),
        (4, "tuple", "not a dict or a list"),
        (4, 7, "not a dict or a list"),
        (3, 8, "flags 0x8"),
    ],
)
def test_a_lying_reference_raises_format_error_naming_the_file(referencing_store, word, value, message):
    path, (seg_a, seg_b, t_entry) = referencing_store
    value = {"own": seg_b, "tuple": t_entry[2]}.get(value, value)
    damage_extern(path, seg_b, word, value)
    with bale.Store(path, readonly=True) as r:
        with pytest.raises(bale.FormatError, match=message) as e:
            bale.thaw(r["b"])
        with pytest.raises(bale.FormatError) as v:
            r.verify()
        assert _store._segment_name(seg_b) in str(v.value), v.value
    del e


def test_a_cycle_of_references_in_a_damaged_store_is_refused_not_followed_forever(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", {"x": [0]}, label="A")
        s.put("b", {"base": s["a"]}, label="B")
        s.put("c", {"base": s["b"]}, label="C")
        e_a, e_c = s._live_entry("a"), s._live_entry("c")
    # Make C's reference point at C's own dict in... B, and B's at C: C -> B -> C -> ...
    seg_b = e_c[0] - 1
    off_c = extern_offset(path, e_c[0])
    data_c = (path / _store._segment_name(e_c[0])).read_bytes()
    seg_named, end, flags, slot = struct.unpack("<4Q", data_c[off_c + 8 : off_c + 40])
    assert seg_named == seg_b
    damage_extern(path, seg_b, 1, e_c[0])
    damage_extern(path, seg_b, 2, e_c[1])
    damage_extern(path, seg_b, 4, e_c[2])
    with bale.Store(path, readonly=True) as r:
        view = r["c"]["base"]["base"]["base"]["base"]  # views follow lazily
        assert isinstance(view, bale.DictView)
        with pytest.raises(bale.FormatError, match="nest more than 200 deep"):
            bale.thaw(r["c"])
        assert e_a  # (the value `a` itself is untouched)


def test_a_row_that_references_a_missing_row_is_refused_at_open(referencing_store):
    path, (seg_a, seg_b, _) = referencing_store
    from test_store import rewrite_record

    def lie(record):
        row = record["segments"].pop(seg_a)
        assert row[6] == ()

    rewrite_record(path, lie)
    with pytest.raises(bale.FormatError, match=f"segment {seg_b} references segment {seg_a}, which has no row"):
        bale.Store(path, readonly=True)


def test_verify_finds_references_the_row_does_not_list(referencing_store):
    path, (seg_a, seg_b, _) = referencing_store
    from test_store import rewrite_record

    def lie(record):
        row = record["segments"][seg_b]
        record["segments"][seg_b] = (*row[:6], (), row[7])

    rewrite_record(path, lie)
    with bale.Store(path, readonly=True) as r:
        # A reader maps a segment with the segments its row lists: the
        # reference names one it does not have, a FormatError naming both.
        with pytest.raises(bale.FormatError, match=r"of store segment %d: a reference names segment %d, which is not a segment" % (seg_b, seg_a)):
            r["b"]["base"]
        with pytest.raises(bale.FormatError, match=r"references segments \[%d\], which its segment's row does not list" % seg_a):
            r.verify()


def test_a_region_outside_a_store_refuses_to_read_a_reference(referencing_store):
    path, (seg_a, seg_b, _) = referencing_store
    from _bale_testlib import fix_checksum, header

    with bale.Store(path, readonly=True) as r:
        # The value's bytes with a header of their own: what a send or a
        # save of the handle would give, if they did not refuse (below).
        h = r.region("b")
        end, root, flags = h._layout
        data = header(end, root, flags=flags) + bytearray(h._span(64, end))
        fix_checksum(data)
        data = bytes(data)
        assert h.verify() is None  # a store's handle may hold references
    with pytest.raises(bale.FormatError, match="only that store reads this value"):
        bale.load(data, verify=True)
    region = bale.load(data)
    with pytest.raises(bale.FormatError, match=f"a reference to a value in segment {seg_a} of a store"):
        region.root["base"]
    with pytest.raises(bale.FormatError, match="of a store"):
        bale.thaw(region)
    with pytest.raises(bale.FormatError, match="of a store"):
        bale.to_json(region)


def test_column_and_iteration_over_a_list_of_references(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        for i in range(5):
            s.put(f"u{i}", {"id": i, "name": f"n{i}", "score": i / 2}, label="users")
        s.put("all", [s[f"u{i}"] for i in range(5)], label="index")
        assert _bale._extern_segments(s.region("all")) == [s._live_entry("u0")[0]]
        everyone = s["all"]
        assert [u["name"] for u in everyone] == [f"n{i}" for i in range(5)]
        assert list(bale.column(everyone, "id")) == list(range(5))
        assert list(bale.column(everyone, "score")) == [i / 2 for i in range(5)]
        assert list(bale.column(everyone, "name")) == [f"n{i}" for i in range(5)]
        with pytest.raises(KeyError, match="item 0 has no key 'nope'"):
            bale.column(everyone, "nope")
        s.drop("users")
        assert bale.thaw(s["all"])[4] == {"id": 4, "name": "n4", "score": 2.0}


def test_store_info_counts_held_segments_and_references(tmp_path):
    import io

    from bale import cli

    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", {"x": [1]}, label="A")
        s.put("b", {"base": s["a"]}, label="B")
        s.drop("A")
    out = io.StringIO()
    cli.store_info(str(path), out)
    assert "segments: 2 (" in out.getvalue() and "1 held for 1 reference(s) between segments" in out.getvalue()
    out = subprocess.run([sys.executable, "-m", "bale", "store", "get", str(path), "b", "/base/x/0"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "1", out


def test_a_view_of_a_label_another_process_dropped_is_copied(tmp_path):
    """The view still reads (its mapping outlives the file), but the store no
    longer has its segment: a reference would name a file that is gone."""
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", BIG, label="A")
        view = s["a"]
        code = "import bale, sys; s = bale.Store(sys.argv[1]); print(s.drop('A')); s.close()"
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "1"
        s.put("b", {"base": view}, label="B")
        assert _bale._extern_segments(s.region("b")) == []
        assert bale.thaw(s["b"]["base"]) == BIG and "a" not in s
        s.verify()
    with bale.Store(path, readonly=True) as r:
        assert bale.thaw(r["b"]["base"]) == BIG


# --- found by review: each failed before its fix ---------------------------------------------


def test_an_append_by_hand_through_a_reference_never_writes_over_the_stores_bytes(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        s.put("a", {"x": [1, 2, 3]}, label="A")
        s.put("b", {"base": s["a"]}, label="B")
        through = bale.region_of(s["b"]["base"])  # a handle reached through the reference
        s.put("a2", {"who": "the store's", "n": [7, 8, 9]}, label="A")
        through.append({"who": "by hand", "n": [10, 20, 30]})
        assert bale.thaw(s["a2"]) == {"who": "the store's", "n": [7, 8, 9]}
        s.put("a3", {"who": "the store's a3"}, label="A")
        assert bale.thaw(s["a3"]) == {"who": "the store's a3"}
        s.verify()


def test_bytes_appended_by_hand_to_a_stores_handle_are_copied_not_referenced(tmp_path):
    """Such bytes never reach a commit: the store's next appends overwrite
    them in the file, so a reference to them would read another value."""
    with bale.Store(tmp_path / "s") as s:
        s.put("a", {"rows": [{"id": i, "v": i * 10} for i in range(20)]}, label="A")
        row = bale.region_of(s["a"]["rows"][3]).root  # appended past A's commit
        s.put("b", {"row": row}, label="B")
        assert _bale._extern_segments(s.region("b")) == []
        s.put("a2", {"id": 99, "v": -1}, label="A")
        s.put("a3", {"id": 98, "v": -2, "pad": "x" * 100}, label="A")
        assert bale.thaw(s["b"]) == {"row": {"id": 3, "v": 30}}
        s.verify()


def test_references_kept_by_earlier_copies_stay_in_the_row_when_a_later_one_is_refused(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        s.put("c", {"c": 1}, label="C")
        s.put("d", {"d": list(range(20))}, label="D")
        s.put("b", {"t1": (s["d"],), "t2": (s["c"],)}, label="B")
        vb = s["b"]
        vt1, vt2 = vb["t1"], vb["t2"]
        s.drop("B")
        s.drop("C")  # removed: the copy of t2 cannot keep its reference
        s.put("e", {"x": vt1, "y": vt2}, label="E")
        seg_d = s._live_entry("d")[0]
        assert seg_d in s._snap.segments[s._live_entry("e")[0]].refs
        s.verify()
        s.drop("D")
        assert bale.thaw(s["e"]) == {"x": ({"d": list(range(20))},), "y": ({"c": 1},)}


def test_a_value_named_many_times_is_thawed_once(tmp_path):
    """60 values of [prev, prev]: 2^60 paths, 61 distinct values."""
    with bale.Store(tmp_path / "s") as s:
        with s.batch():
            s.put("v0", {"x": 1}, label="A")
            for i in range(1, 61):
                prev = s[f"v{i - 1}"]
                s.put(f"v{i}", [prev, prev], label="AB"[i % 2])
        top = bale.thaw(s["v60"])
        node = top
        for _ in range(60):
            assert node[0] is node[1]
            node = node[0]
        assert node == {"x": 1}
        assert s.verify()["values"] == 61


def test_one_view_met_twice_is_one_reference(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        s.put("a", {"x": [1, 2]}, label="A")
        same = s["a"]
        s.put("b", {"x": same, "y": same}, label="B", share=True)
        stats = _bale.region_stats(s.region("b"))
        assert stats["kinds"]["references to other segments"] == (1, 40)
        b = bale.thaw(s["b"])
        assert b["x"] is b["y"] and b["x"] == {"x": [1, 2]}


def test_the_bytes_of_a_value_holding_references_are_not_handed_out_alone(tmp_path):
    import pickle

    with bale.Store(tmp_path / "s") as s:
        s.put("a", {"x": [1, 2]}, label="A")
        s.put("b", {"base": s["a"]}, label="B")
        s.put("c", {"plain": 1}, label="B")
        h = s.region("b")
        for export in (bytes, memoryview, pickle.dumps, lambda r: r.save(str(tmp_path / "b.bale")), bale.share):
            with pytest.raises(ValueError, match="references values in other segments of its store"):
                export(h)
        assert bale.thaw(bale.load(bytes(s.region("c")))) == {"plain": 1}
        assert bale.thaw(pickle.loads(pickle.dumps(s["b"]))) == {"base": {"x": [1, 2]}}


def test_a_commit_record_naming_file_ids_past_32_bits_is_refused(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", 1)
    from test_store import rewrite_record

    rewrite_record(path, lambda r: r.update(next_file=(1 << 32) + 5))
    with pytest.raises(bale.FormatError, match="past 2\\^32 - 1"):
        bale.Store(path, readonly=True)


# --- found by attacking references between segments (review, 2026-11-27) ---


def test_values_named_many_times_through_references_are_refused_where_they_would_expand(tmp_path):
    """A chain of values each naming the one before twice (`[prev, prev]`,
    made with the public API, 9 kB on disk) is 2^40 values as a tree: a
    thaw keeps the sharing, and what would walk it as a tree (comparison,
    repr, JSON, a copy, pickling, a put through another Store object)
    raises FormatError at its budget, as for a shared region, instead of
    growing until memory runs out."""
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("v0", {"i": 0}, label="L0")
        for i in range(1, 41):
            prev = s[f"v{i - 1}"]
            s.put(f"v{i}", [prev, prev], label=f"L{i % 2}")
        assert s.verify()["values"] == 41
        v = s["v40"]
        native = bale.thaw(v)
        assert native[0] is native[1] and native[0][0] is native[1][1]
        import pickle

        for op in (
            lambda: v == native,
            lambda: repr(v),
            lambda: bale.to_json(v),
            lambda: bale.compact(v),
            lambda: pickle.dumps(v),
            lambda: bale.Store(path).put("copy", v, label="X"),
        ):
            with pytest.raises(bale.FormatError, match="expands to more elements"):
                op()
        # A short chain is fine everywhere.
        small = s["v3"]
        assert small == bale.thaw(small) and bale.to_json(small).count(b'"i"') == 8
        assert bale.thaw(bale.compact(small)) == bale.thaw(small)
    out = subprocess.run([sys.executable, "-m", "bale", "store", "get", str(path), "v40"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "expands to more elements" in out.stderr


def test_a_chain_of_references_in_a_thread_with_a_small_stack_is_a_recursion_error(tmp_path):
    """Following a reference recurses natively: in a 256 KB thread a chain of
    60 raises RecursionError (run in a child: a crash must fail the test,
    not end the run)."""
    code = f"""
import threading, bale
s = bale.Store({str(tmp_path / "s")!r})
s.put("v0", {{"i": 0}}, label="L0")
for i in range(1, 61):
    s.put(f"v{{i}}", {{"i": i, "prev": s[f"v{{i - 1}}"]}}, label=f"L{{i % 2}}")
out = []
def thaw():
    try:
        bale.thaw(s["v60"]); out.append("ok")
    except RecursionError as e:
        out.append("RecursionError: " + str(e))
threading.stack_size(256 * 1024)
t = threading.Thread(target=thaw); t.start(); t.join()
print(out[0])
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "while following references between segments" in p.stdout
    with bale.Store(tmp_path / "s", readonly=True) as r:
        assert bale.thaw(r["v60"])["prev"]["prev"]["i"] == 58  # the main thread's stack holds it


class _Link:
    """A record whose __init__ thaws another stored value (an independent thaw
    inside a thaw)."""

    store = None

    def __init__(self, key):
        self.key = key
        self.target = bale.thaw(_Link.store[key]) if _Link.store is not None and key in _Link.store else None


def test_a_thaw_started_by_a_thaw_shares_no_object_with_it(tmp_path):
    bale.register(_Link, ["key"])
    with bale.Store(tmp_path / "s") as s:
        s.put("users", {"ada": {"tags": ["admin"]}}, label="users")
        s.put("x", {"who": s["users"]}, label="x")
        s.put("y", [s["users"], _Link("x")], label="y")
        _Link.store = s
        try:
            y = bale.thaw(s["y"])
        finally:
            _Link.store = None
        inner = y[1].target["who"]
        assert inner == y[0] and inner is not y[0]
        inner["ada"]["tags"].append("changed")
        assert y[0] == {"ada": {"tags": ["admin"]}}


def test_the_writer_refuses_file_ids_readers_would_refuse(tmp_path):
    from test_store import rewrite_record

    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", {"x": 1})
    rewrite_record(path, lambda r: r.update(next_file=_store.MAX_FILE_ID - 1))
    with bale.Store(path) as s:
        s.put("k0", {"v": 0}, label="new")  # the last id
        with pytest.raises(OSError, match="used every file id") as e:
            s.put("k1", {"v": 1}, label="newer")
        assert e.value.filename == str(path)
        assert "k1" not in s and bale.thaw(s["k0"]) == {"v": 0}
    with bale.Store(path, readonly=True) as r:
        assert r.verify()["values"] == 2


def test_verify_follows_references_into_held_segments(tmp_path):
    """A held segment's dead values are read through references: the segments
    they reference must be in its row, or a drop frees what a live value
    reaches. verify checks every value reached, not only live ones."""
    from test_store import rewrite_record

    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("c", {"deep": [1, 2, 3]}, label="C")
        s.put("a", {"c": s["c"]}, label="A")
        s.put("b", {"a": s["a"]}, label="B")
        s.drop("A")
        seg_a = next(seg for seg, i in s._snap.segments.items() if i.held)
        assert s.verify()["values"] == 2

    def lie(record):
        row = record["segments"][seg_a]
        record["segments"][seg_a] = (*row[:6], (), row[7])

    rewrite_record(path, lie)
    with bale.Store(path, readonly=True) as r:
        with pytest.raises(bale.FormatError, match=r"seg-%08d\.bale: a value that key 'b' reaches references segments \[\d+\], which its segment's row does not list" % seg_a):
            r.verify()
