"""Regions over every buffer kind, exporter lifetime, and files (save/open)."""

import gc
import mmap
import os
import pathlib
import subprocess
import sys
import textwrap
from multiprocessing import shared_memory

import pytest

import bale
from _bale_testlib import assert_same

DATA = {
    "name": "hello world",
    "items": [1, 2.5, None, True, "x", b"bytes", (1, 2), {"nested": [1, 2, 3]}],
    "set": {1, 2, 3},
    "frozen": frozenset({"a", "b"}),
    "big": {f"k{i}": i for i in range(50)},
}
OTHER = ["a", "completely", "different", "value", 42]


@pytest.fixture(scope="module")
def raw():
    return bytes(bale.compact(DATA))


def _check(region, raw):
    assert isinstance(region, bale.Region)
    assert region.nbytes == len(raw)
    assert bytes(region) == raw
    assert region.root == DATA
    assert_same(DATA, bale.thaw(region.root))


# ---------------------------------------------------------------------------
# bytes / memoryview
# ---------------------------------------------------------------------------


def test_region_bytes_and_memoryview():
    region = bale.compact(DATA)
    raw = bytes(region)
    assert isinstance(region.nbytes, int)
    assert len(raw) == region.nbytes
    assert raw[:8] == b"BALE\r\n\x1a\n"
    mv = memoryview(region)
    assert mv.readonly is True
    assert mv.tobytes() == raw
    assert mv.nbytes == region.nbytes
    with pytest.raises(TypeError):
        mv[0] = 0
    mv.release()


def test_memoryview_of_loaded_region_is_read_only(raw):
    region = bale.load(bytearray(raw))
    mv = memoryview(region)
    assert mv.readonly is True
    assert mv.tobytes() == raw
    with pytest.raises(TypeError):
        mv[0] = 0
    mv.release()


# ---------------------------------------------------------------------------
# load over each buffer kind
# ---------------------------------------------------------------------------


def test_load_bytes(raw):
    _check(bale.load(raw), raw)
    _check(bale.load(raw, verify=True), raw)


def test_load_bytearray(raw):
    _check(bale.load(bytearray(raw)), raw)
    _check(bale.load(bytearray(raw), verify=True), raw)


def test_load_memoryview(raw):
    _check(bale.load(memoryview(raw)), raw)
    _check(bale.load(memoryview(bytearray(raw)), verify=True), raw)


def test_load_memoryview_slice_at_unaligned_addresses(raw):
    for shift in range(1, 9):
        backing = bytearray(b"\xaa" * shift + raw + b"\xbb" * 3)
        view = memoryview(backing)[shift : shift + len(raw)]
        region = bale.load(view, verify=True)
        _check(region, raw)
        del region, view


def test_load_anonymous_mmap(raw):
    m = mmap.mmap(-1, len(raw))
    m.write(raw)
    _check(bale.load(m), raw)
    _check(bale.load(m, verify=True), raw)


def test_load_file_mmap_read_only(tmp_path, raw):
    path = tmp_path / "r.bale"
    path.write_bytes(raw)
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    _check(bale.load(m, verify=True), raw)


def test_load_shared_memory(raw):
    shm = shared_memory.SharedMemory(create=True, size=len(raw))
    try:
        shm.buf[: len(raw)] = raw
        region = bale.load(shm.buf[: len(raw)], verify=True)
        _check(region, raw)
        # A second attachment by name sees the same region.
        other = shared_memory.SharedMemory(name=shm.name)
        region2 = bale.load(other.buf[: len(raw)])
        _check(region2, raw)
        del region, region2
        gc.collect()
        other.close()
    finally:
        gc.collect()
        shm.close()
        shm.unlink()


def test_load_numpy_uint8_array(raw):
    np = pytest.importorskip("numpy")
    arr = np.frombuffer(raw, dtype=np.uint8).copy()
    _check(bale.load(arr), raw)
    _check(bale.load(arr, verify=True), raw)
    ro = np.frombuffer(raw, dtype=np.uint8)
    assert not ro.flags.writeable
    _check(bale.load(ro), raw)


# ---------------------------------------------------------------------------
# No copy: the region reads the exporter's memory in place
# ---------------------------------------------------------------------------


def _patched_string_buffers():
    region = bale.compact(["hello world"])
    raw = bytes(region)
    pos = raw.index(b"hello world")
    return raw, pos


def test_load_bytearray_does_not_copy():
    raw, pos = _patched_string_buffers()
    buf = bytearray(raw)
    region = bale.load(buf)
    assert region.root[0] == "hello world"
    buf[pos] = ord("j")
    assert region.root[0] == "jello world"


def test_load_numpy_does_not_copy():
    np = pytest.importorskip("numpy")
    raw, pos = _patched_string_buffers()
    arr = np.frombuffer(raw, dtype=np.uint8).copy()
    region = bale.load(arr)
    arr[pos] = ord("j")
    assert region.root[0] == "jello world"


