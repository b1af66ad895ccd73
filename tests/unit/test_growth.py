"""Growing regions: append with sharing (CNF's SHORTCUT), region_of,
compacted(), and the promise that growth never moves or changes bytes."""

import gc
import os
import pickle
import threading

import pytest

import bale

# ---------------------------------------------------------------------------
# The sharing examples of the CNF paper
# ---------------------------------------------------------------------------


def test_appending_into_the_same_region_shares_the_tail():
    r1 = bale.compact([3, 2, 1])
    before = r1.nbytes
    r2 = r1.append((4, r1.root))  # 4 : r1
    assert r2.root == (4, [3, 2, 1])
    # One 2-slot tuple: the list is referenced where it is.
    assert r2.nbytes - before == 16
    assert r2.nbytes < 2 * before


def test_appending_into_a_different_region_copies():
    r1 = bale.compact(list(range(100, 200)))
    other = bale.compact(0)
    r3 = other.append((4, r1.root))
    assert r3.root == (4, list(range(100, 200)))
    assert r3.nbytes - other.nbytes >= 8 * 100  # the list was copied
    assert bale.region_of(r3.root[1]) is not None
    # The copy lives in r3's region: it survives r1.
    del r1
    gc.collect()
    assert r3.root[1][99] == 199


def test_a_non_compact_shared_subgraph_is_duplicated_by_default_and_shared_on_request():
    x = list(range(200))
    plain = bale.compact([x, x])
    shared = bale.compact([x, x], share=True)
    assert plain.nbytes > shared.nbytes + 8 * 150
    a, b = bale.thaw(plain.root)
    assert a == b and a is not b
    a, b = bale.thaw(shared.root)
    assert a == b and a is b


def test_append_share_true_preserves_identity_in_the_appended_value():
    r = bale.compact(None)
    x = {"k": [1, 2]}
    g = r.append([x, x, x], share=True)
    t = bale.thaw(g.root)
    assert t[0] is t[1] is t[2]
    g_plain = r.append([x, x, x])
    t = bale.thaw(g_plain.root)
    assert t[0] == t[1] and t[0] is not t[1]


# ---------------------------------------------------------------------------
# region_of
# ---------------------------------------------------------------------------


def test_region_of_views_and_natives():
    r = bale.compact({"a": [1, "x", {"b": (3, "y")}], "s": {1, 2}, "f": frozenset({3}), "p": (3, 4)})
    root = r.root
    end = r.nbytes
    # A 2-tuple of small ints is a value held in its slot, like an int.
    assert type(root["p"]) is tuple and bale.region_of(root["p"]) is None
    for view in (root, root["a"], root["a"][2], root["a"][2]["b"], root["s"], root["f"]):
        h = bale.region_of(view)
        assert isinstance(h, bale.Region)
        assert h.root == view
        assert type(h.root) is type(view)
        assert h.nbytes == r.nbytes
        # The handle is on the same memory: appending through it references
        # in place, adding a one-slot list only.
        grown = h.append([h.root])
        assert grown.nbytes - end == 8
        end = grown.nbytes
    for native in (None, 1, "x", [1], {"a": 1}, (1,), r, b"bytes"):
        assert bale.region_of(native) is None


def test_region_of_a_handle_exports_a_region_rooted_there():
    r = bale.compact({"records": tuple({"id": i} for i in range(10))})
    h = bale.region_of(r.root["records"][7])
    again = bale.load(bytes(h), verify=True)
    assert again.root == {"id": 7}
    assert again.nbytes == r.nbytes


def test_region_of_a_table_row_roots_a_copy_in_the_same_region():
    # A list of records is a table: a row has no place of its own, so its
    # handle is rooted at a copy appended to the region.
    r = bale.compact({"records": [{"id": i, "tags": ["a"] * (i % 3)} for i in range(10)]})
    h = bale.region_of(r.root["records"][7])
    assert h.root == {"id": 7, "tags": ["a"]}
    assert bale.region_of(h.root) is not None
    again = bale.load(bytes(h), verify=True)
    assert again.root == {"id": 7, "tags": ["a"]}
    assert again.nbytes > r.nbytes
    assert r.root == {"records": [{"id": i, "tags": ["a"] * (i % 3)} for i in range(10)]}
    slice_handle = bale.region_of(r.root["records"][8]["tags"])
    assert slice_handle.root == ["a", "a"]


