"""Closing a region: the handle refuses new reads; what was taken keeps working.

`close()` (or leaving `with`) marks the handle closed: every read through it
raises `ValueError: region is closed`. Views, memoryviews and numpy arrays
taken before hold the handle, so they keep reading the same memory, and the
memory (here a file mapping, checked in /proc/self/maps) is released when the
handle and the last of them are gone.
"""

import gc
import pickle
import sys

import pytest

import bale

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")


def _mapped(path) -> bool:
    with open("/proc/self/maps") as f:
        return str(path) in f.read()


@pytest.fixture
def region_file(tmp_path):
    path = tmp_path / "data.bale"
    bale.compact({"rows": [{"a": i, "b": [i, "x"]} for i in range(10)], "nums": [1.5, 2.5], "t": (1, 2)}).save(path)
    return path


def _refusals(region):
    """Every way of reading through the handle itself."""
    return {
        "root": lambda: region.root,
        "memoryview": lambda: memoryview(region),
        "bytes": lambda: bytes(region),
        "save": lambda: region.save("/nonexistent-dir/never.bale"),
        "append": lambda: region.append([1]),
        "compacted": lambda: region.compacted(),
        "verify": lambda: region.verify(),
        "types": lambda: region.types(),
        "pickle": lambda: pickle.dumps(region, protocol=5),
        "pickle4": lambda: pickle.dumps(region, protocol=4),
        "thaw": lambda: bale.thaw(region),
        "to_json": lambda: bale.to_json(region),
        "load": lambda: bale.load(region),
        "stats": lambda: bale._bale.region_stats(region),
        "with": lambda: region.__enter__(),
    }


def test_a_closed_handle_refuses_every_read(region_file):
    region = bale.open(region_file)
    assert not region.closed
    region.close()
    assert region.closed
    for name, read in _refusals(region).items():
        with pytest.raises(ValueError, match="^region is closed$"):
            read()
        assert name
    # What needs no read still answers; closing twice is fine.
    assert region.nbytes == region_file.stat().st_size
    assert "closed" in repr(region)
    region.close()


def test_with_closes_and_views_taken_inside_keep_working(region_file):
    with bale.open(region_file) as region:
        root = region.root
        rows = root["rows"]
        row = rows[3]
        mv = memoryview(region)
        nums = memoryview(root["nums"])
    assert region.closed
    with pytest.raises(ValueError, match="region is closed"):
        region.root
    # Views read in place after the close, including new views made from them.
    assert row["b"] == [3, "x"]
    assert rows[9]["a"] == 9
    assert bale.thaw(root["t"]) == (1, 2)
    assert bale.to_json(rows[0]) == b'{"a":0,"b":[0,"x"]}'
    assert bytes(mv[:4]) == region_file.read_bytes()[:4]
    assert nums.tolist() == [1.5, 2.5]
    # A view of a closed handle can still be appended into another region (copied).
    other = bale.compact([0]).append({"copy": row})
    assert other.root["copy"]["b"] == [3, "x"]


def test_the_exception_still_propagates_and_closes(region_file):
    with pytest.raises(KeyError):
        with bale.open(region_file) as region:
            region.root["missing"]
    assert region.closed


@linux
def test_the_mapping_lives_until_the_last_view_is_gone(region_file):
    region = bale.open(region_file)
    row = region.root["rows"][2]
    mv = memoryview(region)
    region.close()
    del region
    gc.collect()
    assert _mapped(region_file)  # still read by the view and the memoryview
    del row
    gc.collect()
    assert _mapped(region_file)
    assert mv[0] == region_file.read_bytes()[0]
    mv.release()
    del mv
    gc.collect()
    assert not _mapped(region_file)


@linux
def test_closing_with_nothing_taken_releases_the_mapping_when_the_handle_goes(region_file):
    with bale.open(region_file) as region:
        assert region.root["rows"][0]["a"] == 0
    assert _mapped(region_file)  # the handle is still referenced by `region`
    del region
    gc.collect()
    assert not _mapped(region_file)


def test_numpy_arrays_keep_a_closed_region_alive(tmp_path):
    np = pytest.importorskip("numpy")
    path = tmp_path / "arr.bale"
    bale.compact({"w": np.arange(1000, dtype=np.float64)}).save(path)
    with bale.open(path) as region:
        w = region.root["w"]
    del region
    gc.collect()
    assert float(w.sum()) == float(np.arange(1000).sum())
    if sys.platform.startswith("linux"):
        assert _mapped(path)
        del w
        gc.collect()
        assert not _mapped(path)


def test_other_handles_on_the_same_memory_stay_open(region_file):
    region = bale.open(region_file)
    grown = region.append([1, 2])
    region.close()
    assert grown.root == [1, 2]
    assert not grown.closed
