"""Zero-copy access to stored bytes: `bale.memoryview_of(container, key)`.

Reading `view[key]` still gives a `bytes` copy (type and `==` unchanged);
`memoryview_of` gives a read-only memoryview over the region's own memory
(its address lies inside the region's buffer), which equals the bytes and
keeps the region's memory alive after every other reference is gone.
"""

import dataclasses
import gc
import sys

import pytest

import bale

np = pytest.importorskip("numpy")

BLOB = bytes(range(256)) * 40_000  # 10 MB


@dataclasses.dataclass
class Packet:
    name: str
    payload: bytes


def _address(buffer) -> int:
    return np.frombuffer(buffer, dtype=np.uint8).__array_interface__["data"][0]


def _inside(mv, region) -> bool:
    with memoryview(region) as whole:
        start = _address(whole)
        return start <= _address(mv) and _address(mv) + mv.nbytes <= start + whole.nbytes


@pytest.fixture
def region():
    return bale.compact({"blob": BLOB, "items": [b"x", 1, b""], "packet": Packet("p", b"abc"), "t": (b"t0", b"t1", 2)})


def test_reading_still_copies_into_bytes(region):
    value = region.root["blob"]
    assert type(value) is bytes and value == BLOB


def test_memoryview_of_reads_the_region_in_place(region):
    mv = bale.memoryview_of(region.root, "blob")
    assert isinstance(mv, memoryview)
    assert mv == BLOB and mv.tobytes() == BLOB
    assert mv.readonly and mv.format == "B" and mv.nbytes == len(BLOB)
    assert _inside(mv, region)
    assert mv[1000:1010] == BLOB[1000:1010]


def test_every_kind_of_container_and_the_root(region):
    assert bale.memoryview_of(region.root["items"], 0) == b"x"
    assert bale.memoryview_of(region.root["items"], -1) == b""
    assert bale.memoryview_of(region.root["t"], 1) == b"t1"
    assert bale.memoryview_of(region.root["packet"], "payload") == b"abc"
    assert bale.memoryview_of(region, "blob") == BLOB
    only = bale.compact(b"root bytes")
    mv = bale.memoryview_of(only)
    assert mv == b"root bytes" and _inside(mv, only)


def test_the_memoryview_is_read_only(region):
    mv = bale.memoryview_of(region.root, "blob")
    with pytest.raises(TypeError, match="read-only"):
        mv[0] = 1
    import ctypes

    with pytest.raises(TypeError, match="not writable"):
        ctypes.c_char.from_buffer(mv.obj)  # no writable buffer from the exporter either
    arr = np.frombuffer(mv, dtype=np.uint8)
    assert not arr.flags.writeable


def test_the_memoryview_keeps_the_region_alive(region, tmp_path):
    path = tmp_path / "blob.bale"
    region.save(path)
    with bale.open(path) as mapped:
        mv = bale.memoryview_of(mapped.root, "blob")
    del mapped
    gc.collect()
    assert mv == BLOB  # the handle is closed and gone; the memoryview still reads the mapping
    if sys.platform.startswith("linux"):
        with open("/proc/self/maps") as f:
            assert str(path) in f.read()
        part = mv[10:20]
        mv.release()
        del mv
        gc.collect()
        assert part == BLOB[10:20]  # a slice holds the exporter as well
        part.release()
        del part
        gc.collect()
        with open("/proc/self/maps") as f:
            assert str(path) not in f.read()


def test_what_is_not_stored_bytes_is_refused(region):
    with pytest.raises(TypeError, match="the value is a list, not bytes"):
        bale.memoryview_of(region.root, "items")
    with pytest.raises(TypeError, match="the value is an int, not bytes"):
        bale.memoryview_of(region.root["items"], 1)
    with pytest.raises(IndexError):
        bale.memoryview_of(region.root["items"], 3)
    with pytest.raises(KeyError):
        bale.memoryview_of(region.root, "missing")
    with pytest.raises(AttributeError, match="no field 'nope'"):
        bale.memoryview_of(region.root["packet"], "nope")
    with pytest.raises(TypeError, match="needs the key"):
        bale.memoryview_of(region.root)
    with pytest.raises(TypeError, match="takes a bale view or Region"):
        bale.memoryview_of(b"native", 0)
    region.close()
    with pytest.raises(ValueError, match="region is closed"):
        bale.memoryview_of(region, "blob")
