"""bale.Store: the contract, sharing, views that outlive their keys, crashes
(real SIGKILL), many processes, a real memory limit, and damaged files."""

from __future__ import annotations

import errno
import gc
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time

import pytest

import bale
from bale import _bale, _store

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/, with the helpers
sys.path.insert(0, HERE)
from _store_child import LABELS, value_of  # noqa: E402
from conftest import mounted_tmpfs  # noqa: E402

CHILD = os.path.join(HERE, "_store_child.py")
KILL_TRIALS = int(os.environ.get("BALE_STORE_KILL_TRIALS", "6"))


def files(path):
    return sorted(os.listdir(path))


# --- the contract ----------------------------------------------------------------


def test_the_contract(tmp_path):
    path = tmp_path / "cache.bstore"
    s = bale.Store(path)
    s["user:42"] = {"name": "Ada", "tags": ["x"], "scores": [0.5, 0.25]}
    assert s["user:42"]["tags"][0] == "x"
    assert isinstance(s["user:42"], bale.DictView)
    assert bale.thaw(s["user:42"]) == {"name": "Ada", "tags": ["x"], "scores": [0.5, 0.25]}
    s.put("doc:7", [1, 2, 3], label="epoch-3")
    with s.batch():
        for i in range(100):
            s.put(f"e4:{i}", {"i": i}, label="epoch-4")
    assert len(s) == 102
    assert s.labels() == {None: 1, "epoch-3": 1, "epoch-4": 100}
    assert s.drop("epoch-3") == 1
    assert "doc:7" not in s and len(s) == 101
    del s["user:42"]
    assert "user:42" not in s and "e4:5" in s
    assert s.get("user:42", "gone") == "gone" and s.get("e4:5")["i"] == 5
    assert sorted(s.keys()) == sorted(f"e4:{i}" for i in range(100))
    assert s.reclaim() >= 0
    s.close()
    assert s.closed
    with pytest.raises(ValueError, match="closed"):
        s["e4:1"]
    with bale.Store(path, readonly=True) as r:
        assert len(r) == 100 and r["e4:99"]["i"] == 99
        with pytest.raises(OSError) as e:
            r["x"] = 1
        assert e.value.errno == errno.EROFS and e.value.filename == str(path)


