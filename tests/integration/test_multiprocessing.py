"""Regions through multiprocessing and concurrent.futures, fork and spawn."""

import concurrent.futures
import multiprocessing

import pytest

import bale

DATA = [{"id": i, "tags": ["x", "y"][: i % 3], "score": i / 3} for i in range(5000)]
METHODS = ["fork", "spawn"]


def _total(region):
    return sum(r["id"] for r in region.root)


def _make(n):
    return bale.compact(list(range(n)))


def _echo_through_queue(q_in, q_out):
    region = q_in.get()
    q_out.put((sum(r["id"] for r in region.root), region))


@pytest.mark.parametrize("method", METHODS)
def test_queue_both_ways(method):
    ctx = multiprocessing.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_echo_through_queue, args=(q_in, q_out))
    p.start()
    region = bale.compact(DATA)
    q_in.put(region)
    total, back = q_out.get(timeout=60)
    p.join(timeout=60)
    assert p.exitcode == 0
    assert total == sum(range(len(DATA)))
    assert isinstance(back, bale.Region) and bytes(back) == bytes(region)


@pytest.mark.parametrize("method", METHODS)
def test_pool_map_arguments_and_results(method):
    ctx = multiprocessing.get_context(method)
    regions = [bale.compact(DATA[i::4]) for i in range(4)]
    with ctx.Pool(2) as pool:
        totals = pool.map(_total, regions)
        made = pool.map(_make, [1, 10, 100])
    assert sum(totals) == sum(range(len(DATA)))
    assert [bale.thaw(r.root) for r in made] == [list(range(n)) for n in (1, 10, 100)]


@pytest.mark.parametrize("method", METHODS)
def test_process_pool_executor(method):
    ctx = multiprocessing.get_context(method)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        total = ex.submit(_total, bale.compact(DATA)).result(timeout=60)
        view_total = ex.submit(_total, bale.compact(bale.compact(DATA).root[:100])).result(timeout=60)
        made = ex.submit(_make, 1000).result(timeout=60)
    assert total == sum(range(len(DATA)))
    assert view_total == sum(range(100))
    assert bale.thaw(made.root) == list(range(1000))
