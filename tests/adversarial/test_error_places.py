"""Errors name the place of the value at fault, from the root of the file or region.

`bale to-json` and `bale get` name places as `bale.to_json` does for the
whole region (`root[1]["a"]`), and a failing `to-json` writes nothing to
stdout; `bale.Writer` names the item being written (`root[1]['x']`).
"""

import io
import json
import subprocess
import sys

import pytest

import bale
from bale import cli


def _bale(*args, cwd):
    return subprocess.run([sys.executable, "-m", "bale", *args], capture_output=True, cwd=cwd, timeout=120)


@pytest.fixture
def infinite(tmp_path):
    """The issue's file: `[{"a": 1}, {"a": 1e400}]` converted by `bale convert` (1e400 reads as inf)."""
    src = tmp_path / "in.json"
    src.write_text('[{"a": 1}, {"a": 1e400}]')
    out = _bale("convert", "in.json", "in.bale", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return tmp_path / "in.bale"


def _python_place(path) -> str:
    with pytest.raises(ValueError) as e:
        bale.to_json(bale.open(path))
    return str(e.value).split(": ")[0]


def test_to_json_names_the_place_and_writes_nothing(infinite):
    assert _python_place(infinite) == 'root[1]["a"]'
    out = _bale("to-json", infinite.name, cwd=infinite.parent)
    assert out.returncode == 1
    assert out.stdout == b""
    assert b'in.bale: root[1]["a"]: inf has no JSON form' in out.stderr


def test_to_json_of_a_sub_value_names_the_place_from_the_root(tmp_path):
    path = tmp_path / "nested.bale"
    bale.compact({"k": [{"a": 1}, {"a": [0, float("nan")]}], "ok": [1, 2]}).save(path)
    assert _python_place(path) == 'root["k"][1]["a"][1]'
    for pointer in ("", "/k", "/k/1", "/k/1/a"):
        out = _bale("to-json", path.name, pointer, cwd=tmp_path)
        assert out.returncode == 1 and out.stdout == b"", pointer
        assert b'root["k"][1]["a"][1]: NaN has no JSON form' in out.stderr, (pointer, out.stderr)
    ok = _bale("to-json", path.name, "/ok", cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout == b"[1,2]\n"


def test_get_names_the_place(infinite):
    for pointer in ("/1/a", "/1"):
        out = _bale("get", infinite.name, pointer, cwd=infinite.parent)
        assert out.returncode == 1 and out.stdout == b""
        assert b'in.bale: root[1]["a"]: inf has no JSON form' in out.stderr, out.stderr


def test_int_keys_are_named_as_to_json_names_them(tmp_path):
    path = tmp_path / "intkeys.bale"
    bale.compact({5: {"x": b"bytes"}}).save(path)
    place = _python_place(path)
    out = _bale("get", path.name, "/5", cwd=tmp_path)
    assert out.returncode == 1
    assert f"intkeys.bale: {place}: ".encode() in out.stderr, (place, out.stderr)


def test_to_json_holds_output_until_every_item_converts(tmp_path):
    """Past the bytes it holds, to-json checks the remaining items before writing any."""
    path = tmp_path / "long.bale"
    items = [{"i": i, "s": "x" * 50} for i in range(2000)]
    bale.compact(items + [{"i": float("inf")}]).save(path)
    out = io.BytesIO()
    with pytest.raises(cli.CommandError, match=r'root\[2000\]\["i"\]: inf has no JSON form'):
        cli.to_json(str(path), "", out, hold_bytes=1000)
    assert out.getvalue() == b""
    good = tmp_path / "good.bale"
    bale.compact(items).save(good)
    for hold in (0, 1000, 10**9):
        out = io.BytesIO()
        cli.to_json(str(good), "", out, hold_bytes=hold)
        assert out.getvalue() == bale.to_json(bale.open(good)) + b"\n"
        assert json.loads(out.getvalue()) == items


def test_help_says_that_nothing_is_written_on_failure(tmp_path):
    out = _bale("to-json", "--help", cwd=tmp_path)
    assert b"Nothing is written" in out.stdout


class Opaque:
    pass


def test_writer_names_the_item(tmp_path):
    with bale.Writer(tmp_path / "list.bale") as w:
        w.append({"x": 1})
        with pytest.raises(bale.CompactError, match=r"^root\[1\]\['x'\]: cannot compact .*Opaque"):
            w.append({"x": Opaque()})
        w.append({"x": 2})  # the failed item left nothing behind
        with pytest.raises(bale.CompactError, match=r"^root\[2\]\[0\]\[1\]: cannot compact"):
            w.append([[0, Opaque()]])
    assert bale.thaw(bale.open(tmp_path / "list.bale").root) == [{"x": 1}, {"x": 2}]
    with bale.Writer(tmp_path / "dict.bale") as w:
        w["a"] = 1
        with pytest.raises(bale.CompactError, match=r"^root\['k'\]\[1\]\['x'\]: cannot compact"):
            w["k"] = [1, {"x": Opaque()}]