def test_region_of_values_appended():
    r = bale.compact([1, 2])
    g = r.append({"new": [9, 9], "old": r.root})
    assert bale.region_of(g.root["new"]).root == [9, 9]
    assert bale.region_of(g.root["old"]).root == [1, 2]
    # Both lead to the same lineage: appending one into the other shares.
    h = bale.region_of(g.root["new"])
    g2 = h.append((g.root["old"], g.root["new"]))
    assert g2.nbytes - g.nbytes == 16


def test_views_of_several_regions_mixed_in_one_append():
    a = bale.compact({"name": "region a", "items": list(range(50))})
    b = bale.compact([("b", i) for i in range(20)])
    c = bale.compact({"set": {1, 2, 3}, "fs": frozenset({"x"}), "big": 2**100, "f": 1.5, "by": b"xy"})
    target = bale.compact({"target": True})
    mixed = target.append({"a": a.root, "b_part": b.root[5], "c": c.root, "mine": target.root, "n": [a.root["items"], 7]})
    assert mixed.root["a"] == {"name": "region a", "items": list(range(50))}
    assert mixed.root["b_part"] == ("b", 5)
    assert mixed.root["c"] == {"set": {1, 2, 3}, "fs": frozenset({"x"}), "big": 2**100, "f": 1.5, "by": b"xy"}
    assert mixed.root["mine"] == {"target": True}
    assert bale.thaw(mixed.root) == {
        "a": bale.thaw(a.root),
        "b_part": ("b", 5),
        "c": bale.thaw(c.root),
        "mine": {"target": True},
        "n": [list(range(50)), 7],
    }
    del a, b, c
    gc.collect()
    assert bale.load(bytes(mixed), verify=True).root["n"][0][49] == 49


def test_copies_from_another_region_store_shapes_once():
    src = bale.compact([{"user_id": i, "name": f"user {i}"} for i in range(1000)])
    target = bale.compact(None)
    one_by_one = target.append([src.root[i] for i in range(1000)])
    # A tuple of the row views: each row copied as a dict, like one_by_one
    # (appending src.root itself copies the table, column by column).
    whole = bale.compact(None).append(tuple(src.root))
    # Each record is copied natively; the shape is copied once, not per record.
    assert abs(one_by_one.nbytes - whole.nbytes) < 64
    assert one_by_one.root == src.root


def test_appends_one_by_one_write_each_dict_shape_and_record_type_once():
    """Later appends refer to the shapes and record types earlier appends of
    the lineage wrote (a store puts its values one append each)."""
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Point:
        x: int
        y: int

    h = bale.compact(None)
    first = h.append({"user_id": 1, "name": "a", "tags": ["x"], "at": Point(1, 2)})
    size_first = first.nbytes - h.nbytes
    handles = [first]
    for i in range(2, 50):
        handles.append(handles[-1].append({"user_id": i, "name": "b", "tags": ["y"], "at": Point(i, i)}))
    size_later = handles[-1].nbytes - handles[-2].nbytes
    # The shape (5 slots + its hash index) and the type descriptor are not
    # written again: only the dict, the list, the record and their slots.
    assert size_later < size_first - 48, (size_first, size_later)
    for i, g in enumerate(handles, start=1):
        assert g.root == {"user_id": i, "name": "a" if i == 1 else "b", "tags": ["x" if i == 1 else "y"],
                          "at": Point(i, 2 if i == 1 else i)}
    whole = bale.load(bytes(handles[-1]), verify=True)
    assert bale.thaw(whole.root) == bale.thaw(handles[-1].root)
    # Another lineage (a fresh region) has its own memo: nothing is shared.
    other = bale.compact(None).append({"user_id": 1, "name": "a", "tags": ["x"], "at": Point(1, 2)})
    assert other.nbytes - bale.compact(None).nbytes == size_first