def test_load_mmap_does_not_copy():
    raw, pos = _patched_string_buffers()
    m = mmap.mmap(-1, len(raw))
    m.write(raw)
    region = bale.load(m)
    m[pos] = ord("j")
    assert region.root[0] == "jello world"


def test_load_shared_memory_does_not_copy():
    raw, pos = _patched_string_buffers()
    shm = shared_memory.SharedMemory(create=True, size=len(raw))
    try:
        shm.buf[: len(raw)] = raw
        region = bale.load(shm.buf[: len(raw)])
        shm.buf[pos] = ord("j")
        assert region.root[0] == "jello world"
        del region
    finally:
        gc.collect()
        shm.close()
        shm.unlink()


# ---------------------------------------------------------------------------
# Exporter lifetime
# ---------------------------------------------------------------------------


def test_view_keeps_bytearray_alive(raw):
    v = bale.load(bytearray(raw)).root
    gc.collect()
    junk = [bytearray(len(raw)) for _ in range(100)]  # reuse freed memory if it was freed
    assert v == DATA
    assert_same(DATA, bale.thaw(v))
    del junk


def test_nested_view_keeps_buffer_alive(raw):
    v = bale.load(bytearray(raw)).root["items"][7]["nested"]
    gc.collect()
    junk = [bytearray(len(raw)) for _ in range(100)]
    assert v == [1, 2, 3]
    del junk


def test_view_keeps_numpy_array_alive(raw):
    np = pytest.importorskip("numpy")
    v = bale.load(np.frombuffer(raw, dtype=np.uint8).copy()).root
    gc.collect()
    assert v == DATA


def test_view_keeps_mmap_alive(raw):
    m = mmap.mmap(-1, len(raw))
    m.write(raw)
    v = bale.load(m).root
    del m
    gc.collect()
    assert v == DATA


def test_view_keeps_memoryview_exporter_alive(raw):
    v = bale.load(memoryview(bytearray(raw))).root
    gc.collect()
    assert v == DATA


def test_view_keeps_compacted_region_alive():
    v = bale.compact(DATA).root["big"]
    gc.collect()
    junk = [bytearray(4096) for _ in range(100)]
    assert v == DATA["big"]
    del junk


def test_exported_bytearray_cannot_be_resized_while_region_lives(raw):
    buf = bytearray(raw)
    region = bale.load(buf)
    with pytest.raises(BufferError):
        buf.append(0)
    with pytest.raises(BufferError):
        buf.extend(b"\x00" * 8)
    view = region.root
    del region
    gc.collect()
    with pytest.raises(BufferError):
        buf.append(0)  # the view still holds the export
    assert view == DATA
    del view
    gc.collect()
    buf.append(0)  # released once nothing of the region is alive
    assert len(buf) == len(raw) + 1


def test_shared_memory_closes_after_region_is_gone(raw):
    shm = shared_memory.SharedMemory(create=True, size=len(raw))
    try:
        shm.buf[: len(raw)] = raw
        view = bale.load(shm.buf[: len(raw)]).root
        assert view == DATA
        del view
        gc.collect()
    finally:
        shm.close()  # raises BufferError if the region leaked its export
        shm.unlink()


# ---------------------------------------------------------------------------
# save / open
# ---------------------------------------------------------------------------


def test_save_and_open(tmp_path):
    region = bale.compact(DATA)
    path = tmp_path / "data.bale"
    assert region.save(path) is None
    assert os.listdir(tmp_path) == ["data.bale"]
    assert path.read_bytes() == bytes(region)
    opened = bale.open(path)
    _check(opened, bytes(region))
    _check(bale.open(path, verify=True), bytes(region))


def test_save_and_open_with_str_paths(tmp_path):
    region = bale.compact(DATA)
    path = str(tmp_path / "data.bale")
    region.save(path)
    _check(bale.open(path), bytes(region))


def test_save_and_open_with_a_custom_pathlike(tmp_path):
    class P:
        def __init__(self, p):
            self.p = p

        def __fspath__(self):
            return self.p

    region = bale.compact(DATA)
    path = P(str(tmp_path / "custom.bale"))
    region.save(path)
    assert os.listdir(tmp_path) == ["custom.bale"]
    _check(bale.open(path), bytes(region))


def test_save_over_an_existing_file_replaces_it(tmp_path):
    path = tmp_path / "data.bale"
    path.write_bytes(b"old content that is not a region")
    region = bale.compact(DATA)
    region.save(path)
    assert os.listdir(tmp_path) == ["data.bale"]
    assert path.read_bytes() == bytes(region)
    bale.compact(OTHER).save(path)
    assert os.listdir(tmp_path) == ["data.bale"]
    assert bale.open(path).root == OTHER


def test_save_of_an_opened_region_and_of_a_loaded_region(tmp_path):
    a = tmp_path / "a.bale"
    b = tmp_path / "b.bale"
    c = tmp_path / "c.bale"
    bale.compact(DATA).save(a)
    bale.open(a).save(b)
    bale.load(bytearray(a.read_bytes())).save(c)
    assert a.read_bytes() == b.read_bytes() == c.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["a.bale", "b.bale", "c.bale"]


