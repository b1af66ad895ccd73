"""The store's reader table (docs/STORE.md, *Readers*): a store maps a
segment at its first read, not at open, and holds a lock on its snapshot's
generation in `READERS`; a writer removes a freed segment's files only when
no open store's snapshot still names it. Real processes, real `kill -9`."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

import bale
from bale import _store

if not sys.platform.startswith("linux"):
    pytest.skip("reader locks are Linux open file description locks", allow_module_level=True)


def mapped_segments(path) -> set[str]:
    """The segment files of ``path`` this process maps (from /proc/self/maps)."""
    prefix = os.path.join(os.path.realpath(path), "seg-")
    out = set()
    with open("/proc/self/maps") as f:
        for line in f:
            name = line.rstrip("\n").split(maxsplit=5)[-1]
            if name.startswith(prefix):
                out.add(os.path.basename(name.split(" (deleted)")[0]))
    return out


def seg_files(path) -> set[str]:
    return {n for n in os.listdir(path) if n.startswith("seg-") and n.endswith(".bale")}


def build(path, labels=20, per_label=5):
    with bale.Store(path, segment_size=4096) as s:
        with s.batch():
            for label in range(labels):
                for i in range(per_label):
                    s.put(f"{label}:{i}", {"label": label, "i": i, "pad": "x" * 1500}, label=f"L{label}")
    return path


def segment_of(s, key) -> str:
    return _store._segment_name(s._live_entry(key)[0])


def test_opening_maps_no_segment_and_a_get_maps_only_its_own(tmp_path):
    path = build(tmp_path / "s")
    assert len(seg_files(path)) >= 40
    with bale.Store(path, readonly=True) as r:
        assert mapped_segments(path) == set()
        assert len(r) == 100 and "3:1" in r and "nope" not in r  # the index alone
        assert mapped_segments(path) == set()
        assert bale.thaw(r["3:1"])["i"] == 1
        assert mapped_segments(path) == {segment_of(r, "3:1")}
        assert r.get("7:0")["label"] == 7
        assert mapped_segments(path) == {segment_of(r, "3:1"), segment_of(r, "7:0")}
    with bale.Store(path) as w:  # a writer too
        assert mapped_segments(path) == set()
        w.put("new", {"x": 1}, label="L3")
        assert bale.thaw(w["3:4"])["i"] == 4 and w.verify()["values"] == 101


def test_a_segment_mapped_with_what_it_references(tmp_path):
    path = tmp_path / "s"
    with bale.Store(path) as s:
        s.put("a", {"x": [1, 2, 3]}, label="A")
        s.put("b", {"base": s["a"], "n": 1}, label="B")
    with bale.Store(path, readonly=True) as r:
        b = r["b"]
        assert mapped_segments(path) == {segment_of(r, "a"), segment_of(r, "b")}
    # Closed, and `a`'s label dropped by another process: b's view still reads a.
    subprocess.run([sys.executable, "-c", f"import bale; s = bale.Store({str(path)!r}); s.drop('A'); s.put('z', 1); s.close()"], check=True)
    assert bale.thaw(b) == {"base": {"x": [1, 2, 3]}, "n": 1}


def writer(path, code: str) -> None:
    """Runs ``code`` with ``s``, a writer on ``path``, in another process."""
    subprocess.run([sys.executable, "-c", f"import bale\ns = bale.Store({str(path)!r})\n{code}\ns.close()"], check=True, timeout=120)


def test_a_reader_reads_its_snapshot_whatever_other_processes_free(tmp_path):
    path = build(tmp_path / "s")
    r = bale.Store(path, readonly=True)
    before = {k: bale.thaw(v) for k, v in ((k, r[k]) for k in ("0:0", "9:4"))}
    assert mapped_segments(path) == {segment_of(r, "0:0"), segment_of(r, "9:4")}
    gone = {segment_of(r, f"{label}:0") for label in (5, 6)}
    # Another process drops two labels, deletes and overwrites keys, reclaims.
    writer(path, "s.drop('L5'); s.drop('L6')\nfor i in range(5): del s[f'7:{i}']\ns['8:0'] = 'new'\ns.reclaim()")
    # Their files stay while this reader's snapshot names them...
    assert gone <= seg_files(path)
    assert bale.thaw(r["5:3"]) == {"label": 5, "i": 3, "pad": "x" * 1500}
    assert bale.thaw(r["7:2"])["i"] == 2 and bale.thaw(r["8:0"])["i"] == 0
    assert {k: bale.thaw(r[k]) for k in before} == before
    assert r.verify()["values"] == 100
    view = r["6:1"]
    # ...and go at the first commit after it moved on.
    assert r.refresh()
    assert "5:3" not in r and r["8:0"] == "new" and len(r) == 100 - 10 - 5
    writer(path, "s['after'] = 1")
    assert not gone & seg_files(path)
    assert view["i"] == 1 and bale.thaw(view)["label"] == 6  # mapped before: still reads
    r.close()
    with bale.Store(path, readonly=True) as again:
        assert again.verify()["values"] == 86


def test_a_reader_killed_with_sigkill_holds_nothing(tmp_path):
    path = build(tmp_path / "s")
    ready = tmp_path / "ready"
    child = subprocess.Popen(
        [sys.executable, "-c", f"import bale, time\nr = bale.Store({str(path)!r}, readonly=True)\nopen({str(ready)!r}, 'w').close()\ntime.sleep(600)"]
    )
    try:
        for _ in range(600):
            if ready.exists():
                break
            time.sleep(0.05)
        with bale.Store(path) as s:
            gone = segment_of(s, "4:0")
            s.drop("L4")
            assert gone in seg_files(path)  # the child's snapshot names it
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=60)
            s["x"] = 1
            assert gone not in seg_files(path)
    finally:
        child.kill()
        child.wait()


def test_stores_of_one_process_lock_apart(tmp_path):
    path = build(tmp_path / "s")
    r = bale.Store(path, readonly=True)
    with bale.Store(path) as w:
        gone = segment_of(w, "2:0")
        w.drop("L2")
        assert gone in seg_files(path)  # r, another store of this process, is at the older commit
        assert bale.thaw(r["2:3"])["i"] == 3
        freed = w.info()["freed_segments"]
        assert freed >= 1 and freed == len({segment_of(r, f"2:{i}") for i in range(5)})
        out = subprocess.run([sys.executable, "-m", "bale", "store", "info", str(path)], capture_output=True, text=True, check=True)
        assert f"{freed} freed, their files kept for readers of older commits" in out.stdout
        r.close()
        w["x"] = 1
        assert gone not in seg_files(path)
        # With no other store open, a drop's files go at its own commit.
        gone = segment_of(w, "3:0")
        assert w.drop("L3") == 5
        assert gone not in seg_files(path)
        assert w.info()["freed_segments"] == 0


_PARENT_STORE: list = []


@contextlib.contextmanager
def forked_after_a_drop(path, target):
    """A reader ``r`` of ``path``; a writer ``w`` that has dropped L1 (whose
    files ``gone`` names, kept for ``r``'s commit); a child forked then,
    running ``target(conn)`` with ``r`` in ``_PARENT_STORE``, and the
    parent's end of its pipe. Yields ``(r, w, gone, conn, process)``."""
    r = bale.Store(path, readonly=True)
    _PARENT_STORE[:] = [r]
    try:
        with bale.Store(path) as w:
            gone = segment_of(w, "1:0")
            w.drop("L1")
            ctx = multiprocessing.get_context("fork")
            parent, child_end = ctx.Pipe()
            p = ctx.Process(target=target, args=(child_end,), daemon=True)
            p.start()
            try:
                yield r, w, gone, parent, p
            finally:
                p.kill()
                p.join()
    finally:
        _PARENT_STORE.clear()
        r.close()


def _refresh_in_child(conn) -> None:
    # The store inherited from the parent: moving its lock here must not
    # move the parent's.
    s = _PARENT_STORE[0]
    conn.send((s.refresh(), s.generation))
    conn.close()


def test_a_forked_child_moving_its_snapshot_leaves_the_parents_locked(tmp_path):
    with forked_after_a_drop(build(tmp_path / "s"), _refresh_in_child) as (r, w, gone, parent, p):
        assert parent.poll(60)
        refreshed, generation = parent.recv()
        p.join(60)
        assert p.exitcode == 0 and refreshed and generation == w.generation
        w["x"] = 1  # would remove L1's files if the parent's lock had moved
        assert gone in seg_files(tmp_path / "s")
        assert bale.thaw(r["1:2"])["i"] == 2


def test_a_damaged_freed_table_is_refused(tmp_path):
    from test_store import rewrite_record

    path = build(tmp_path / "s", labels=2)
    for freed, message in (([1, 2], "freed segments"), ({10**6: 1}, "freed segments"), ({1: 10**6}, "freed segments")):
        rewrite_record(path, lambda record, freed=freed: record.update(freed=freed))
        with pytest.raises(bale.FormatError, match=message):
            bale.Store(path, readonly=True)
    rewrite_record(path, lambda record: record.pop("freed"))
    with pytest.raises(bale.FormatError, match="lacks a field"):
        bale.Store(path, readonly=True)


def test_a_freed_segment_another_reader_needs_survives_a_writer_killed_after_its_commit(tmp_path):
    """The commit record names what waits for readers: a writer killed
    between its commit and removing files leaves them to the next one,
    which removes them only once no reader needs them."""
    path = build(tmp_path / "s")
    r = bale.Store(path, readonly=True)
    gone = segment_of(r, "6:0")
    code = f"""
import bale, os, signal
s = bale.Store({str(path)!r})
calls = []
def remove_freed():  # called as a batch begins, then right after its commit: killed there
    calls.append(1)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
s._remove_freed = remove_freed
s.drop("L6")
"""
    p = subprocess.run([sys.executable, "-c", code], timeout=120)
    assert p.returncode == -signal.SIGKILL
    with bale.Store(path) as w:
        assert "6:0" not in w and gone in seg_files(path)
        assert w._snap.freed  # named by the commit, waiting for r
        w["y"] = 2
        assert gone in seg_files(path)
        assert bale.thaw(r["6:4"])["i"] == 4
        r.close()
        w["z"] = 3
        assert gone not in seg_files(path) and not w._snap.freed
        assert w.verify()["values"] == 100 - 5 + 2


def _read_after_go(conn) -> None:
    r = _PARENT_STORE[0]
    conn.send("ready")
    conn.recv()  # the parent has moved on and a writer committed
    try:
        conn.send(bale.thaw(r["1:2"])["i"])
    except Exception as e:  # any error is the finding
        conn.send(f"{type(e).__name__}: {e}")
    conn.close()


def test_a_forked_childs_snapshot_stays_locked_when_the_parent_moves_on(tmp_path):
    path = tmp_path / "s"
    with forked_after_a_drop(build(path), _read_after_go) as (r, w, gone, parent, p):
        assert parent.recv() == "ready"
        assert r.refresh()
        w["x"] = 1
        kept = gone in seg_files(path)  # the child's snapshot still names it
        parent.send("go")
        assert parent.poll(60)
        assert (kept, parent.recv()) == (True, 2)
        p.join(60)
        assert p.exitcode == 0
        w["y"] = 2
        assert gone not in seg_files(path)


def oldest_reader(path) -> int | None:
    """The lowest generation an open store of any process holds, read as a
    writer reads it."""
    fd = os.open(os.path.join(path, _store.READERS_NAME), os.O_RDONLY)
    try:
        return bale._bale._oldest_reader(fd, 1 << 40)
    finally:
        os.close(fd)


def test_the_reader_table_names_each_open_stores_commit(tmp_path):
    from test_store import rewrite_record

    path = build(tmp_path / "s", labels=3)
    assert oldest_reader(path) is None  # nothing open
    r = bale.Store(path, readonly=True)
    g = r.generation
    assert oldest_reader(path) == g
    with bale.Store(path) as w:
        w.drop("L1")
        assert oldest_reader(path) == g  # the writer's own lock is at its new commit, above
        assert r.refresh() and oldest_reader(path) == g + 1
        w["x"] = 1
    # A refresh that fails on a damaged newer commit leaves the lock on the
    # commit the store still reads.
    rewrite_record(path, lambda record: record.update(count=record["count"] + 1))
    with pytest.raises(bale.FormatError, match="is not the sum"):
        r.refresh()
    assert r.generation == g + 1 and oldest_reader(path) == g + 1
    assert bale.thaw(r["2:0"])["label"] == 2
    r.close()
    assert oldest_reader(path) is None