def test_a_failed_append_leaves_no_shape_behind_for_later_appends():
    """The shape made by an append that fails is not in the bytes: a later
    append with the same keys must write it, not refer to where the failed
    one would have put it."""
    h = bale.compact([0])
    with pytest.raises(bale.CompactError):
        h.append({"k1": 1, "k2": 2, "k3": [1, lambda: 0]})
    # Bytes of other shapes and strings now take the place the failed append built at.
    g = h.append(["filler string number one", "filler two", {"z": 1, "w": 2}])
    g2 = g.append({"k1": 10, "k2": 20, "k3": [30]})
    assert g2.root == {"k1": 10, "k2": 20, "k3": [30]}
    assert bale.load(bytes(g2), verify=True).root == {"k1": 10, "k2": 20, "k3": [30]}
    assert list(g2.root.keys()) == ["k1", "k2", "k3"]
    assert g2.root["k2"] == 20 and "k3" in g2.root and "z" not in g2.root


def test_compact_of_a_view_copies_natively_and_equally():
    src = bale.compact({"k": [1, "two", 3.0, (4,), {5}, frozenset({6}), None, True, 2**80, b"\x00"]})
    again = bale.compact(src.root["k"])
    assert again.root == src.root["k"]
    assert bale.thaw(again.root) == bale.thaw(src.root["k"])


# ---------------------------------------------------------------------------
# Growth without moving
# ---------------------------------------------------------------------------


def test_views_and_buffers_taken_before_thousands_of_appends_stay_valid():
    r0 = bale.compact({"records": [{"id": i, "tags": ["a", "b"]} for i in range(100)]})
    view = r0.root["records"][42]
    mv = memoryview(r0)
    raw = bytes(mv)
    buffers = []
    pickled = pickle.dumps(r0, protocol=5, buffer_callback=buffers.append)
    handles = [r0]
    r = r0
    for i in range(3000):
        r = r.append((i, "an appended string that is long enough", r.root if i % 2 else view))
        if i % 500 == 0:
            handles.append(r)
    assert view == {"id": 42, "tags": ["a", "b"]}
    assert bytes(mv) == raw
    assert bale.load(mv, verify=True).root["records"][42] == view
    assert pickle.loads(pickled, buffers=buffers).root == r0.root
    for h in handles:
        h.verify()
        assert bale.load(bytes(h), verify=True).root == h.root
    assert r.root[0] == 2999


def test_growth_past_the_first_reservation_keeps_old_views():
    # Enough data to need more than one reservation (the first is 64 MiB).
    r = bale.compact([0])
    first = r.root
    chunk = "x" * 1_000_000
    views = []
    for i in range(150):
        r = r.append((i, chunk + str(i)))
        views.append(r.root)
    assert r.nbytes > 140_000_000
    assert first == [0]
    assert [v[0] for v in views] == list(range(150))
    assert views[3][1].endswith("x3")


def test_appended_regions_survive_bytes_load_save_open(tmp_path):
    r = bale.compact({"base": list(range(10))})
    g = r.append({"n": 1, "base": r.root, "again": r.root["base"]})
    g.verify()
    wire = bytes(g)
    assert len(wire) == g.nbytes
    loaded = bale.load(wire, verify=True)
    assert loaded.root == g.root == {"n": 1, "base": {"base": list(range(10))}, "again": list(range(10))}
    path = tmp_path / "grown.bale"
    g.save(path)
    assert path.read_bytes() == wire
    opened = bale.open(path, verify=True)
    assert opened.root == g.root
    assert bytes(memoryview(g)) == wire
    assert pickle.loads(pickle.dumps(g, protocol=5)).root == g.root
    assert pickle.loads(pickle.dumps(g, protocol=2)).root == g.root


