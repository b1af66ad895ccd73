"""The bale command, run as a real subprocess on real files."""

import csv
import json
import os
import pathlib
import subprocess
import sys

import pytest

import bale
from conftest import json_corpus_files

BALE = [sys.executable, "-m", "bale"]
SCRIPT = pathlib.Path(sys.executable).with_name("bale")


def run(*args, input=None, cmd=None):
    return subprocess.run((cmd or BALE) + [str(a) for a in args], capture_output=True, input=input, timeout=300)


def expected_of(path):
    if path.suffix == ".ndjson":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return json.loads(path.read_text(encoding="utf-8"))


def some_pointers(value, prefix="", out=None, limit=12):
    """A few JSON Pointers into ``value`` (first items and keys, depth first)."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    out.append(prefix)
    if isinstance(value, dict):
        for k in list(value)[:2]:
            some_pointers(value[k], prefix + "/" + k.replace("~", "~0").replace("/", "~1"), out, limit)
    elif isinstance(value, list) and value:
        some_pointers(value[0], prefix + "/0", out, limit)
        some_pointers(value[-1], prefix + f"/{len(value) - 1}", out, limit)
    return out


def at(value, pointer):
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


@pytest.mark.parametrize("src", json_corpus_files(), ids=lambda p: p.name)
def test_every_command_on_every_corpus_file(src, tmp_path):
    out = tmp_path / (src.stem + ".bale")
    p = run("convert", src, out)
    assert p.returncode == 0, p.stderr
    assert out.exists()
    expected = expected_of(src)
    assert bale.thaw(bale.open(out, verify=True).root) == expected

    p = run("to-json", out)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == expected

    for pointer in some_pointers(expected):
        p = run("get", out, pointer)
        assert p.returncode == 0, (pointer, p.stderr)
        assert json.loads(p.stdout) == at(expected, pointer), pointer
        p = run("to-json", out, pointer)
        assert json.loads(p.stdout) == at(expected, pointer), pointer

    p = run("info", out, "--verify")
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode()
    assert "format version: 1" in text and "verified" in text and f"{out.stat().st_size:,} bytes" in text
    assert "dict shapes:" in text

    p = run("verify", out)
    assert p.returncode == 0 and b"OK" in p.stdout


def test_the_installed_script_works_too(tmp_path):
    assert SCRIPT.exists()
    p = run("--help", cmd=[str(SCRIPT)])
    assert p.returncode == 0 and b"convert" in p.stdout
    for sub in ("convert", "info", "get", "to-json", "verify", "demo"):
        p = run(sub, "--help", cmd=[str(SCRIPT)])
        assert p.returncode == 0 and b"usage:" in p.stdout, sub


def test_get_raw_and_pointer_escapes(tmp_path):
    src = tmp_path / "doc.json"
    src.write_text(json.dumps({"a/b": {"m~n": ["text value", 2]}, "1": "str key"}))
    out = tmp_path / "doc.bale"
    assert run("convert", src, out).returncode == 0
    assert run("get", out, "/a~1b/m~0n/0").stdout == b'"text value"\n'
    assert run("get", out, "/a~1b/m~0n/0", "--raw").stdout == b"text value\n"
    assert run("get", out, "/a~1b/m~0n/1", "--raw").stdout == b"2\n"
    assert run("get", out, "/1").stdout == b'"str key"\n'


def test_csv_rows_become_dicts_with_numbers(tmp_path):
    src = tmp_path / "t.csv"
    with open(src, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "price", "name", "note"])
        w.writerow([1, "2.5", "apple", ""])
        w.writerow([2, "1e3", "pear, green", "x"])
    out = tmp_path / "t.bale"
    p = run("convert", src, out)
    assert p.returncode == 0, p.stderr
    assert bale.thaw(bale.open(out).root) == [
        {"id": 1, "price": 2.5, "name": "apple", "note": None},
        {"id": 2, "price": 1000.0, "name": "pear, green", "note": "x"},
    ]


def test_msgpack_and_pickle_inputs(tmp_path):
    msgspec = pytest.importorskip("msgspec")
    value = {"a": [1, 2, {"b": None}], "c": "d"}
    src = tmp_path / "v.msgpack"
    src.write_bytes(msgspec.msgpack.encode(value))
    out = tmp_path / "v.bale"
    assert run("convert", src, out).returncode == 0
    assert bale.thaw(bale.open(out).root) == value

    import pickle

    pk = tmp_path / "v.pkl"
    pk.write_bytes(pickle.dumps(value))
    p = run("convert", pk, tmp_path / "p.bale")
    assert p.returncode == 1 and b"--unsafe-pickle" in p.stderr
    assert not (tmp_path / "p.bale").exists()
    assert run("convert", pk, tmp_path / "p.bale", "--unsafe-pickle").returncode == 0
    assert bale.thaw(bale.open(tmp_path / "p.bale").root) == value

    other = tmp_path / "data.txt"
    other.write_text(json.dumps(value))
    assert run("convert", other, out).returncode == 1
    assert run("convert", other, tmp_path / "f.bale", "--from", "json").returncode == 0


def one_line_error(p, *needles):
    assert p.returncode != 0
    err = p.stderr.decode()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)


def test_convert_names_the_output_path_it_cannot_write(tmp_path):
    src_json = tmp_path / "in.json"
    src_json.write_text('[{"a": 1}, {"a": 2}]')
    src_lines = tmp_path / "in.jsonl"
    src_lines.write_text('{"a": 1}\n{"a": 2}\n')
    directory = tmp_path / "out"
    directory.mkdir()
    missing = tmp_path / "nonexistent" / "o.bale"
    for src in (src_json, src_lines):
        one_line_error(run("convert", src, missing), f"{missing}: No such file or directory")
        one_line_error(run("convert", src, directory), f"{directory}: Is a directory")
    # A failure to write names the output too: a file system that refuses
    # writes (a read-only bind of the directory needs privileges; a file
    # where a directory should be does not).
    not_a_dir = tmp_path / "plain"
    not_a_dir.write_text("")
    one_line_error(run("convert", src_json, not_a_dir / "o.bale"), str(not_a_dir / "o.bale"))
    one_line_error(run("convert", tmp_path / "absent.json", tmp_path / "o.bale"), "absent.json: No such file or directory")
    assert sorted(os.listdir(tmp_path)) == ["in.json", "in.jsonl", "out", "plain"]
    assert os.listdir(directory) == []


def test_bad_inputs_give_one_line_errors(tmp_path):
    one_line_error(run("info", tmp_path / "missing.bale"), "missing.bale", "no such file")
    one_line_error(run("verify", tmp_path / "missing.bale"), "no such file")
    garbage = tmp_path / "garbage.bale"
    garbage.write_bytes(b"not a region at all" * 10)
    one_line_error(run("verify", garbage), "garbage.bale", "magic")
    one_line_error(run("get", garbage, "/0"), "garbage.bale")

    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,\n  "b": [1, 2,,]\n}')
    one_line_error(run("convert", bad, tmp_path / "bad.bale"), "bad.json", "line 2")
    assert not (tmp_path / "bad.bale").exists()

    lines = tmp_path / "bad.jsonl"
    lines.write_text('{"a": 1}\n{"a": 2}\n{"a": \n{"a": 4}\n')
    one_line_error(run("convert", lines, tmp_path / "lines.bale"), "bad.jsonl", "line 3")
    assert not (tmp_path / "lines.bale").exists()
    assert [p for p in os.listdir(tmp_path) if p.startswith(".")] == []  # no partial files

    good = tmp_path / "good.bale"
    bale.compact({"list": [1, 2], "s": {1}}).save(good)
    one_line_error(run("get", good, "/nope"), "good.bale", "/nope", "no key 'nope'")
    one_line_error(run("get", good, "/list/2"), "/list/2", "past the end")
    one_line_error(run("get", good, "/list/x"), "not an array index")
    one_line_error(run("get", good, "/s"), "set has no JSON form")
    one_line_error(run("get", good, "list"), "must be empty or start with '/'")
    one_line_error(run("frobnicate"), "invalid choice")


def test_a_corrupted_file_fails_verify_naming_the_problem(tmp_path):
    path = tmp_path / "r.bale"
    bale.compact([{"k": i} for i in range(100)]).save(path)
    data = bytearray(path.read_bytes())
    data[200] ^= 0xFF
    path.write_bytes(bytes(data))
    one_line_error(run("verify", path), "r.bale", "invalid")
    p = run("info", path, "--verify")
    assert b"FAILED" in p.stdout


def test_output_piped_to_head_ends_quietly(tmp_path):
    path = tmp_path / "big.bale"
    bale.compact([{"n": i, "text": "x" * 50} for i in range(200_000)]).save(path)
    cmd = f"{sys.executable} -m bale to-json {path} | head -c 100"
    p = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], capture_output=True, timeout=120)
    assert len(p.stdout) == 100
    assert p.stderr == b"", p.stderr


def test_no_progress_output_when_stderr_is_not_a_terminal(tmp_path):
    src = tmp_path / "x.jsonl"
    src.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(50_000)))
    p = run("convert", src, tmp_path / "x.bale")
    assert p.returncode == 0
    assert b"\r" not in p.stderr and p.stderr.count(b"\n") == 1  # just the summary line


def test_bench_outside_a_checkout_says_where_to_run_it(tmp_path):
    p = subprocess.run(BALE + ["bench", "--quick"], capture_output=True, timeout=60, cwd=tmp_path)
    one_line_error(p, "benchmarks/run_all.py not found", "checkout")


def test_bench_passes_its_arguments_to_run_all(tmp_path):
    # From a folder inside the checkout: run_all.py is found above; the report goes to tmp_path.
    root = pathlib.Path(__file__).resolve().parents[2]
    report = tmp_path / "REPORT.md"
    p = subprocess.run(BALE + ["bench", "--smoke", "--only", "growth", "--report", str(report)],
                       capture_output=True, timeout=120, cwd=root / "benchmarks")
    assert p.returncode == 0, p.stderr[-2000:]
    text = report.read_text()
    assert "## Growing regions" in text and "run_all.py --smoke --only growth" in text
    assert (tmp_path / "REPORT.json").exists()


def test_unknown_arguments_of_other_commands_are_still_errors(tmp_path):
    p = run("verify", tmp_path / "x.bale", "--no-such-option")
    assert p.returncode != 0 and b"unrecognized arguments: --no-such-option" in p.stderr
