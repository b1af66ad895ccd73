"""Regions on a real Dask cluster (worker processes on this machine)."""

import pickle

import pytest

import bale

distributed = pytest.importorskip("distributed")

DATA = [{"id": i, "name": f"user{i}", "tags": ["a", "b"][: i % 3]} for i in range(50_000)]


def _total(region):
    return sum(r["id"] for r in region.root)


def _make(n):
    return bale.compact([{"id": i} for i in range(n)])


def test_region_is_serialized_as_one_raw_frame_not_element_by_element():
    from distributed.protocol import deserialize, serialize

    region = bale.compact(DATA)
    header, frames = serialize(region, serializers=("dask", "pickle"))
    sizes = sorted(memoryview(f).nbytes for f in frames)
    # One frame is the region's memory itself; the rest is a few hundred bytes
    # of pickle opcodes. Pickling the records one by one would instead give a
    # large in-band pickle and no frame of the region's size.
    assert sizes[-1] == region.nbytes
    assert sum(sizes[:-1]) < 1024
    big = max(frames, key=lambda f: memoryview(f).nbytes)
    assert bytes(memoryview(big)) == bytes(region)
    assert memoryview(big).obj is region or getattr(memoryview(big).obj, "obj", None) is region
    back = deserialize(header, frames)
    assert isinstance(back, bale.Region) and back.root == DATA
    # What element-by-element pickling would have cost, for comparison.
    assert len(pickle.dumps(DATA, protocol=5)) > 100 * sum(sizes[:-1])


def test_scatter_submit_and_gather_on_a_local_cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None, silence_logs=50
    ) as cluster, Client(cluster) as client:
        region = bale.compact(DATA)
        [remote] = client.scatter([region])
        assert client.submit(_total, remote).result(timeout=120) == sum(range(len(DATA)))
        # Regions as task arguments and results, both ways.
        assert client.submit(_total, region).result(timeout=120) == sum(range(len(DATA)))
        made = client.submit(_make, 1000).result(timeout=120)
        assert isinstance(made, bale.Region)
        assert made.root == [{"id": i} for i in range(1000)]
        gathered = client.gather(remote)
        assert bytes(gathered) == bytes(region)