def test_scalars_bytes_keys_and_key_types(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        s["int"] = 7
        s["none"] = None
        s[b"raw\xff"] = "bytes key"
        s["raw\xff"] = "str key"
        assert s["int"] == 7 and s["none"] is None
        assert s[b"raw\xff"] == "bytes key" and s["raw\xff"] == "str key"
        assert len(s) == 4
        for bad in (1, 2.5, ("t",), None):
            with pytest.raises(TypeError, match="store keys are str or bytes"):
                s.put(bad, 1)
        with pytest.raises(TypeError, match="labels are str or None"):
            s.put("k", 1, label=3)
        with pytest.raises(KeyError):
            s["missing"]
        with pytest.raises(KeyError):
            del s["missing"]


def test_overwrite_keeps_count_and_shows_the_new_value(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        for v in range(5):
            s["k"] = v
        assert len(s) == 1 and s["k"] == 4
        s.put("k", "labelled", label="a")
        assert s.labels() == {"a": 1}
        assert s.drop(None) == 0 and s["k"] == "labelled"


def test_a_failed_compaction_leaves_the_store_as_it_was(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        s["a"] = 1
        generation = s.generation
        with pytest.raises(bale.CompactError):
            s["b"] = object()
        assert "b" not in s and s.generation == generation
        with pytest.raises(bale.CompactError):
            with s.batch():
                s["c"] = 3
                s["d"] = object()
        assert "c" not in s and len(s) == 1
        s["e"] = 5
    with bale.Store(tmp_path / "s", readonly=True) as r:
        assert sorted(r.keys()) == ["a", "e"] and r.verify()["values"] == 2


def test_a_batch_commits_once_and_sees_its_own_writes(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        generation = s.generation
        with s.batch():
            s["a"] = 1
            assert s["a"] == 1 and len(s) == 1
            del s["a"]
            assert "a" not in s
            s["b"] = 2
        assert s.generation == generation + 1
        assert list(s) == ["b"]


def test_the_gc_never_sees_stored_data_and_open_builds_no_per_key_objects(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        with s.batch():
            for i in range(50_000):
                s.put(f"key:{i}", {"i": i, "name": f"n{i}"})
    gc.collect()
    before = len(gc.get_objects())
    r = bale.Store(path, readonly=True)
    assert r["key:49999"]["name"] == "n49999"
    gc.collect()
    assert len(gc.get_objects()) - before < 200  # not 50,000
    view = r["key:7"]
    assert not gc.is_tracked(view)
    r.close()


# --- sharing and views that outlive their keys -------------------------------------


def test_a_value_built_from_stored_views_references_them(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        big = {"rows": [{"id": i, "text": "x" * 100} for i in range(1000)]}
        s["a"] = big
        a_bytes = s.region("a").nbytes
        s["b"] = {"base": s["a"], "note": 1}
        added = s.region("b").nbytes - a_bytes
        assert added < 100, added  # a few bytes, not a copy of `a` (~150 KB)
        assert bale.thaw(s["b"]["base"]) == big
        del s["a"]
        s.reclaim()
        assert bale.thaw(s["b"]) == {"base": big, "note": 1}
        assert s.verify()["values"] == 1
    # Another process, another writer: still shared within the segment.
    with bale.Store(tmp_path / "s") as s:
        before = s.region("b").nbytes
        s["c"] = [s["b"]["base"]["rows"], 2]
        assert s.region("c").nbytes - before < 100
        assert bale.thaw(s["c"][0][3]) == {"id": 3, "text": "x" * 100}


def test_views_of_another_label_are_copied_and_survive_its_drop(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        s.put("a", {"v": list(range(100))}, label="old")
        s.put("b", {"base": s["a"]}, label="new")
        assert s.drop("old") == 1
        s.reclaim()
        assert bale.thaw(s["b"]) == {"base": {"v": list(range(100))}}


def test_views_stay_valid_after_overwrite_delete_drop_and_reclaim(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", {"name": "first", "xs": list(range(50))}, label="L")
        s.put("b", ["b", 1], label="L")
        s.put("c", {"c": 3})
        va, vb, vc = s["a"], s["b"], s["c"]
        s["a"] = "overwritten"
        del s["c"]
        assert s.drop("L") == 1  # "b" ("a" moved to the unlabelled group)
        s.reclaim()
        assert not any(n.startswith("seg-") and n.endswith(".bale") for n in files(path)) or len(s) == 1
        assert bale.thaw(va) == {"name": "first", "xs": list(range(50))}
        assert bale.thaw(vb) == ["b", 1] and vc["c"] == 3


def test_views_in_a_reader_survive_a_writer_process_dropping_and_reclaiming(tmp_path):
    path = str(tmp_path / "s")
    with bale.Store(path) as s:
        for i in range(300):
            s.put(f"k{i}", value_of(f"k{i}", i), label="gone")
    reader = bale.Store(path, readonly=True)
    views = [reader[f"k{i}"] for i in range(0, 300, 7)]
    code = f"import bale; s = bale.Store({path!r}); s.drop('gone'); s.reclaim(); s['new'] = 1; s.close()"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert not any(n.startswith("seg-") and "gone" in n for n in files(path))
    for i, v in zip(range(0, 300, 7), views):
        assert bale.thaw(v) == value_of(f"k{i}", i)
    assert "k0" in reader  # its snapshot
    assert reader.refresh() is True
    assert "k0" not in reader and reader["new"] == 1 and len(reader) == 1
    reader.close()


# --- labels and reclaim --------------------------------------------------------------


def test_drop_returns_the_space_of_its_segments_and_leaves_other_labels(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path, segment_size=1 << 16) as s:
        with s.batch():
            for i in range(2000):
                s.put(f"a{i}", {"i": i, "pad": "p" * 200}, label="a")
                s.put(f"b{i}", {"i": i}, label="b")
        segments_a = [seg for seg, info in s._snap.segments.items() if info.label == "a"]
        assert len(segments_a) > 3
        usage = s.info()["disk_bytes"]
        assert s.drop("a") == 2000
        assert s.info()["disk_bytes"] < usage / 2
        for seg in segments_a:
            assert not (path / _store._segment_name(seg)).exists()
        assert len(s) == 2000 and s["b1999"]["i"] == 1999 and "a5" not in s
        assert s.drop("a") == 0 and s.drop("never") == 0
        # A key dropped with its label can be put again.
        s.put("a5", "again", label="a")
        assert s["a5"] == "again"


def test_reclaim_rewrites_sparse_segments_keeping_sharing_and_values(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path, segment_size=1 << 20) as s:
        shared = {"vocabulary": ["w" * 50] * 1}
        with s.batch():
            s.put("base", {"words": [f"word{i}" * 10 for i in range(500)]}, label="x")
            for i in range(1000):
                s.put(f"k{i}", {"i": i, "base": s["base"], "pad": "q" * 500}, label="x")
        for i in range(1000):
            if i % 10:
                del s[f"k{i}"]
        before = s.info()["disk_bytes"]
        freed = s.reclaim()
        after = s.info()["disk_bytes"]
        assert freed > 0 and after < before / 3, (before, after, freed)
        # The survivors still share one copy of `base`: 100 values of ~600
        # bytes, not 100 copies of a 30 KB list.
        assert s.info()["segment_bytes"] < 100 * 600 + 40_000
        for i in range(0, 1000, 10):
            assert s[f"k{i}"]["i"] == i and s[f"k{i}"]["base"]["words"][499] == "word499" * 10
        assert len(s) == 101 and s.verify()["values"] == 101
        del shared


def test_reclaim_of_two_small_ints_and_of_scalars(tmp_path):
    with bale.Store(tmp_path / "s") as s:
        for i in range(10):
            s.put(f"k{i}", i, label="n")
        for i in range(2, 10):
            del s[f"k{i}"]
        s.reclaim()
        assert (s["k0"], s["k1"]) == (0, 1) and len(s) == 2
        assert s.verify()["values"] == 2


def test_index_levels_merge_and_stay_correct(tmp_path):
    rng = random.Random(5)
    model = {}
    with bale.Store(tmp_path / "s") as s:
        for round_ in range(16):
            with s.batch():
                for _ in range(900):
                    k = f"k{rng.randrange(60000)}"
                    if rng.random() < 0.2:
                        if k in model:
                            del s[k]
                            del model[k]
                    else:
                        s[k] = model[k] = rng.randrange(10**9)
        assert len(s._snap.levels) >= 2
        assert len(s) == len(model)
        assert sorted(s.keys()) == sorted(model)
        assert all(s[k] == v for k, v in model.items())
        s.reclaim()
        assert len(s._snap.levels) == 1 and len(s) == len(model)
    with bale.Store(tmp_path / "s", readonly=True) as r:
        assert all(r[k] == v for k, v in model.items())


# --- many processes --------------------------------------------------------------------


def test_writers_in_several_processes_interleave(tmp_path):
    path = str(tmp_path / "s")
    procs = [subprocess.Popen([sys.executable, CHILD, "putter", path, f"p{n}-", "60"]) for n in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    with bale.Store(path, readonly=True) as r:
        assert len(r) == 180
        for n in range(3):
            for i in range(60):
                assert bale.thaw(r[f"p{n}-{i}"]) == value_of(f"p{n}-{i}", i)
        assert r.verify()["values"] == 180


def test_readers_see_whole_values_while_a_writer_runs(tmp_path):
    path = str(tmp_path / "s")
    bale.Store(path).close()
    writer = subprocess.Popen([sys.executable, CHILD, "writer", path, "3", "65536"], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline() == "ready\n"
    readers = [
        subprocess.Popen([sys.executable, CHILD, "reader", path, "3"], stdout=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outs = [r.communicate(timeout=120)[0] for r in readers]
    writer.kill()
    writer.wait()
    writer.stdout.close()
    assert [r.returncode for r in readers] == [0, 0], outs
    assert all(int(o.split()[-1]) > 0 for o in outs), outs


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_writes_with_its_own_lock(tmp_path):
    path = tmp_path / "s"
    s = bale.Store(path)
    s["parent"] = 1
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            s["child"] = 2
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    s["parent2"] = 3  # sees the child's commit first: nothing lost
    assert sorted(s.keys()) == ["child", "parent", "parent2"]
    s.close()


def test_two_stores_race_to_create_one_directory(tmp_path):
    path = str(tmp_path / "new")
    code = "import bale, sys; s = bale.Store(sys.argv[1]); s[sys.argv[2]] = 1; s.close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, path, f"k{i}"]) for i in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 4
    with bale.Store(path, readonly=True) as r:
        assert sorted(r.keys()) == ["k0", "k1", "k2", "k3"]


# --- crashes: real SIGKILL ------------------------------------------------------------


def replay(model: dict, op: list) -> None:
    kind = op[0]
    if kind == "put":
        model[op[1]] = (op[2], op[3])
    elif kind == "ref":
        # `_store_child.apply`: a value holding the source's value, if any.
        src = model.get(op[4]) if op[4] != op[1] else None
        model[op[1]] = (op[2] if src is None else ("ref", op[2], op[4], src[0]), op[3])
    elif kind == "del":
        model.pop(op[1], None)
    elif kind == "drop":
        for k in [k for k, (_, label) in model.items() if label == op[1]]:
            del model[k]
    elif kind == "batch":
        for inner in op[1]:
            replay(model, inner)


def store_state(path: str) -> dict:
    with bale.Store(path) as s:
        s.verify()
        return {k: bale.thaw(s[k]) for k in s}, s.labels()


def value_from(key: str, spec) -> dict:
    """What the model says ``key`` holds: ``value_of``, or a value holding
    another key's value as it was when it was put."""
    if type(spec) is int:
        return value_of(key, spec)
    _, version, src, src_spec = spec
    return {"k": key, "v": version, "base": value_from(src, src_spec)}


def expected_state(model: dict) -> tuple:
    values = {k: value_from(k, v) for k, (v, _) in model.items()}
    labels = {}
    for _, label in model.values():
        labels[label] = labels.get(label, 0) + 1
    return values, labels


@pytest.mark.parametrize("refs", [False, True], ids=["plain", "references"])
@pytest.mark.parametrize("trial", range(KILL_TRIALS))
def test_kill_9_at_a_random_moment_loses_nothing_acknowledged(tmp_path, trial, refs):
    """A writer doing puts, batches, deletes, drops and reclaims (and, with
    ``refs``, puts of values holding other stored values, which reference
    them across segments) is killed with SIGKILL at a random moment; the
    store reopens at its last commit: every acknowledged operation is
    there, the one in flight is whole or absent, no value reached through
    a reference is lost to a drop, and verify passes."""
    rng = random.Random(trial)
    path = str(tmp_path / "s")
    model: dict = {}
    for round_ in range(3):
        seed = trial * 100 + round_
        child = subprocess.Popen(
            [sys.executable, CHILD, "writer", path, str(seed), str(rng.choice([1 << 12, 1 << 16, 1 << 22]))]
            + (["refs"] if refs else []),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.05, 0.8))
        child.kill()
        out = child.communicate()[0]
        assert child.returncode == -9
        in_flight = None
        for line in out.splitlines():
            if line.startswith("begin "):
                in_flight = json.loads(line[6:])
            elif line == "done":
                replay(model, in_flight)
                in_flight = None
        got = store_state(path)
        if got != expected_state(model):
            assert in_flight is not None, "acknowledged operations are missing or wrong"
            replay(model, in_flight)
            assert got == expected_state(model), f"neither before nor after {in_flight}"
    # Files of killed transactions are removed by the next writer.
    with bale.Store(path) as s:
        s["after"] = 1
        named = {n for n in files(path) if n.startswith(("seg-", "idx-"))}
        expected = {_store._segment_name(seg) for seg in s._snap.segments}
        expected |= {_store._sums_name(seg) for seg in s._snap.segments}
        expected |= {_store._index_name(f) for f, _ in s._snap.levels}
        assert named == expected


# --- damaged and lying files ---------------------------------------------------------------


def newest_super(path) -> str:
    best = max(
        (n for n in _store.SUPER_NAMES if not isinstance(_store._read_superblock(os.path.join(path, n)), str)),
        key=lambda n: _store._read_superblock(os.path.join(path, n))[0],
    )
    return os.path.join(path, best)


def rewrite_record(path, change) -> None:
    """Rewrites the newest commit record through ``change(dict)``, with a
    valid checksum: a liar, not a torn write."""
    name = newest_super(path)
    generation, version, payload = _store._read_superblock(name)
    record = bale.thaw(bale.load(payload).root)
    change(record)
    body = bytes(bale.compact(record))
    head = _store.SUPER_HEADER.pack(_store.MAGIC, version, 0, generation, len(body), 0)
    checksum = _bale._xxh3(head[:-8] + body)
    with open(name, "wb") as f:
        f.write(_store.SUPER_HEADER.pack(_store.MAGIC, version, 0, generation, len(body), checksum) + body)


@pytest.fixture
def small_store(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        for i in range(20):
            s.put(f"k{i}", value_of(f"k{i}", i), label="L" if i % 2 else None)
    return path


def test_a_torn_newest_superblock_falls_back_to_the_previous_commit(small_store):
    name = newest_super(small_store)
    with open(name, "rb") as f:
        data = f.read()
    with open(name, "r+b") as f:
        f.truncate(len(data) // 2)
    with bale.Store(small_store) as s:
        assert len(s) == 19 and "k19" not in s  # the last put's commit is gone
        s["k19"] = value_of("k19", 19)
        assert s.verify()["values"] == 20


def test_no_valid_superblock_is_a_format_error_naming_both(small_store):
    for n in _store.SUPER_NAMES:
        with open(small_store / n, "r+b") as f:
            f.seek(50)
            f.write(b"\xff\xfe")
    for readonly in (True, False):
        with pytest.raises(bale.FormatError, match=r"no valid superblock \(SUPER.0: checksum mismatch.*SUPER.1: checksum"):
            bale.Store(small_store, readonly=readonly)
    (small_store / "SUPER.0").write_bytes(b"not a store")
    with pytest.raises(bale.FormatError, match="SUPER.0: 11 bytes, shorter than"):
        bale.Store(small_store)


def test_a_torn_segment_tail_is_ignored_and_overwritten(small_store):
    with bale.Store(small_store) as s:
        seg = next(iter(s._snap.segments))
    with open(small_store / _store._segment_name(seg), "ab") as f:
        f.write(os.urandom(5000))
    with bale.Store(small_store) as s:
        assert s.verify()["values"] == 20
        s.put("more", {"x": 1})
        s.put("more2", {"x": 2}, label="L")
        assert s.verify()["values"] == 22


def test_a_flipped_byte_in_a_segment_fails_verify_naming_the_file(small_store):
    with bale.Store(small_store) as s:
        seg = sorted(s._snap.segments)[0]
    target = small_store / _store._segment_name(seg)
    data = bytearray(target.read_bytes())
    data[200] ^= 0x40
    target.write_bytes(bytes(data))
    with bale.Store(small_store, readonly=True) as r:
        with pytest.raises(bale.FormatError, match=rf"{target.name}: bytes \d+\.\.\d+ do not match their checksum"):
            r.verify()
        for k in r:  # reading never crashes: a value or FormatError
            try:
                bale.thaw(r[k])
            except bale.FormatError:
                pass
    out = subprocess.run([sys.executable, "-m", "bale", "store", "verify", str(small_store)], capture_output=True, text=True)
    assert out.returncode == 1 and "do not match their checksum" in out.stderr


def test_a_missing_segment_file_is_a_format_error_naming_it(small_store):
    with bale.Store(small_store) as s:
        seg = sorted(s._snap.segments)[0]
        in_seg = [k for k in s if s._entry(k)[0] == seg]
        elsewhere = [k for k in s if s._entry(k)[0] != seg]
    assert in_seg and elsewhere
    os.unlink(small_store / _store._segment_name(seg))
    missing = rf"{_store._segment_name(seg)}: (segment|a) file named by the commit is missing"
    # Segments are mapped at their first read: the store opens, other
    # segments read, and a read of this one (or verify) names its file.
    with bale.Store(small_store, readonly=True) as r:
        assert bale.thaw(r[elsewhere[0]]) == value_of(elsewhere[0], int(elsewhere[0][1:]))
        assert in_seg[0] in r  # the index alone
        for read in (lambda: r[in_seg[0]], lambda: r.get(in_seg[0]), lambda: r.region(in_seg[0]), r.verify):
            with pytest.raises(bale.FormatError, match=missing):
                read()
    # A store of an older version maps every segment at open, as before.
    os.unlink(small_store / _store.READERS_NAME)
    with pytest.raises(bale.FormatError, match=missing):
        bale.Store(small_store, readonly=True)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r.update(count=r["count"] + 1), "is not the sum of its segments' live values"),
        (lambda r: r.update(generation=99), "header generation"),
        (lambda r: r.pop("delta"), "lacks a field"),
        (lambda r: r["segments"].update({1: ("x", 63, 0, 0, 0, True)}), "segment table row 1"),
        (lambda r: r.update(levels=((10**6, 5),)), "index levels"),
        (lambda r: r["segments"].update({k: (v[0], v[1] + 8 * 10**6, *v[2:]) for k, v in r["segments"].items()}), "segment file has"),
    ],
)
def test_a_lying_commit_record_with_a_valid_checksum_is_refused(small_store, change, message):
    rewrite_record(small_store, change)
    with pytest.raises(bale.FormatError, match=message):
        with bale.Store(small_store, readonly=True) as r:
            for key in list(r):
                bale.thaw(r[key])  # (a segment's file is checked when it is first mapped)


def test_lying_index_entries_raise_format_errors_not_crashes(small_store):
    def lie(record):
        seg = sorted(record["segments"])[0]
        length = record["segments"][seg][1]
        record["delta"].update(
            {
                "past": (seg, length + 64, 2, 0),
                "short": (seg, 40, 2, 0),
                "flags": (seg, length, 2, 0x80),
                "root": (seg, length, (10**6 << 19) | 2, 0),
                "odd": (seg, 65, 2, 0),
            }
        )
        # A root that lies in the segment, but past the end the entry gives
        # (a later value's root with an earlier value's end).
        first, second = record["delta"]["k0"], record["delta"]["k2"]
        assert first[0] == second[0] and first[1] < second[1]
        record["delta"]["ahead"] = (first[0], first[1], second[2], 0)

    rewrite_record(small_store, lie)
    with bale.Store(small_store, readonly=True) as r:
        for key in ("past", "short", "flags", "root", "odd", "ahead"):
            with pytest.raises(bale.FormatError):
                bale.thaw(r[key])
        # `in` reads the index alone (outside a batch as in one): each of
        # these keys has a live entry; reading its value raises.
        for key in ("past", "short", "flags", "root", "odd", "ahead", "k0"):
            assert key in r
        assert "absent" not in r
        with pytest.raises(bale.FormatError):
            r.verify()


def test_a_full_disk_raises_oserror_with_the_path_and_keeps_the_last_commit(tmp_path):
    with mounted_tmpfs("2m") as where:
        fill_up(os.path.join(where, "s"))


def fill_up(path):
    """Puts that do not fit: ENOSPC with the path, and the last commit kept."""
    with bale.Store(path) as s:
        s["small"] = {"a": 1}
        with pytest.raises(OSError) as e:
            s["huge"] = [bytes(1 << 20), os.urandom(3 << 20)]
        assert e.value.errno == errno.ENOSPC and e.value.filename.startswith(path)
        with pytest.raises(OSError) as e:
            with s.batch():
                s["b1"] = 1
                s["b2"] = os.urandom(3 << 20)
        assert e.value.errno == errno.ENOSPC
        assert sorted(s.keys()) == ["small"]
        s["after"] = 2
    with bale.Store(path, readonly=True) as r:
        assert sorted(r.keys()) == ["after", "small"] and r.verify()["values"] == 2


def test_opening_what_is_not_a_store(tmp_path):
    with pytest.raises(FileNotFoundError):
        bale.Store(tmp_path / "missing", readonly=True)
    f = tmp_path / "file"
    f.write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        bale.Store(f)
    with pytest.raises(NotADirectoryError):
        bale.Store(f, readonly=True)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no bale store here yet"):
        bale.Store(tmp_path / "empty", readonly=True)
    with pytest.raises(ValueError, match="segment_size"):
        bale.Store(tmp_path / "x", segment_size=10)


# --- a store larger than the memory a process may use (cgroup v1) -----------------


def test_reading_a_store_several_times_larger_than_a_cgroup_memory_limit(tmp_path):
    root = "/sys/fs/cgroup/memory"
    if not os.path.isdir(root) or not os.access(root, os.W_OK):
        pytest.skip("no writable cgroup v1 memory controller")
    path = str(tmp_path / "s")
    limit = 96 << 20
    with bale.Store(path) as s:
        blob = "z" * 4000
        for part in range(8):
            with s.batch():
                for i in range(part * 10_000, (part + 1) * 10_000):
                    s.put(f"k{i}", {"i": i, "blob": blob + str(i)})
        # One value twice the limit too.
        s["big"] = [blob + str(i) for i in range(50_000)]
        assert s.info()["segment_bytes"] > 5 * limit
    group = os.path.join(root, f"bale-test-{os.getpid()}")
    os.mkdir(group)
    try:
        with open(os.path.join(group, "memory.limit_in_bytes"), "w") as f:
            f.write(str(limit))
        code = (
            "import bale, sys, random\n"
            "s = bale.Store(sys.argv[1], readonly=True)\n"
            "total = sum(s[k]['i'] + len(s[k]['blob']) for k in s if k != 'big')\n"
            "assert sum(map(len, s['big'])) == sum(4000 + len(str(i)) for i in range(50_000))\n"
            "rng = random.Random(1)\n"
            "for _ in range(20000):\n"
            "    i = rng.randrange(80000); assert s[f'k{i}']['blob'].endswith(str(i))\n"
            "print(total)\n"
        )
        child = subprocess.Popen(
            [sys.executable, "-c", code, path],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: open(os.path.join(group, "cgroup.procs"), "w").write(str(os.getpid())),
        )
        out = child.communicate(timeout=300)[0]
        assert child.returncode == 0
        assert int(out) == sum(range(80000)) + sum(4000 + len(str(i)) for i in range(80000))
        with open(os.path.join(group, "memory.max_usage_in_bytes")) as f:
            peak = int(f.read())
        assert peak <= limit
    finally:
        os.rmdir(group)


# --- the CLI ------------------------------------------------------------------------------


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "bale", "store", *args], capture_output=True, text=True)


def test_cli(small_store):
    out = run_cli("info", str(small_store))
    assert out.returncode == 0 and "values: 20" in out.stdout and "L: 10" in out.stdout
    out = run_cli("keys", str(small_store))
    assert sorted(out.stdout.split()) == sorted(f"k{i}" for i in range(20))
    out = run_cli("get", str(small_store), "k3", "/nested/a/0")
    assert out.returncode == 0 and out.stdout == "3\n"
    out = run_cli("get", str(small_store), "k3")
    assert json.loads(out.stdout) == json.loads(json.dumps(value_of("k3", 3)))
    out = run_cli("get", str(small_store), "k3", "/nested/zz")
    assert out.returncode == 1 and "no value at /nested/zz" in out.stderr
    out = run_cli("get", str(small_store), "nope")
    assert out.returncode == 1 and "no key 'nope'" in out.stderr
    out = run_cli("verify", str(small_store))
    assert out.returncode == 0 and "OK (20 values" in out.stdout
    out = run_cli("reclaim", str(small_store))
    assert out.returncode == 0 and "bytes freed" in out.stdout
    out = run_cli("info", str(small_store / "nothing"))
    assert out.returncode == 1 and "no such store" in out.stderr


def test_reclaim_removes_emptied_segments_and_refuses_to_run_inside_a_batch(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        assert files(path) == ["READERS", "SUPER.0", "SUPER.1"]  # both superblocks from the start
        for i in range(50):
            s.put(f"k{i}", {"i": i}, label="tmp")
        for i in range(50):
            del s[f"k{i}"]
        assert any(n.startswith("seg-") for n in files(path))
        with s.batch():
            with pytest.raises(RuntimeError, match="inside a batch"):
                s.reclaim()
        assert s.reclaim() > 0
        assert not any(n.startswith("seg-") for n in files(path)) and len(s) == 0
        assert s.verify()["values"] == 0


def test_threads_read_one_store_while_another_thread_writes(tmp_path):
    import threading

    s = bale.Store(tmp_path / "s")
    for i in range(200):
        s[f"k{i}"] = value_of(f"k{i}", i)
    errors = []
    stop = threading.Event()

    def read():
        rng = random.Random(threading.get_ident())
        try:
            while not stop.is_set():
                i = rng.randrange(200)
                v = bale.thaw(s[f"k{i}"])
                if v["k"] != f"k{i}" or v != value_of(v["k"], v["v"]):
                    errors.append(v)
        except Exception as e:  # any error is a failure
            errors.append(e)

    threads = [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for n in range(60):
        i = n % 200
        s.put(f"k{i}", value_of(f"k{i}", 1000 + n), label=LABELS[n % 4])
        if n % 30 == 29:
            s.reclaim()
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    assert len(s) == 200 and s.verify()["values"] == 200
    s.close()


def rss_anon() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    pytest.skip("no RssAnon in /proc/self/status")


def test_a_writer_keeps_in_memory_only_its_open_segments(tmp_path):
    blob = os.urandom(1 << 20)
    with bale.Store(tmp_path / "s", segment_size=4 << 20) as s:
        s["warm"] = blob
        gc.collect()
        before = rss_anon()
        for i in range(160):
            s[f"k{i}"] = blob
        grew = rss_anon() - before
        assert s.info()["segment_bytes"] > 150 << 20
        assert grew < 48 << 20, f"anonymous memory grew by {grew >> 20} MiB for 160 MiB written"
        assert bytes(s["k3"]) == blob


def test_a_reader_racing_fast_commits_never_sees_a_damaged_store(tmp_path):
    """Commits rewrite the superblocks in turn: a reader can find the one it
    reads first being rewritten, and the other too by the next commit."""
    path = str(tmp_path / "s")
    with bale.Store(path) as s:
        with s.batch():
            for i in range(1000):  # a delta of 1,000 entries: superblocks of ~60 KB
                s[f"k{i}:" + "x" * 40] = i
    code = (
        "import bale, sys, time\n"
        "s = bale.Store(sys.argv[1])\n"
        "end = time.monotonic() + 4\n"
        "i = 0\n"
        "while time.monotonic() < end:\n"
        "    s[f'w{i % 10}'] = i; i += 1\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", code, path])
    r = bale.Store(path, readonly=True)
    refreshes = 0
    try:
        while writer.poll() is None:
            r.refresh()
            refreshes += 1
    finally:
        writer.wait()
    assert writer.returncode == 0 and refreshes > 0
    r.close()


# --- s[k] and k in s in Rust (`_bale._StoreReads`): what the gate lets through


def test_gets_follow_the_gate_through_batches_aborts_and_close(tmp_path):
    s = bale.Store(tmp_path / "s")
    s["k"] = "old"
    assert isinstance(s, bale._bale._StoreReads)
    with s.batch():
        s["k"] = "new"
        s["only-in-batch"] = 1
        # The batch's own writes, not the last commit's.
        assert s["k"] == "new" and "only-in-batch" in s
        assert s.get("k") == "new" and s.get("never", "dflt") == "dflt"
        with pytest.raises(TypeError):
            s.get(3, "dflt")
    assert s["k"] == "new" and s["only-in-batch"] == 1
    assert s.get("k") == "new" and s.get(b"k") is None and s.get("never", "dflt") == "dflt"
    with pytest.raises(TypeError, match="str or bytes, not int"):
        s.get(3, "dflt")
    with pytest.raises(ValueError, match="at most"):
        s.get("x" * (1 << 17), "dflt")
    with pytest.raises(RuntimeError, match="boom"):
        with s.batch():
            s["k"] = "aborted"
            raise RuntimeError("boom")
    # After an abort the fast path is back, on the last commit.
    assert s["k"] == "new" and "k" in s and "never" not in s
    with pytest.raises(KeyError):
        s["never"]
    with pytest.raises(TypeError):
        s[3]
    s.close()
    with pytest.raises(ValueError, match="closed"):
        s["k"]
    with pytest.raises(ValueError, match="closed"):
        "k" in s
    with pytest.raises(ValueError, match="closed"):
        s.get("k")


def test_another_threads_get_during_a_batch_sees_the_last_commit(tmp_path):
    import threading

    with bale.Store(tmp_path / "s") as s:
        s["k"] = "committed"
        seen = []
        with s.batch():
            s["k"] = "in the batch"
            reader = threading.Thread(target=lambda: seen.append((s["k"], "k" in s)))
            reader.start()
            reader.join()
        assert seen == [("committed", True)]
        assert s["k"] == "in the batch"


def test_a_refresh_hands_the_new_snapshot_to_the_fast_path(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as w:
        w["k"] = 1
        r = bale.Store(path, readonly=True)
        w["k"] = 2
        w["new"] = 3
        assert r["k"] == 1 and "new" not in r
        assert r.refresh()
        assert r["k"] == 2 and r["new"] == 3
        r.close()


def test_the_base_class_refuses_what_it_was_not_handed(tmp_path):
    reads = bale._bale._StoreReads()
    # Nothing handed: it asks the subclass, which this bare object is not.
    with pytest.raises(AttributeError, match="_get_slow"):
        reads["k"]
    with pytest.raises(AttributeError, match="_get_default_slow"):
        reads.get("k")
    with pytest.raises(ValueError, match="length 2"):
        reads._set_fast((1, 2, 3))
    reads._set_fast((("not a view",), {}))
    with pytest.raises(TypeError):
        reads["k"]


def test_a_damaged_index_through_the_fast_path_names_the_file(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        with s.batch():
            for i in range(3000):
                s[f"k{i}"] = i
    index = sorted(path.glob("idx-*.bale"))
    assert index, sorted(p.name for p in path.iterdir())
    raw = bytearray(index[-1].read_bytes())
    # Every bucket's hash bits flipped: no key matches its bucket, so the
    # first get checks the whole table and refuses it.
    start = int.from_bytes(raw[16:24], "little") + 32  # the region's total_len, the table's header
    for at in range(start, len(raw), 32):
        raw[at + 7] ^= 0x55
    index[-1].write_bytes(bytes(raw))
    s = bale.Store(path, readonly=True)
    with pytest.raises(bale.FormatError, match=index[-1].name):
        s["k7"]
    s.close()
    s = bale.Store(path, readonly=True)
    with pytest.raises(bale.FormatError, match=index[-1].name):
        "k7" in s
    s.close()
    s = bale.Store(path, readonly=True)
    with pytest.raises(bale.FormatError, match=index[-1].name):
        s.get("k7", "a default is no answer to damaged bytes")
    s.close()
