"""Many readers of one region: forked children and spawned workers.

Real processes, real /proc accounting: reading a region never writes to its
pages, so forked children do not copy them, and workers that map the same
file share one copy in the page cache.
"""

import gc
import multiprocessing
import os
import sys

import pytest

import bale
from bale._datagen import tweets

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _private_dirty_kb() -> int:
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1])
    raise AssertionError("no Private_Dirty in smaps_rollup")


def _read_every_record(root) -> int:
    total = 0
    for t in root:
        total += t["user_id"] & 1
        for h in t["hashtags"]:
            total += len(h)
        for u in t["urls"]:
            total += len(u)
    return total


@pytest.fixture(scope="module")
def big_region():
    records = tweets(3_700_000, seed=7)
    region = bale.compact(records)
    expected = _read_every_record(records)
    del records
    gc.collect()
    assert region.nbytes >= 200_000_000
    return region, expected


def test_forked_children_reading_every_record_do_not_copy_region_pages(big_region):
    region, expected = big_region
    root = region.root
    children = []
    for _ in range(4):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: measure around a full read, report, exit
            os.close(r)
            try:
                before = _private_dirty_kb()
                got = _read_every_record(root)
                grown = _private_dirty_kb() - before
                os.write(w, f"{got} {grown}".encode())
            finally:
                os._exit(0)
        os.close(w)
        children.append((pid, r))
    results = []
    for pid, r in children:
        with os.fdopen(r) as f:
            results.append(f.read())
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    limit_kb = region.nbytes * 0.05 / 1024
    for out in results:
        got, grown_kb = map(int, out.split())
        assert got == expected
        assert grown_kb < limit_kb, f"child dirtied {grown_kb} kB, limit {limit_kb:.0f} kB"


def _pss_of_mapping_kb(path: str) -> int:
    total = 0
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" not in fields[0]:
                inside = len(fields) >= 6 and fields[5] == path
            elif inside and fields[0] == "Pss:":
                total += int(fields[1])
    return total


def _scan_and_report(path, barrier, results):
    region = bale.open(path)
    # Every field: a table keeps each field in a column of its own.
    total = _read_every_record(region.root)
    barrier.wait()  # all four alive and mapped: PSS splits the shared pages
    results.put((total, _pss_of_mapping_kb(path)))
    barrier.wait()


def test_spawned_workers_opening_one_file_share_the_page_cache(tmp_path):
    region = bale.compact(tweets(600_000, seed=8))
    path = str(tmp_path / "shared.bale")
    region.save(path)
    expected = _read_every_record(region.root)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    results = ctx.Queue()
    workers = [ctx.Process(target=_scan_and_report, args=(path, barrier, results)) for _ in range(4)]
    for p in workers:
        p.start()
    got = [results.get(timeout=120) for _ in workers]
    for p in workers:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert all(total == expected for total, _ in got)
    total_pss_kb = sum(pss for _, pss in got)
    file_kb = os.path.getsize(path) / 1024
    # Four full scans, about one copy of the file in memory between them.
    assert total_pss_kb <= 1.25 * file_kb, (total_pss_kb, file_kb)
    assert total_pss_kb >= 0.5 * file_kb, (total_pss_kb, file_kb)