def test_save_into_a_missing_directory_raises_and_leaves_nothing(tmp_path):
    region = bale.compact(DATA)
    with pytest.raises(OSError):
        region.save(tmp_path / "missing" / "data.bale")
    assert os.listdir(tmp_path) == []


def test_save_over_a_directory_fails_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "inside").write_bytes(b"keep me")
    region = bale.compact(DATA)
    with pytest.raises(OSError):
        region.save(target)
    assert os.listdir(tmp_path) == ["target"]
    assert os.listdir(target) == ["inside"]
    assert (target / "inside").read_bytes() == b"keep me"


def test_failed_write_leaves_the_original_file_and_no_temp_file(tmp_path):
    # The child may write at most 64 KiB per file (RLIMIT_FSIZE): saving a
    # bigger region fails mid-write, which must not touch the existing file.
    path = tmp_path / "data.bale"
    original = bytes(bale.compact(OTHER))
    path.write_bytes(original)
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        import bale
        region = bale.compact(["x" * 1000 for _ in range(1000)] + list(range(100000)))
        assert region.nbytes > 200000
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, hard))
        try:
            region.save({str(path)!r})
        except OSError as e:
            print("OSError", e)
            sys.exit(0)
        print("saved without error")
        sys.exit(3)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.listdir(tmp_path) == ["data.bale"]
    assert path.read_bytes() == original


def test_open_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        bale.open(tmp_path / "nope.bale")
    with pytest.raises(OSError):
        bale.open(str(tmp_path / "nope.bale"), verify=True)


def test_open_a_directory_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        bale.open(tmp_path)


def test_open_empty_and_garbage_files_raise_format_error(tmp_path):
    empty = tmp_path / "empty.bale"
    empty.write_bytes(b"")
    with pytest.raises(bale.FormatError):
        bale.open(empty)
    garbage = tmp_path / "garbage.bale"
    garbage.write_bytes(b"not a region at all" * 10)
    with pytest.raises(bale.FormatError):
        bale.open(garbage)
    truncated = tmp_path / "truncated.bale"
    truncated.write_bytes(bytes(bale.compact(DATA))[:-8])
    with pytest.raises(bale.FormatError):
        bale.open(truncated)


def test_open_verify_rejects_a_corrupted_file(tmp_path):
    raw = bytearray(bale.compact(DATA))
    pos = raw.index(b"hello world")
    raw[pos] = ord("j")
    path = tmp_path / "bad.bale"
    path.write_bytes(bytes(raw))
    assert bale.open(path).root["name"] == "jello world"
    with pytest.raises(bale.FormatError):
        bale.open(path, verify=True)
    with pytest.raises(bale.FormatError):
        bale.open(path).verify()


def test_opened_region_memoryview_is_read_only(tmp_path):
    path = tmp_path / "data.bale"
    bale.compact(DATA).save(path)
    region = bale.open(path)
    mv = memoryview(region)
    assert mv.readonly is True
    assert mv.tobytes() == path.read_bytes()
    mv.release()


def test_unlink_while_open(tmp_path):
    path = tmp_path / "data.bale"
    bale.compact(DATA).save(path)
    region = bale.open(path)
    root = region.root
    os.unlink(path)
    gc.collect()
    assert root == DATA
    assert_same(DATA, bale.thaw(region.root))
    region.verify()


def test_replace_while_open(tmp_path):
    path = tmp_path / "data.bale"
    other = tmp_path / "other.bale"
    bale.compact(DATA).save(path)
    region = bale.open(path)
    root = region.root
    bale.compact(OTHER).save(other)
    os.replace(other, path)
    assert root == DATA
    assert_same(DATA, bale.thaw(region.root))
    region.verify()
    assert bale.open(path).root == OTHER


def test_save_over_an_open_file(tmp_path):
    path = tmp_path / "data.bale"
    bale.compact(DATA).save(path)
    region = bale.open(path)
    bale.compact(OTHER).save(path)
    assert region.root == DATA
    assert bale.open(path).root == OTHER
    assert os.listdir(tmp_path) == ["data.bale"]


def test_view_keeps_opened_file_alive(tmp_path):
    path = tmp_path / "data.bale"
    bale.compact(DATA).save(path)
    v = bale.open(path).root["items"]
    os.unlink(path)
    gc.collect()
    assert v == DATA["items"]


def test_save_and_open_large_region(tmp_path):
    data = [{"id": i, "name": f"user{i}", "score": i / 7} for i in range(100_000)]
    region = bale.compact(data)
    path = tmp_path / "big.bale"
    region.save(path)
    opened = bale.open(pathlib.Path(path), verify=True)
    assert opened.nbytes == region.nbytes == path.stat().st_size
    assert opened.root[12345] == data[12345]
    assert opened.root == data
