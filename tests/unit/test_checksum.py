"""A compacted region's checksum is written at the first read of its bytes
as bytes (Note [The checksum written late], crates/bale-python/src/storage.rs):
every such read must see the finished header, whichever comes first and
from however many threads."""

import pickle
import struct
import threading

import pytest

import bale
from bale import _bale

OFF_CHECKSUM = 32


def value():
    return {"s": ["x" * 1000, "é" * 300, "字" * 200], "n": list(range(100)), "t": (1.5, None, b"raw")}


def expected_checksum(raw: bytes) -> int:
    # FORMAT.md: XXH3-64 of the whole region, the checksum field taken as zero.
    return _bale._xxh3(raw[:OFF_CHECKSUM] + bytes(8) + raw[OFF_CHECKSUM + 8 :])


def checked(raw: bytes) -> bytes:
    (stored,) = struct.unpack_from("<Q", raw, OFF_CHECKSUM)
    assert stored != 0
    assert stored == expected_checksum(raw)
    bale.load(raw, verify=True)
    return raw


FIRST_READS = {
    "bytes": lambda r, tmp: bytes(r),
    "memoryview": lambda r, tmp: bytes(memoryview(r)),
    "save": lambda r, tmp: (r.save(tmp / "r.bale"), (tmp / "r.bale").read_bytes())[1],
    "pickle 5": lambda r, tmp: bytes(pickle.loads(pickle.dumps(r, protocol=5))),
    "pickle 2": lambda r, tmp: bytes(pickle.loads(pickle.dumps(r, protocol=2))),
    "span": lambda r, tmp: r._span(0, r.nbytes),
    "verify": lambda r, tmp: (r.verify(), bytes(r))[1],
    "load": lambda r, tmp: bytes(bale.load(r, verify=True)),
}


@pytest.mark.parametrize("first", sorted(FIRST_READS))
def test_the_checksum_is_written_at_the_first_read_as_bytes(first, tmp_path):
    region = bale.compact(value())
    raw = checked(FIRST_READS[first](region, tmp_path))
    # Every later read gives the same bytes.
    for name, read in FIRST_READS.items():
        assert read(region, tmp_path) == raw, name


def test_the_bytes_equal_those_of_a_region_summed_at_once():
    # Loading copies nothing and sums nothing: the loaded region's header is
    # the one the first read wrote, and verify recomputes it from scratch.
    region = bale.compact(value())
    raw = bytes(region)
    again = bale.load(bytearray(raw))
    again.verify()
    assert bytes(again) == raw


def test_many_threads_reading_a_fresh_region_as_bytes_see_one_header():
    for _ in range(20):
        region = bale.compact(value())
        seen = []
        start = threading.Barrier(8)

        def read():
            start.wait()
            seen.append(bytes(memoryview(region)))

        threads = [threading.Thread(target=read) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(set(seen)) == 1
        checked(seen[0])


def test_appends_and_their_base_each_have_their_own_finished_header():
    base = bale.compact(["a" * 500])
    grown = base.append({"more": "b" * 500})
    # The append read the base as it grew; neither has been read as bytes yet.
    checked(bytes(grown))
    checked(bytes(base))
    assert bale.load(bytes(grown)).root == {"more": "b" * 500}


def test_views_of_a_region_never_read_as_bytes_work_without_it():
    region = bale.compact(value())
    assert region.root["s"][1] == "é" * 300
    assert bale.thaw(region.root) == value()


def test_a_region_with_numpy_arrays_is_summed_late_too():
    np = pytest.importorskip("numpy")
    region = bale.compact({"a": np.arange(1000, dtype=np.float64)})
    checked(bytes(region))
    assert float(region.root["a"][999]) == 999.0
