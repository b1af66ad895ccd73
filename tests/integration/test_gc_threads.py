"""The cyclic GC does not see regions or views; views are safe to read from many threads."""

import gc
import sys
import threading

import pytest

import bale
from _bale_testlib import assert_same

NESTED = {
    "list": [1, [2, 3], {"a": 1}],
    "tuple": (1, (2, "x")),
    "dict": {"k": {"j": [1]}},
    "set": {1, 2, (3, 4)},
    "frozenset": frozenset({"a", frozenset({1})}),
}


def test_regions_are_not_tracked(tmp_path):
    region = bale.compact(NESTED)
    assert not gc.is_tracked(region)
    assert not gc.is_tracked(bale.load(bytes(region)))
    assert not gc.is_tracked(bale.load(bytearray(region), verify=True))
    path = tmp_path / "r.bale"
    region.save(path)
    assert not gc.is_tracked(bale.open(path))


def test_views_are_not_tracked():
    root = bale.compact(NESTED).root
    views = [root, root["list"], root["list"][1], root["list"][2], root["tuple"], root["tuple"][1], root["dict"], root["dict"]["k"], root["set"], root["frozenset"]]
    for v in views:
        assert isinstance(v, (bale.ListView, bale.NumberListView, bale.TupleView, bale.DictView, bale.SetView, bale.FrozenSetView))
        assert not gc.is_tracked(v), type(v).__name__
    for container in (root["list"], root["frozenset"], root["set"], root["tuple"]):
        for v in container:
            if isinstance(v, (bale.ListView, bale.TupleView, bale.DictView, bale.SetView, bale.FrozenSetView)):
                assert not gc.is_tracked(v), type(v).__name__
    for kind in ([1], (1,), {1: 2}, {1}, frozenset({1}), [], (), {}, set(), frozenset()):
        assert not gc.is_tracked(bale.compact(kind).root)


def test_regions_and_views_are_not_in_gc_objects():
    region = bale.compact(NESTED)
    root = region.root
    inner = root["list"]
    ids = {id(o) for o in gc.get_objects()}
    assert id(region) not in ids
    assert id(root) not in ids
    assert id(inner) not in ids


def test_compacting_a_million_objects_leaves_the_gc_object_count_unchanged():
    gc.collect()
    before = len(gc.get_objects())
    data = [[i] for i in range(1_000_000)]
    assert len(gc.get_objects()) >= before + 990_000  # the original is visible to the GC
    region = bale.compact(data)
    del data
    gc.collect()
    after_compact = len(gc.get_objects())
    root = region.root
    some = [root[i] for i in range(0, 1_000_000, 100_000)]  # views of inner lists
    gc.collect()
    after_views = len(gc.get_objects())
    # The region adds no objects for the GC to see. (The count may fall by
    # a few dozen: on 3.14, objects left by earlier tests can go meanwhile.)
    assert after_compact - before <= 10, (before, after_compact)
    assert after_views - before <= 12, (before, after_views)  # +1 for the `some` list
    assert after_compact > before - 1000, (before, after_compact)
    assert some[3] == [300_000]


def test_loaded_and_opened_regions_add_no_gc_objects(tmp_path):
    data = [{"id": i, "v": [i, i + 1]} for i in range(200_000)]
    raw = bytes(bale.compact(data))
    path = tmp_path / "big.bale"
    path.write_bytes(raw)
    del data
    gc.collect()
    before = len(gc.get_objects())
    loaded = bale.load(raw)
    opened = bale.open(path)
    roots = (loaded.root, opened.root)
    assert roots[0][123]["v"] == [123, 124]
    assert roots[1][-1]["id"] == 199_999
    gc.collect()
    assert abs(len(gc.get_objects()) - before) <= 10


# ---------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------

RECORDS = [
    {"id": i, "name": f"user{i}", "tags": ["a", "b", "c"][: i % 4], "score": i / 7, "pair": (i, str(i)), "flags": frozenset({i % 3, "x"})}
    for i in range(5000)
]
BIG = {"records": RECORDS, "index": {f"user{i}": i for i in range(5000)}, "ids": set(range(0, 10000, 2))}


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _run_threads(target, n=8):
    errors = []
    barrier = threading.Barrier(n)

    def wrapped(k):
        try:
            barrier.wait()
            target(k)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=wrapped, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_concurrent_reads_of_the_same_views(fast_switching):
    region = bale.compact(BIG)
    root = region.root
    records = root["records"]
    index = root["index"]
    ids = root["ids"]

    def reader(k):
        for rep in range(3):
            for i in range(k, 5000, 7):
                rec = records[i]
                want = RECORDS[i]
                assert rec["id"] == want["id"]
                assert rec["name"] == want["name"]
                assert list(rec["tags"]) == want["tags"]
                assert rec["pair"] == want["pair"]
                assert hash(rec["pair"]) == hash(want["pair"])
                assert rec["flags"] == want["flags"]
                assert index[want["name"]] == i
                assert (2 * i in ids) and (2 * i + 1 not in ids)
            assert len(records) == 5000
            assert records[-k - 1] == RECORDS[-k - 1]

    _run_threads(reader)


def test_concurrent_full_scans_thaw_and_repr(fast_switching):
    region = bale.compact(BIG)
    root = region.root
    expected_repr = repr(BIG["records"][:200])

    def scanner(k):
        for _ in range(2):
            total = sum(len(r["tags"]) for r in root["records"])
            assert total == sum(len(r["tags"]) for r in RECORDS)
            assert [bale.thaw(r) for r in root["records"][k * 100 : k * 100 + 100]] == RECORDS[k * 100 : k * 100 + 100]
            assert_same(RECORDS[k], bale.thaw(root["records"][k]))
            assert repr(root["records"][:200]) == expected_repr
            assert list(root["index"].items())[k] == (f"user{k}", k)
            assert root == BIG

    _run_threads(scanner, n=4)


def test_concurrent_view_creation_from_a_shared_parent(fast_switching):
    root = bale.compact([[i, str(i)] for i in range(2000)]).root

    def worker(k):
        for _ in range(5):
            views = [root[i] for i in range(2000)]
            for i, v in enumerate(views):
                assert v[0] == i and v[1] == str(i)
            del views

    _run_threads(worker)


def test_concurrent_compaction_and_loading(fast_switching):
    def worker(k):
        for j in range(20):
            value = {"k": k, "j": j, "data": [k * j, str(k), (j,)] * 50}
            region = bale.compact(value)
            again = bale.load(bytes(region), verify=True)
            assert again.root == value
            assert_same(value, bale.thaw(again.root))

    _run_threads(worker)