def test_appends_to_a_loaded_region_leave_its_buffer_unchanged():
    src = bytes(bale.compact([{"a": i} for i in range(100)]))
    buf = bytearray(src)
    r = bale.load(buf)
    g = r.append((r.root[5], "new"))
    g2 = g.append([g.root, r.root[7]])
    assert bytes(buf) == src
    assert g2.root == [({"a": 5}, "new"), {"a": 7}]
    assert bale.load(bytes(g2), verify=True).root == g2.root
    assert r.root[99] == {"a": 99}


def test_appends_to_an_opened_file_never_write_the_file(tmp_path):
    path = tmp_path / "data.bale"
    bale.compact({"rows": [[i, str(i)] for i in range(1000)]}).save(path)
    before = path.read_bytes()
    mtime = os.stat(path).st_mtime_ns
    r = bale.open(path)
    g = r.root
    grown = r
    for i in range(100):
        grown = grown.append({"i": i, "row": g["rows"][i], "prev": grown.root})
    assert path.read_bytes() == before
    assert os.stat(path).st_mtime_ns == mtime
    assert grown.root["row"] == [99, "99"]
    out = tmp_path / "grown.bale"
    grown.save(out)
    again = bale.open(out, verify=True)
    assert again.root["prev"]["prev"]["i"] == 97
    assert again.root["prev"]["row"] == [98, "98"]


def test_branching_appends_from_one_handle():
    r = bale.compact([1])
    a = r.append(("a", r.root))
    b = r.append(("b", r.root))
    c = a.append(("c", a.root, b.root))
    assert a.root == ("a", [1]) and b.root == ("b", [1])
    assert c.root == ("c", ("a", [1]), ("b", [1]))
    assert bale.load(bytes(c), verify=True).root == c.root
    assert bale.load(bytes(a), verify=True).root == a.root


def test_readers_in_other_threads_during_appends():
    r = bale.compact({"records": [{"id": i, "name": f"n{i}"} for i in range(2000)]})
    root = r.root
    stop = threading.Event()
    errors = []

    def read():
        try:
            while not stop.is_set():
                for i in range(0, 2000, 97):
                    rec = root["records"][i]
                    if rec["id"] != i or rec["name"] != f"n{i}":
                        errors.append((i, bale.thaw(rec)))
                h = bale.region_of(root)
                h.verify()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    grown = r
    seen = []
    for i in range(2000):
        grown = grown.append((i, root["records"][i % 2000], grown.root))
        seen.append(grown)
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    assert seen[-1].root[1] == {"id": 1999, "name": "n1999"}
    seen[-1].verify()


def test_many_functional_updates_use_linear_space():
    # A persistent list (cons cells) and a persistent map (path copying).
    r = bale.compact(None)
    n = 100_000
    for i in range(n):
        r = r.append((i, r.root))
    per_update = (r.nbytes - 64) / n
    assert per_update <= 24  # a 2-slot tuple (an int inline): 16 bytes
    node = r.root
    for expect in range(n - 1, n - 50, -1):
        assert node[0] == expect
        node = node[1]

    t = bale.compact((None, 0, None))  # a binary search tree of (left, key, right)

    def insert(tree_region, key):
        # Rebuild the path to the new leaf; everything off the path is shared.
        path = []
        node = tree_region.root
        while node is not None:
            path.append(node)
            node = node[0] if key < node[1] else node[2]
        new = (None, key, None)
        for parent in reversed(path):
            new = (new, parent[1], parent[2]) if key < parent[1] else (parent[0], parent[1], new)
        return tree_region.append(new)

    import random

    rng = random.Random(7)
    keys = rng.sample(range(1, 10**9), 5000)
    for k in keys:
        t = insert(t, k)
    # Path copying costs O(depth) per update: with random keys ~ 2 ln(n) + c.
    assert (t.nbytes - 64) / len(keys) < 24 * 40
    found = []
    stack = [t.root]
    while stack:
        node = stack.pop()
        if node is not None:
            found.append(node[1])
            stack.append(node[0])
            stack.append(node[2])
    assert sorted(found) == sorted(keys + [0])


