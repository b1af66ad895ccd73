"""Issue 20, items 1 and 2: streamed records are stored as tables (as
``compact`` stores a list of records), and ``bale convert`` of a ``.json``
file streams its top-level array or object element by element."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import bale
from bale._datagen import tweets


def kinds(path):
    return bale._bale.region_stats(bale.open(path), top=1)["kinds"]


def streamed(path, items):
    with bale.Writer(path) as w:
        for it in items:
            w.append(it)
        assert len(w) == len(items)
    return bale.open(path, verify=True)


def test_streamed_tweets_are_a_table_within_15_percent_of_compact(tmp_path):
    recs = tweets(100_000)
    r = streamed(tmp_path / "w.bale", recs)
    compact_bytes = bale.compact(recs).nbytes
    assert r.nbytes <= 1.15 * compact_bytes, (r.nbytes, compact_bytes)
    assert "tables (lists of dicts, by column)" in kinds(tmp_path / "w.bale")
    # One flat list of records.
    assert len(r.root) == 100_000
    assert r.root[99_999] == recs[99_999] and r.root[-1]["user_id"] == recs[-1]["user_id"]
    assert bale.thaw(r.root) == recs


@pytest.mark.parametrize(
    "items",
    [
        # Columns of several kinds: None with strs, ints with floats, bools.
        [{"a": [None, "x", 1, 2.5, True][i % 5], "b": i} for i in range(50)],
        # Strings of every width, empty ones, in one column and in lists.
        [{"s": ["", "ascii", "é", "€uro", "\U0001f600", "a" * 70_000][i % 6], "l": [["", "é"], [], ["\U0001f600", "x"]][i % 3]} for i in range(30)],
        # Lists whose items change kind; empty lists only.
        [{"l": [[1, 2], [3.5], [], ["s", None]][i % 4], "e": []} for i in range(20)],
        # Extreme numbers, NaN and -0.0 kept as they are.
        [{"i": [-(2**63), 2**63 - 1, 0][i % 3], "f": [float("inf"), -0.0, 1e308][i % 3]} for i in range(9)],
    ],
)
def test_streamed_columns_round_trip(tmp_path, items):
    r = streamed(tmp_path / "t.bale", items)
    assert "tables (lists of dicts, by column)" in kinds(tmp_path / "t.bale")
    assert bale.thaw(r.root) == items
    assert [type(v) for row in bale.thaw(r.root) for v in row.values()] == [type(v) for row in items for v in row.values()]


@pytest.mark.parametrize(
    "late",
    [
        {"a": 1, "c": 2},  # other keys
        {"b": 1, "a": 2},  # other order
        {"a": 1},  # fewer keys
        {"a": {"nested": 1}, "b": 2},  # a value a table does not hold
        {"a": [[1]], "b": 2},  # a list of lists
        {"a": 2**70, "b": 2},  # beyond 64 bits
        {"a": [1], "b": 2},  # a list where scalars were
        [1, 2],  # not a dict
    ],
)
def test_a_row_that_does_not_fit_ends_the_table(tmp_path, late):
    items = [{"a": i, "b": f"s{i}"} for i in range(10)] + [late] + [{"a": i, "b": "t"} for i in range(5)]
    r = streamed(tmp_path / "t.bale", items)
    assert bale.thaw(r.root) == items
    assert list(bale.thaw(r.root)[10]) == list(late) if isinstance(late, dict) else True


def test_few_rows_and_other_roots_stay_row_by_row(tmp_path):
    items = [{"a": 1}, {"a": 2}, {"a": 3}]
    assert bale.thaw(streamed(tmp_path / "few.bale", items).root) == items
    assert "tables (lists of dicts, by column)" not in kinds(tmp_path / "few.bale")
    assert bale.thaw(streamed(tmp_path / "ints.bale", list(range(10))).root) == list(range(10))
    assert bale.thaw(streamed(tmp_path / "keys.bale", [{1: 2}] * 5).root) == [{1: 2}] * 5


def test_error_place_of_a_value_after_table_rows(tmp_path):
    with pytest.raises(bale.CompactError, match=r"root\[1\]\['x'\]"):
        with bale.Writer(tmp_path / "e.bale") as w:
            w.append({"x": 1})
            w.append({"x": object()})
    assert not (tmp_path / "e.bale").exists()


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "bale", *map(str, args)], capture_output=True, text=True)


def test_convert_jsonl_json_and_csv_store_tables(tmp_path):
    recs = tweets(20_000, seed=3)
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "t.json").write_text(json.dumps(recs))
    (tmp_path / "t.csv").write_text("a,b\n" + "".join(f"{i},x{i}\n" for i in range(100)))
    compact_bytes = bale.compact(recs).nbytes
    for name in ("t.jsonl", "t.json"):
        out = tmp_path / (name + ".bale")
        p = run_cli("convert", tmp_path / name, out)
        assert p.returncode == 0, p.stderr
        assert "tables (lists of dicts, by column)" in kinds(out)
        assert os.path.getsize(out) <= 1.15 * compact_bytes
        assert bale.thaw(bale.open(out, verify=True).root) == recs
    out = tmp_path / "csv.bale"
    assert run_cli("convert", tmp_path / "t.csv", out).returncode == 0
    assert "tables (lists of dicts, by column)" in kinds(out)
    assert bale.thaw(bale.open(out).root)[99] == {"a": 99, "b": "x99"}


@pytest.mark.parametrize(
    "value",
    [[], {}, 3, "text", None, [1, "a", [2], {"b": None}], {"k": [1, 2], "m": {"x": 1}, "n": "s"}, {"big": 2**80, "f": 1.5}],
)
def test_convert_json_of_every_top_level(tmp_path, value):
    src = tmp_path / "v.json"
    src.write_text(json.dumps(value, indent=1))
    p = run_cli("convert", src, tmp_path / "v.bale")
    assert p.returncode == 0, p.stderr
    assert bale.thaw(bale.open(tmp_path / "v.bale", verify=True).root) == value


@pytest.mark.parametrize(
    "text, where",
    [
        ('[{"a": 1},\n {"a": 2,}]', ["line 2", "element 1"]),
        ('[1, 2, 3\n', ["line 2", "element 3"]),
        ('{"a": 1, "b": [1 2]}', ["line 1 column 18", "member 1"]),
        ('[1, 2] x', ["line 1 column 8", "trailing characters"]),
        ('', ["line 1 column 0", "EOF"]),
        ('[1, NaN]', ["line 1 column 5", "element 1"]),  # not JSON (json.loads accepts it)
        ('[1, "\\udc00", "\udcff"]', ["element 2", "invalid unicode"]),  # a lone surrogate escape is fine, a 0xFF byte is not
    ],
)
def test_malformed_json_names_file_and_place(tmp_path, text, where):
    src = tmp_path / "bad.json"
    src.write_bytes(text.encode("utf-8", "surrogateescape"))
    p = run_cli("convert", src, tmp_path / "bad.bale")
    assert p.returncode != 0
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1 and str(src) in err and "malformed JSON" in err, err
    for w in where:
        assert w in err, err
    assert not (tmp_path / "bad.bale").exists()


def test_duplicate_top_level_key_is_named(tmp_path):
    src = tmp_path / "dup.json"
    src.write_text('{"a": 1, "b": 2, "a": 3}')
    p = run_cli("convert", src, tmp_path / "dup.bale")
    assert p.returncode != 0 and "'a' appears twice" in p.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_converting_a_json_array_streams_in_bounded_memory(tmp_path):
    # 60 MB of records that are not a table (nested dicts): written row by
    # row as parsed, so the peak is far below the file's size (the whole
    # file parsed at once took about 8x its size).
    src = tmp_path / "big.json"
    with open(src, "w") as f:
        f.write("[")
        for i in range(200_000):
            f.write(("," if i else "") + json.dumps({"id": i, "meta": {"text": "x" * 250, "n": i}}))
        f.write("]")
    size = os.path.getsize(src)
    assert size > 55e6
    code = textwrap.dedent(
        f"""
        from bale import cli
        print(cli.convert({str(src)!r}, {str(tmp_path / 'big.bale')!r}, None, False))
        # This process's own peak (ru_maxrss would count the forking parent's).
        status = open("/proc/self/status").read()
        print(int(status.split("VmHWM:")[1].split()[0]) * 1024)
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    peak = int(p.stdout.split()[-1])
    assert peak < 0.5 * size + 40e6, (peak, size)
    r = bale.open(tmp_path / "big.bale", verify=True)
    assert len(r.root) == 200_000 and r.root[199_999]["meta"]["n"] == 199_999


