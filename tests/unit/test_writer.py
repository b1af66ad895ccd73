"""bale.Writer: regions built on disk item by item."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import bale


def test_list_root_in_order_and_opens_verified(tmp_path):
    path = tmp_path / "list.bale"
    items = [{"id": i, "tags": ["a", "b"][: i % 3], "name": f"name {i}", "score": i / 3} for i in range(70_000)]
    with bale.Writer(path) as w:
        for it in items:
            w.append(it)
        assert len(w) == len(items)
    r = bale.open(path, verify=True)
    assert len(r.root) == 70_000  # more than a slot can count: the root is a LIST object
    assert bale.thaw(r.root) == items
    # Records with the same keys share one shape, as compact() would store them.
    stats = bale._bale.region_stats(r)
    assert stats["distinct_shapes"] == 1
    # Streamed records are stored as a table, as compact() stores a list of
    # them: smaller than the same records row by row (a tuple of records).
    assert "tables (lists of dicts, by column)" in stats["kinds"]
    assert r.nbytes <= bale.compact(tuple(items)).nbytes + 64


def test_dict_root_and_its_keys(tmp_path):
    path = tmp_path / "dict.bale"
    with bale.Writer(path) as w:
        for i in range(2000):
            w[f"key {i}"] = [i, {"v": i}]
        w[7] = "int key"
        w[(1, "t")] = None
        with pytest.raises(KeyError, match="already written"):
            w["key 5"] = 0
        with pytest.raises(KeyError):
            w[7.0] = "equal to 7"
        with pytest.raises(TypeError, match="root is a dict"):
            w.append(1)
    r = bale.open(path, verify=True)
    assert r.root["key 1999"] == [1999, {"v": 1999}]
    assert r.root[7] == "int key" and r.root[(1, "t")] is None
    assert len(r.root) == 2002


def test_empty_writer_makes_an_empty_list(tmp_path):
    path = tmp_path / "empty.bale"
    with bale.Writer(path):
        pass
    assert bale.open(path, verify=True).root == []


def test_leaving_by_an_exception_leaves_nothing(tmp_path):
    path = tmp_path / "partial.bale"
    with pytest.raises(RuntimeError):
        with bale.Writer(path) as w:
            w.append({"a": 1})
            raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []
    # An item that cannot be compacted: the error, and no file either.
    with pytest.raises(bale.CompactError, match="cannot compact function"):
        with bale.Writer(path) as w:
            w.append([1, lambda: 0])
    assert os.listdir(tmp_path) == []


def test_an_existing_file_is_replaced_only_on_success(tmp_path):
    path = tmp_path / "data.bale"
    bale.compact(["old"]).save(path)
    with pytest.raises(ValueError):
        with bale.Writer(path) as w:
            w.append("new")
            raise ValueError("stop")
    assert bale.open(path).root == ["old"]
    with bale.Writer(path) as w:
        w.append("new")
    assert bale.open(path).root == ["new"]


def test_abort_close_and_use_after(tmp_path):
    path = tmp_path / "a.bale"
    w = bale.Writer(path)
    w.append(1)
    w.abort()
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="aborted"):
        w.append(2)
    w = bale.Writer(path)
    w.append(1)
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.append(2)
    assert bale.open(path).root == [1]
    # A writer dropped without close leaves nothing.
    w = bale.Writer(tmp_path / "dropped.bale")
    w.append(1)
    del w
    assert sorted(os.listdir(tmp_path)) == ["a.bale"]


def test_views_of_other_regions_are_copied_in(tmp_path):
    src = bale.compact([{"x": i, "s": "shared string " * 3} for i in range(10)])
    path = tmp_path / "v.bale"
    with bale.Writer(path) as w:
        for rec in src.root:
            w.append(rec)
    assert bale.open(path, verify=True).root == src.root


def test_memory_stays_bounded_by_the_largest_item(tmp_path):
    # A ~40 MB JSON Lines file converted in a child process: its peak RSS
    # grows far less than the file (loading it whole would take several times it).
    src = tmp_path / "big.jsonl"
    line = {"id": 0, "tags": ["alpha", "beta", "gamma"], "text": "y" * 200, "nested": {"a": [1, 2, 3], "b": None}}
    with open(src, "w") as f:
        for i in range(130_000):
            line["id"] = i
            f.write(json.dumps(line) + "\n")
    size = src.stat().st_size
    assert size > 35_000_000
    code = textwrap.dedent(
        f"""
        import resource, sys
        import bale
        from bale import cli
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        cli.convert({str(src)!r}, {str(tmp_path / 'big.bale')!r}, None, False)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(base, peak)
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    base_kb, peak_kb = map(int, p.stdout.split())
    grew = (peak_kb - base_kb) * 1024
    assert grew < size / 4, f"peak RSS grew by {grew:,} bytes converting {size:,} bytes"
    r = bale.open(tmp_path / "big.bale", verify=True)
    assert len(r.root) == 130_000
    assert r.root[129_999]["id"] == 129_999 and r.root[0]["nested"] == {"a": [1, 2, 3], "b": None}


def test_a_failed_item_leaves_nothing_behind(tmp_path):
    """An item that cannot be compacted is not written, and nothing it made
    (a new dict shape) is referenced by the items after it."""
    path = tmp_path / "f.bale"
    with bale.Writer(path) as w:
        for i in range(3):
            w.append({"old": i})
            with pytest.raises(bale.CompactError):
                w.append({"fresh": object()})
            w.append({"fresh": i})
    region = bale.open(path, verify=True)
    assert bale.thaw(region.root) == [{"old": 0}, {"fresh": 0}, {"old": 1}, {"fresh": 1}, {"old": 2}, {"fresh": 2}]


def test_records_share_one_type_across_items(tmp_path):
    import dataclasses

    @dataclasses.dataclass
    class Row:
        a: int
        b: str

    path = tmp_path / "r.bale"
    with bale.Writer(path) as w:
        for i in range(100):
            w.append(Row(i, str(i)))
    region = bale.open(path, verify=True)
    assert region.types() == [(f"{__name__}.{Row.__qualname__}", "dataclass", ("a", "b"), 100)]
    assert bale.thaw(region.root, types=[Row]) == [Row(i, str(i)) for i in range(100)]