# ---------------------------------------------------------------------------
# compacted()
# ---------------------------------------------------------------------------


def test_compacted_reclaims_what_the_root_no_longer_reaches():
    r = bale.compact({"version": 0, "payload": "p" * 1000})
    for v in range(1, 200):
        r = r.append({"version": v, "payload": "p" * 1000 + str(v)})
    assert r.nbytes > 200 * 1000
    c = r.compacted()
    assert c.nbytes < 1200
    assert c.root == r.root == {"version": 199, "payload": "p" * 1000 + "199"}
    c.verify()
    assert bale.region_of(c.root) is not None


def test_compacted_keeps_sharing_and_cycles():
    x = [1, 2, 3]
    r = bale.compact([x, x], share=True)
    c = r.compacted()
    a, b = bale.thaw(c.root)
    assert a is b
    loop = []
    loop.append(loop)
    r = bale.compact({"loop": loop}, share=True)
    c = r.compacted()
    c.verify()
    t = bale.thaw(c.root)
    assert t["loop"][0] is t["loop"]
    # A grown region whose new root references old data twice.
    base = bale.compact(list(range(30)))
    g = base.append([base.root, base.root])
    c = g.compacted()
    assert c.nbytes == g.nbytes  # everything is reachable, and stays shared
    assert c.root == [list(range(30))] * 2
    a, b = bale.thaw(c.root)
    assert a is b
    c.verify()


def test_compacted_of_a_plain_region_is_an_equal_copy():
    data = {"rows": [{"a": i, "b": [str(i)] * 3, "c": {i: (i, float(i))}} for i in range(300)], "s": {1, 2}}
    r = bale.compact(data)
    c = r.compacted()
    assert c.nbytes == r.nbytes
    assert bale.thaw(c.root) == data
    assert bytes(c)[64:] == bytes(r)[64:]


def test_compacted_stores_a_shared_key_string_once():
    # '\x80' is one object in CPython (a Latin-1 singleton): the compactor
    # stores it once; the copy used to store it again for each key and
    # element it sits in (found by a property test, `test_roundtrip.py`).
    s = "\x80" + ""
    for value in ({s: None, (s,): None}, {s, (s,), frozenset({s})}, [{s: 1}, {(s, s): 2}]):
        r = bale.compact(value)
        c = r.compacted()
        assert bytes(c)[64:] == bytes(r)[64:], value
        assert bale.thaw(c.root) == value


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def test_append_errors_name_the_path_and_leave_the_region_usable():
    r = bale.compact([1, 2])
    def callback():
        pass

    with pytest.raises(bale.CompactError, match=r"root\['bad'\]\[1\]: cannot compact function"):
        r.append({"bad": [1, callback]})
    g = r.append([r.root, 3])
    assert g.root == [[1, 2], 3]
    assert bale.load(bytes(g), verify=True).root == g.root
    loop = []
    loop.append(loop)
    with pytest.raises(bale.CompactError, match="cycle"):
        r.append(loop)


def test_append_of_a_scalar_and_of_the_root_itself():
    r = bale.compact({"a": 1})
    assert r.append(5).root == 5
    same = r.append(r.root)
    assert same.root == {"a": 1}
    assert same.nbytes == r.nbytes  # nothing new was written


def test_empty_lists_in_a_grown_region_thaw_apart():
    r = bale.compact([[], [], {}])
    g = r.append([r.root, [], []])
    t = bale.thaw(g.root)
    assert t == [[[], [], {}], [], []]
    assert t[0][0] is not t[0][1] and t[1] is not t[2]
    t[1].append(1)
    assert t[2] == [] and t[0][0] == []


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_first_append_to_an_opened_file_does_not_read_it(tmp_path):
    # The file is mapped again at the start of the new memory instead of
    # being copied: appending touches a page or two, not the whole file.
    path = tmp_path / "big.bale"
    bale.compact([("row %d" % i) * 3 for i in range(900_000)]).save(path)
    size = os.path.getsize(path)
    assert size > 30_000_000
    r = bale.open(path)
    before = _rss_bytes()
    g = r.append(("new", r.root))
    g = g.append(("newer", g.root))
    grew = _rss_bytes() - before
    assert grew < size / 10, f"RSS grew by {grew} bytes for a {size}-byte file"
    assert g.root[1][1][899_999] == "row 899999" * 3
    assert g.root[0] == "newer" and g.root[1][0] == "new"
    assert bale.load(bytes(g), verify=True).root[1][1][0] == "row 0" * 3