def test_columns_spilled_to_disk_read_back_when_kinds_change_and_when_given_up(tmp_path):
    # Streams of more than a chunk (256 KiB) go to a temporary file beside
    # the output: a column that turns mixed, and a table given up late, are
    # read back from it.
    items = [{"s": f"text {i} " * 3, "n": i, "l": [i, i + 1]} for i in range(60_000)]
    items[50_000]["n"] = None  # ints turn mixed after spilling
    items[55_000]["l"] = [1.5, "x"]
    r = streamed(tmp_path / "mixed.bale", items)
    assert "tables (lists of dicts, by column)" in kinds(tmp_path / "mixed.bale")
    assert bale.thaw(r.root) == items
    late = items + [{"s": {"nested": 1}, "n": 0, "l": []}]
    r = streamed(tmp_path / "late.bale", late)
    assert bale.thaw(r.root) == late
    assert sorted(os.listdir(tmp_path)) == ["late.bale", "mixed.bale"]  # no temporary files left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_streamed_table_columns_stay_out_of_memory(tmp_path):
    # 60 MB of records that make a table: the columns spill to disk, so the
    # peak stays far below the table's size.
    src = tmp_path / "table.jsonl"
    with open(src, "w") as f:
        for i in range(200_000):
            f.write(json.dumps({"id": i, "text": f"{i:08d}" * 35, "tags": ["a", "b"][: i % 3]}) + "\n")
    code = textwrap.dedent(
        f"""
        import bale
        from bale import cli
        print(cli.convert({str(src)!r}, {str(tmp_path / 't.bale')!r}, None, False))
        status = open("/proc/self/status").read()
        print(int(status.split("VmHWM:")[1].split()[0]) * 1024)
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    peak = int(p.stdout.split()[-1])
    size = os.path.getsize(tmp_path / "t.bale")
    assert size > 55e6 and peak < 0.5 * size + 40e6, (peak, size)
    assert "tables (lists of dicts, by column)" in kinds(tmp_path / "t.bale")
    r = bale.open(tmp_path / "t.bale", verify=True)
    assert r.root[199_999] == {"id": 199_999, "text": f"{199_999:08d}" * 35, "tags": ["a"]}
