"""Regions through a real local Ray cluster's object store."""

import pytest

import bale

ray = pytest.importorskip("ray")

DATA = [{"id": i, "name": f"user{i}", "tags": ["a", "b"][: i % 3]} for i in range(50_000)]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@ray.remote
def _total(region):
    return sum(r["id"] for r in region.root)


@ray.remote
def _make(n):
    return bale.compact([{"id": i} for i in range(n)])


@ray.remote
def _nbytes_in_worker(region):
    # The argument arrives as a region over the object store's memory.
    return type(region).__name__, region.nbytes


def test_put_get_round_trip(cluster):
    region = bale.compact(DATA)
    back = ray.get(ray.put(region))
    assert isinstance(back, bale.Region)
    assert bytes(back) == bytes(region)
    assert back.root[123] == DATA[123]


def test_regions_as_task_arguments_and_results(cluster):
    region = bale.compact(DATA)
    ref = ray.put(region)
    expected = sum(range(len(DATA)))
    assert ray.get(_total.remote(ref)) == expected
    assert ray.get(_total.remote(region)) == expected
    assert ray.get(_nbytes_in_worker.remote(ref)) == ("Region", region.nbytes)
    made = ray.get(_make.remote(1000))
    assert isinstance(made, bale.Region)
    assert made.root == [{"id": i} for i in range(1000)]


def test_views_travel_as_their_own_small_regions(cluster):
    region = bale.compact(DATA)
    record = ray.get(ray.put(region.root[777]))
    assert isinstance(record, bale.DictView)
    assert record == DATA[777]
