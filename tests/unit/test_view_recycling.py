"""Views recycled through free lists, and table columns kept decoded.

Freed views are kept for reuse (per class) and the decoded columns of tables
are cached by region handle. Neither may show: a held view keeps its value
while others are recycled, a recycled view no longer holds its region, and a
cached column never answers for another region, even one that reuses the
same memory.
"""

import gc
import os
import sys
import threading

import pytest

import bale


def records(n, seed):
    return [{"id": seed * 1000 + i, "tags": [f"t{seed}-{i}"] * (i % 3), "n": [i, seed]} for i in range(n)]


def test_rows_of_regions_that_reuse_memory_read_their_own_values():
    # Same sizes every round, so the allocator hands back the same memory:
    # a cache keyed by address would answer with the previous round's columns.
    for seed in range(40):
        data = records(50, seed)
        region = bale.compact(data)
        root = region.root
        assert [row["id"] for row in root] == [r["id"] for r in data]
        assert [list(row["tags"]) for row in root] == [r["tags"] for r in data]
        assert [list(row["n"]) for row in root] == [r["n"] for r in data]
        del region, root


def test_regions_with_tables_at_the_same_offsets_read_their_own_columns():
    # Same sizes and the same table offset, but the first column is long in
    # one region and short in the other: column descriptors cached for one
    # would read the other's bytes at the wrong places.
    a = [{"s": "x" * 40, "t": "y"} for _ in range(8)]
    b = [{"s": "y", "t": "x" * 40} for _ in range(8)]
    ra, rb = bale.compact(a), bale.compact(b)
    assert ra.nbytes == rb.nbytes
    for _ in range(2):
        assert [(row["s"], row["t"]) for row in ra.root] == [(r["s"], r["t"]) for r in a]
        assert [(row["s"], row["t"]) for row in rb.root] == [(r["s"], r["t"]) for r in b]


def test_rows_of_two_regions_read_alternately():
    a, b = records(30, 1), records(30, 2)
    ra, rb = bale.compact(a).root, bale.compact(b).root
    for i in range(30):
        assert ra[i]["tags"] == a[i]["tags"] and rb[i]["tags"] == b[i]["tags"]
        assert ra[i]["id"] == a[i]["id"] and rb[i]["id"] == b[i]["id"]


def test_handles_on_one_buffer_each_read_right():
    data = records(20, 3)
    blob = bytes(bale.compact(data))
    handles = [bale.load(blob) for _ in range(3)]
    for i in range(20):
        for h in handles:
            assert h.root[i]["n"] == data[i]["n"]


def test_held_views_keep_their_values_while_others_are_recycled():
    data = records(2000, 4)
    root = bale.compact(data).root
    held = [(i, row, row["tags"], row["n"]) for i, row in enumerate(root) if i % 97 == 0]
    for _ in range(3):
        assert sum(len(row["tags"]) for row in root) == sum(len(r["tags"]) for r in data)
    for i, row, tags, n in held:
        assert row == data[i] and tags == data[i]["tags"] and n == data[i]["n"]
        assert row["id"] == data[i]["id"]


def test_recycled_views_release_their_region():
    region = bale.compact(records(100, 5))
    baseline = sys.getrefcount(region)
    views = [row["tags"] for row in region.root] + list(region.root)
    assert sys.getrefcount(region) > baseline
    del views
    gc.collect()
    assert sys.getrefcount(region) == baseline


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads the process's mappings from /proc")
def test_a_mapped_file_is_unmapped_when_its_last_view_is_freed(tmp_path):
    path = tmp_path / "rows.bale"
    bale.compact(records(500, 6)).save(path)

    def mapped() -> bool:
        with open(f"/proc/{os.getpid()}/maps") as maps:
            return str(path) in maps.read()

    region = bale.open(path)
    total = sum(len(row["tags"]) for row in region.root)
    assert total == sum(len(r["tags"]) for r in records(500, 6))
    row = region.root[7]
    del region
    assert mapped()  # the row still holds it
    del row
    gc.collect()
    assert not mapped()


def test_views_made_and_freed_on_many_threads():
    data = records(3000, 7)
    root = bale.compact(data).root
    want = sum(len(r["tags"]) + r["id"] for r in data)
    results = []

    def scan():
        for _ in range(5):
            results.append(sum(len(row["tags"]) + row["id"] for row in root))

    threads = [threading.Thread(target=scan) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [want] * 20
