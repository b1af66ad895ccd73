"""CSV cells in ``bale convert``: only JSON numbers are guessed, guessing can
be turned off, and columns can be declared (issue 20, item 3)."""

import csv
import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bale
from bale import cli

BALE = [sys.executable, "-m", "bale"]


def run(*args):
    return subprocess.run(BALE + [str(a) for a in args], capture_output=True, timeout=300)


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


def convert(tmp_path, rows, *options):
    src = write_csv(tmp_path / "t.csv", rows)
    out = tmp_path / "t.bale"
    p = run("convert", src, out, *options)
    assert p.returncode == 0, p.stderr.decode()
    return bale.thaw(bale.open(out).root)


def one_line_error(p, *needles):
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)


AMBIGUOUS = ["00501", "Infinity", "1_000", " 12 ", "nan"]


def test_cells_that_are_not_json_numbers_stay_text_by_default(tmp_path):
    header = ["zip", "inf", "under", "spaced", "nan"]
    assert convert(tmp_path, [header, AMBIGUOUS]) == [dict(zip(header, AMBIGUOUS))]


def test_json_numbers_become_ints_and_floats_and_empty_cells_none(tmp_path):
    header = ["a", "b", "c", "d", "e", "f", "g", "h"]
    rows = convert(tmp_path, [header, ["-0.5e3", "12", "0", "-7", "1.25", "1E+2", "", "x"]])
    assert rows == [{"a": -500.0, "b": 12, "c": 0, "d": -7, "e": 1.25, "f": 100.0, "g": None, "h": "x"}]
    assert [type(v) for v in rows[0].values()] == [float, int, int, int, float, float, type(None), str]