def test_appends_into_the_spare_capacity_of_a_large_compacted_region():
    # A region of 128 KiB or more keeps its allocation's spare capacity and
    # appends go there: the bytes they write must count as readable (a
    # debug build asserted otherwise in Storage::prefix).
    records = [{"a": i, "b": str(i) * 10} for i in range(10_000)]
    r = bale.compact(records)
    assert r.nbytes >= 128 << 10
    grown = r.append([r.root[3], "x" * 100])
    assert grown.root == [records[3], "x" * 100]
    assert bale.load(bytes(grown), verify=True).root == [records[3], "x" * 100]
    row = bale.region_of(r.root[5])  # a table row: rooted at a copy appended to the region
    assert row.root == records[5]
    assert bale.region_of(grown.root[0]).root == records[3]
    assert r.root[9_999] == records[9_999]


class _Blocker:
    """A record whose `get=` callback runs while an append is in progress."""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_another_thread_appends_leaves_the_child_free_to_append():
    # Every fork below happens while the other thread is inside append()
    # (in its callback, which waits for the fork): the child has no such
    # thread, so its appends must not be refused as overlapping.
    import queue

    entered, go = queue.Queue(), queue.Queue()

    def get(obj):
        entered.put(None)
        go.get()
        return (1,)

    bale.register(_Blocker, ["x"], get=get)
    base = bale.compact(list(range(100)))
    stop = threading.Event()
    failures = []

    def appender():
        while not stop.is_set():
            try:
                base.append([base.root, _Blocker()])
            except Exception as e:  # pragma: no cover - reported below
                failures.append(e)
                return

    t = threading.Thread(target=appender)
    t.start()
    codes = []
    try:
        for _ in range(40):
            entered.get(timeout=60)
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    a = base.append([base.root, "child"])
                    b = a.append((a.root, 2))
                    code = 0 if b.root == ([list(range(100)), "child"], 2) else 2
                finally:
                    os._exit(code)
            codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
            go.put(None)
    finally:
        stop.set()
        while t.is_alive():
            go.put(None)
            t.join(1)
    assert failures == []
    assert codes == [0] * 40
    # The parent's appends are unaffected.
    assert base.append("after").root == "after"


class _Forker:
    """A record whose `get=` callback forks in the middle of an append."""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_an_append_taken_over_after_a_fork_in_its_callback_appends_nothing():
    # The child of a fork made inside append() continues that append; an
    # append the child starts meanwhile takes the region over, and the
    # first append then fails cleanly instead of writing over its bytes.
    base = bale.compact(list(range(10)))
    state = {}

    def get(obj):
        pid = os.fork()
        if pid == 0:
            state["inner"] = base.append(["inner", base.root])
        else:
            state["pid"] = pid
        return (1,)

    bale.register(_Forker, ["x"], get=get)
    try:
        outer = base.append([_Forker()])
    except RuntimeError as e:
        code = 0 if "inner" in state and "appended to while this append ran" in str(e) else 3
        code = code or (0 if state["inner"].root == ["inner", list(range(10))] else 4)
        os._exit(code if "pid" not in state else 5)
    except BaseException:
        if "pid" not in state:
            os._exit(6)
        raise
    if "pid" not in state:
        os._exit(7)  # the child's outer append must not succeed
    assert outer.root[0].x == 1
    assert os.waitstatus_to_exitcode(os.waitpid(state["pid"], 0)[1]) == 0
