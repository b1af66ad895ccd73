"""benchmarks/record_bytes.py: the floors it reports are the arithmetic its doc states, and
records made regular keep their values and become tables."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

import bale

# record_bytes imports bench_sweep, which imports its baselines: only environments with
# the bench extra have them (not the other interpreters' `.ci/test-python.sh`).
pytest.importorskip("msgspec")
pytest.importorskip("orjson")

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def from_benchmarks(name: str):
    """The module ``name`` of ``benchmarks/``. bench_sweep (which each imports) raises the
    recursion limit when imported: put back, for the tests of the depth limit that may run
    after these."""
    import importlib

    limit, path = sys.getrecursionlimit(), list(sys.path)
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.setrecursionlimit(limit)
        sys.path[:] = path


@pytest.fixture(scope="module")
def rb():
    return from_benchmarks("record_bytes")


def test_floors_of_a_column_of_several_widths_and_a_string_value_met_twice(rb):
    again = "".join(["xy", "z"])  # equal to "xyz", another object
    assert again is not "xyz"  # noqa: F632 (the point is that they are two objects)
    rows = [{"a": "xyz", "b": [1, None]}, {"a": "é", "b": []}, {"a": again, "b": []}]
    # keys: two inline slots, 16. Units: 3 + 1 + 3. Lists: the outer one and three, 4 bytes
    # each. Today: None and 1 at 8 bytes; column "a" mixes ASCII and Latin-1, so slots:
    # "xyz" inline (8 - 3 beyond its units, twice), "é" a slot and a padded word (8 + 8 - 1).
    today = 16 + 7 + 16 + 16 + (5 + 15 + 5)
    # Narrow: 4 bytes of offset a string, one byte for None, one for the int 1.
    narrow = 16 + 7 + 12 + 1 + 1 + 16
    assert rb.floors(rows) == (7, today, narrow, narrow - 3)


def test_floors_of_a_column_of_one_width_take_the_string_column(rb):
    rows = [{"a": "abcdefghij"}, {"a": "klmnopqrst"}]
    # As slots each would cost 8 + 16 - 10 beyond its units; as a column, 4.
    assert rb.floors(rows) == (20, 8 + 20 + 4 + 8, 8 + 20 + 8 + 4, 8 + 20 + 8 + 4)


def test_floors_price_numbers_at_a_word_today_and_in_their_minimal_bytes_narrow(rb):
    # 255 needs two signed bytes, -1 one, 2**40 six; a float keeps its eight.
    assert rb.floors([255, -1, 2**40, 1.5]) == (0, 32 + 4, 17 + 4, 17 + 4)


def test_union_order_holds_every_sequence_in_its_order(rb):
    def is_subsequence(seq, of):
        it = iter(of)
        return all(k in it for k in seq)

    seqs = [["a", "b", "d"], ["a", "c", "d"], ["e"], ["b", "c"]]
    order = rb.union_order(seqs)
    assert sorted(order) == ["a", "b", "c", "d", "e"]
    assert all(is_subsequence(s, order) for s in seqs[:3])


def test_twitter_made_regular_keeps_its_values_and_is_a_tree_of_tables(rb):
    path = os.path.join(rb.JSON_DIR, "twitter.json")
    if not os.path.exists(path):
        pytest.skip("the shared corpora are not beside this checkout")
    with open(path) as f:
        rows = json.load(f)["statuses"]
    def covers(made, value):
        """Whether `made` holds `value`, its dicts with more keys at most."""
        if isinstance(value, dict):
            return isinstance(made, dict) and all(k in made and covers(made[k], v) for k, v in value.items())
        if isinstance(value, list):
            return isinstance(made, list) and len(made) == len(value) and all(map(covers, made, value))
        return made == value

    made = rb.regular(rows)
    assert len(made) == len(rows) and all(map(covers, made, rows))
    assert all(list(reg) == list(made[0]) for reg in made)
    assert not covers(made[0], {**rows[0], "not a key": 1})
    region = bale.compact(json.loads(json.dumps(made)))
    kinds = bale._bale.region_stats(region, top=0)["kinds"]
    assert "dicts" not in kinds and "tables (lists of dicts, by column)" in kinds
    # The corpus itself is stored row by row: that is what the script is about.
    assert "dicts" in bale._bale.region_stats(bale.compact(rows), top=0)["kinds"]


def test_the_script_runs_and_reports_every_corpus(rb):
    if not os.path.exists(os.path.join(rb.JSON_DIR, "github_events.json")):
        pytest.skip("the shared corpora are not beside this checkout")
    out = subprocess.run(
        [sys.executable, str(BENCH / "record_bytes.py")], capture_output=True, text=True, check=True
    ).stdout
    assert out.count("## ") == 3
    for line in ("as stored:", "by column (made regular):", "equal strings as one object:",
                 "floor, today's kinds:", "floor, narrow kinds:", "floor, narrow kinds, equal strings once:"):
        assert out.count(line) == 3, line


def test_sweep_bytes_reports_the_ratio_and_verdict_of_the_cells_it_is_given(rb):
    out = subprocess.run(
        [sys.executable, str(BENCH / "sweep_bytes.py"), "--kinds", "vocabulary 10, records", "heterogeneous dicts"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    cells = [line for line in out if "(target" in line]
    assert [line.split(")  ", 1)[1] for line in cells] == [
        "str 8-64, vocabulary 10, records", "heterogeneous dicts (3-8 of 30 keys)"]
    import pickle

    records = from_benchmarks("bench_sweep").vocab_records(200_000, 10)
    want = bale.compact(records).nbytes / len(pickle.dumps(records, 5))
    assert cells[0].startswith(f"{want:6.3f}x  (target 1.0x, met )")
    assert "MISS" in cells[1]
    # The split by kind follows each cell, and the last line counts the verdicts.
    assert any("string-code columns" in line for line in out)
    assert out[-1] == "met 1 of 2"