@pytest.mark.parametrize(
    "text",
    ["+1", "1.", ".5", "01", "-01.5", "0x10", "1e", "1e+", "--1", "1_0", "inf", "-inf", "NaN", "-Infinity",
     "12 ", " 12", "\t1", "1\u00a0", "\u0661\u0662", "\uff11", "1,000", "1e400", "-1e400", "TRUE", "null"],
)
def test_what_stays_text_by_default(text):
    assert cli.json_number_or_text(text) == text


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet="0123456789+-.eE_ x", max_size=12), st.from_regex(r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?", fullmatch=True)))
def test_a_cell_becomes_a_number_exactly_when_it_is_a_finite_json_number(text):
    value = cli.json_number_or_text(text)
    try:
        as_json = json.loads(text) if text.strip() == text else None
    except ValueError:
        as_json = None
    if isinstance(as_json, (int, float)) and not isinstance(as_json, bool) and math.isfinite(as_json):
        assert value == as_json and type(value) is type(as_json)
    else:
        assert value == (None if text == "" else text)


def test_csv_types_none_keeps_every_cell_as_text(tmp_path):
    header = ["zip", "n", "f", "empty"]
    assert convert(tmp_path, [header, ["00501", "12", "-0.5e3", ""]], "--csv-types", "none") == [
        {"zip": "00501", "n": "12", "f": "-0.5e3", "empty": ""}
    ]


def test_declared_column_types(tmp_path):
    header = ["zip", "score", "ok", "n", "label", "rest"]
    rows = [
        header,
        ["00501", "nan", "true", "007", "12", "3"],
        ["10001", "1e400", "False", "-3", "", "x"],
        ["", "", "1", "+4", "00", ""],
        ["02134", "10", "0", "", " a ", "1.5"],
    ]
    got = convert(
        tmp_path, rows,
        "--csv-column-type", "zip=str", "--csv-column-type", "score=float", "--csv-column-type", "ok=bool",
        "--csv-column-type", "n=int", "--csv-column-type", "label=str",
    )
    assert [r["zip"] for r in got] == ["00501", "10001", "", "02134"]
    assert math.isnan(got[0]["score"]) and got[1]["score"] == math.inf and got[2]["score"] is None
    assert got[3]["score"] == 10.0
    assert [r["ok"] for r in got] == [True, False, True, False]
    assert [r["n"] for r in got] == [7, -3, 4, None]
    assert [r["label"] for r in got] == ["12", "", "00", " a "]
    # Columns not declared follow --csv-types (json by default).
    assert [r["rest"] for r in got] == [3, "x", None, 1.5]
    got = convert(tmp_path, rows[:2], "--csv-types", "none", "--csv-column-type", "n=int")
    assert got == [{"zip": "00501", "score": "nan", "ok": "true", "n": 7, "label": "12", "rest": "3"}]


@pytest.mark.parametrize(
    ("kind", "cell"),
    [("int", "1_000"), ("int", " 12"), ("int", "1.0"), ("float", "1_0.5"), ("float", " 1.5"), ("float", "x"),
     ("bool", "yes"), ("bool", "2")],
)
def test_a_cell_that_does_not_parse_as_its_declared_type_names_file_line_and_column(tmp_path, kind, cell):
    # The bad cell is on line 5: the record before it spans lines 3 and 4.
    src = write_csv(tmp_path / "t.csv", [["note", "v"], ["a", "1"], ["two\nlines", "0"], ["c", cell]])
    out = tmp_path / "t.bale"
    one_line_error(run("convert", src, out, "--csv-column-type", f"v={kind}"),
                   f"{src}: line 5, column 'v': {cell!r} is not", f"(declared {kind})")
    assert not out.exists()


def test_declared_columns_must_be_in_the_header_and_options_need_csv_input(tmp_path):
    src = write_csv(tmp_path / "t.csv", [["a", "b"], ["1", "2"]])
    out = tmp_path / "t.bale"
    one_line_error(run("convert", src, out, "--csv-column-type", "zip=str"), f"{src}: line 1: no column 'zip'", "'a', 'b'")
    one_line_error(run("convert", src, out, "--csv-column-type", "zip"), "NAME=TYPE")
    one_line_error(run("convert", src, out, "--csv-column-type", "a=integer"), "unknown type 'integer'")
    one_line_error(run("convert", src, out, "--csv-column-type", "a=int", "--csv-column-type", "a=str"), "'a' twice")
    one_line_error(run("convert", src, out, "--csv-types", "guess"), "--csv-types")
    js = tmp_path / "t.json"
    js.write_text("[1]")
    one_line_error(run("convert", js, out, "--csv-types", "none"), "CSV input only")
    assert not out.exists()
    # A column name may hold "=": the last one splits.
    src = write_csv(tmp_path / "e.csv", [["a=b"], ["007"]])
    assert run("convert", src, out, "--csv-column-type", "a=b=str").returncode == 0
    assert bale.thaw(bale.open(out).root) == [{"a=b": "007"}]


def test_an_overflowing_float_exports_to_json_or_the_error_names_its_row_and_column(tmp_path):
    src = write_csv(tmp_path / "t.csv", [["id", "score"], ["1", "0.5"], ["2", "1e400"], ["3", "nan"]])
    out = tmp_path / "t.bale"
    # By default 1e400 (no finite float) and nan (no JSON number) stay text: the file exports.
    assert run("convert", src, out).returncode == 0
    p = run("to-json", out)
    assert p.returncode == 0
    assert json.loads(p.stdout) == [{"id": 1, "score": 0.5}, {"id": 2, "score": "1e400"}, {"id": 3, "score": "nan"}]
    # Declared floats are infinite and NaN: to-json names the first cell that has no JSON form.
    assert run("convert", src, out, "--csv-column-type", "score=float").returncode == 0
    p = run("to-json", out)
    one_line_error(p, f"{out}: root[1][\"score\"]:", "JSON")
    assert p.stdout == b""


def test_the_python_level_convert_takes_the_same_options(tmp_path):
    src = write_csv(tmp_path / "t.csv", [["zip", "n"], ["00501", "12"]])
    out = tmp_path / "t.bale"
    cli.convert(str(src), str(out), None, False)
    assert bale.thaw(bale.open(out).root) == [{"zip": "00501", "n": 12}]
    cli.convert(str(src), str(out), None, False, csv_types="none")
    assert bale.thaw(bale.open(out).root) == [{"zip": "00501", "n": "12"}]
    cli.convert(str(src), str(out), None, False, csv_column_types={"zip": "int", "n": "float"})
    assert bale.thaw(bale.open(out).root) == [{"zip": 501, "n": 12.0}]
    with pytest.raises(cli.CommandError, match="line 2, column 'zip'"):
        cli.convert(str(src), str(out), None, False, csv_column_types={"zip": "bool"})
    with pytest.raises(cli.CommandError, match="unknown type"):
        cli.convert(str(src), str(out), None, False, csv_column_types={"zip": "date"})
