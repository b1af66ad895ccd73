"""JSON text through the core's JSON source (``bale.compact_json``,
``Writer.append_json`` / ``set_json``, ``bale convert``): the same bytes as
the Python path (``json.loads``, then ``compact`` or ``Writer.append``),
byte for byte, on the shared corpora, on generated JSON and on the corners
where CPython's ``json.loads`` decides what a value is."""

import json
import math
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bale
from conftest import json_corpus_files


def loads_path(text):
    """The region of the Python path: ``compact(json.loads(text))``."""
    return bytes(bale.compact(json.loads(text)))


def assert_same_region(text):
    want = loads_path(text)
    got = bytes(bale.compact_json(text))
    assert got == want, f"compact_json differs from compact(json.loads) for {text[:200]!r}"
    return got


def corpus_documents(path):
    data = path.read_bytes()
    if path.suffix == ".ndjson":
        return [line for line in data.splitlines() if line.strip()]
    return [data]


@pytest.mark.parametrize("path", json_corpus_files(), ids=lambda p: p.name)
def test_corpus_documents_give_the_bytes_of_json_loads_then_compact(path):
    for text in corpus_documents(path):
        assert_same_region(text)
        assert_same_region(text.decode("utf-8"))


def write(path, items, how):
    with bale.Writer(path) as w:
        for item in items:
            if how == "json":
                w.append_json(item)
            else:
                w.append(json.loads(item))
    return path.read_bytes()


def top_level_items(path):
    """Each element of a top-level array (twitter's statuses; amazon's lines) as JSON text."""
    if path.suffix == ".ndjson":
        return corpus_documents(path)
    value = json.loads(path.read_bytes())
    if isinstance(value, dict):
        value = next((v for v in value.values() if isinstance(v, list) and v), [value])
    return [json.dumps(v, ensure_ascii=False) for v in value]


@pytest.mark.parametrize("path", json_corpus_files(), ids=lambda p: p.name)
def test_a_writer_fed_json_text_writes_the_file_append_writes(tmp_path, path):
    items = top_level_items(path)
    assert write(tmp_path / "a.bale", items, "json") == write(tmp_path / "b.bale", items, "loads")


def test_a_writer_that_gives_up_its_table_midway_writes_the_same_file(tmp_path):
    rows = [json.dumps({"id": i, "name": f"user number {i}", "tags": ["a", "bb"][: i % 3]}) for i in range(20)]
    # A row with another key sequence, then a row with a nested object, then rows again.
    items = rows[:10] + ['{"id": 1}', '{"id": 2, "name": {"first": "x"}, "tags": []}'] + rows[10:]
    assert write(tmp_path / "a.bale", items, "json") == write(tmp_path / "b.bale", items, "loads")
    # An int beyond 64 bits ends the table too.
    items = rows[:5] + ['{"id": 123456789012345678901234567890, "name": "x", "tags": []}'] + rows[5:]
    assert write(tmp_path / "c.bale", items, "json") == write(tmp_path / "d.bale", items, "loads")


def test_set_json_writes_what_setitem_writes(tmp_path, json_corpus):
    members = json.loads((json_corpus / "citm_catalog.json").read_bytes())
    with bale.Writer(tmp_path / "a.bale") as a, bale.Writer(tmp_path / "b.bale") as b:
        for key, value in members.items():
            text = json.dumps(value, ensure_ascii=False)
            a.set_json(key, text)
            b[key] = json.loads(text)
    assert (tmp_path / "a.bale").read_bytes() == (tmp_path / "b.bale").read_bytes()


def test_a_key_written_twice_by_set_json_is_refused(tmp_path):
    with bale.Writer(tmp_path / "a.bale") as w:
        w.set_json("k", "1")
        with pytest.raises(KeyError, match="already written"):
            w.set_json("k", "2")
        with pytest.raises(TypeError, match="dict"):
            w.append_json("3")


CORNERS = [
    "0", "-0", "-0.0", "0.0", "1E2", "1e-7", "1e400", "-1e400", "NaN", "Infinity", "-Infinity",
    "[NaN, Infinity, -Infinity, -0.0]",
    str(2**63 - 1), str(-(2**63)), str(2**63), str(-(2**63) - 1), str(2**64), str(2**64 - 1),
    str(2**60 - 1), str(2**60), str(-(2**60) - 1), str(10**100), str(-(10**100)),
    "[" + ", ".join(str(v) for v in [1, 2**62, -(2**62), 2**63 - 1]) + "]",
    "[1, 2, 12345678901234567890123]", "[1.5, 2]", "[1, true]", "[true, 1]",
    '{"a": 1, "b": 2, "a": 3}', '[{"a": 1, "a": 2}, {"a": 3}, {"a": 4}, {"a": 5}]',
    '"\\u00e9"', '["\\u00e9", "\\u00e9", "\\u00ff", "\\u0080"]', '{"\\u00e9": "\\u00e9", "x": ["\\u00e9"]}',
    '[{"k": "\\u00e9"}, {"k": "\\u00e9"}, {"k": "\\u00e9"}, {"k": "\\u00e9"}]',
    '[{"k": "\\u00e9"}, {"k": "\\u00e8"}, {"k": "\\u00e9 long enough"}, {"k": "x"}]',
    '"\\ud83d\\ude00"', '"\\u20ac"', '"caf\\u00e9 \\u20ac \\ud83d\\ude00"',
    '[{"v": "ab"}, {"v": "\\u20ac"}, {"v": "cd"}, {"v": "ef"}]',
    '[{"v": []}, {"v": []}, {"v": []}, {"v": []}]', '[{"v": [1]}, {"v": 2}, {"v": []}, {"v": [3.5, "x"]}]',
    '[{"v": [1, 2]}, {"v": [3]}, {"v": []}, {"v": [4, 5, 6]}]', '[{"v": [1.5]}, {"v": [2.5, 3.5]}, {"v": []}, {"v": [0.0]}]',
    '[{"v": ["a long string one", "two"]}, {"v": ["three"]}, {"v": []}, {"v": ["four four four"]}]',
    '[{"v": [null]}, {"v": [true, false]}, {"v": []}, {"v": [1, "x", 2.5]}]',
    '[{"v": [[1]]}, {"v": []}, {"v": []}, {"v": []}]', '[{"v": {}}, {"v": 1}, {"v": 2}, {"v": 3}]',
    '[{}, {}, {}, {}]', '[[], [], [], []]', '[[1, "a"], [2, "b"], [3.5, null], [true]]',
    '[1, 2, 3, 4, 5]', '[1.0, 2.5]', '["a", 1, null, 2.5]', '["a", 1, null, 2.5, "longer than seven"]',
    '[[1, 2], [3, [4, [5]]]]', '{"a": {"b": {"c": {"d": [1, {"e": null}]}}}}',
    '[' + ", ".join('{"k%d": %d}' % (i % 3, i) for i in range(30)) + "]",
    "{" + ", ".join('"key number %d": %d' % (i, i) for i in range(70)) + "}",
    "[" + ", ".join("{" + ", ".join('"key number %d": %d' % (i, r) for i in range(70)) + "}" for r in range(5)) + "]",
    " \t\r\n[1] \n", "[]", "{}", '""', '"abcdefg"', '"abcdefgh"', "null", "true", "false",
]


@pytest.mark.parametrize("text", CORNERS)
def test_corners_of_json_loads_give_the_same_bytes(text):
    assert_same_region(text)
    assert_same_region(text.encode())


FALLBACKS = [
    '"\\ud800"',  # a lone surrogate: json.loads reads it, bale's parser does not
    '["a\\udc80b", {"\\udfff": 1}]',
    b"\xef\xbb\xbf[1, 2]",  # a UTF-8 byte order mark
    "[1, 2]".encode("utf-16"),
    "[1, 2]".encode("utf-32-le"),
]


@pytest.mark.parametrize("text", FALLBACKS)
def test_what_only_json_loads_reads_goes_through_it(text):
    assert_same_region(text)


@pytest.mark.parametrize("text", ["", "[1,]", "{'a': 1}", "[1] 2", "01", "-NaN", "[", '"\\x"', "tru", '"a\nb"'])
def test_malformed_json_raises_what_json_loads_raises(text):
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        bale.compact_json(text)
    assert str(got.value) == str(want.value)


def test_what_is_no_json_text_raises_what_json_loads_raises():
    with pytest.raises(TypeError, match="must be str, bytes or bytearray"):
        bale.compact_json(12)
    assert bytes(bale.compact_json(bytearray(b"[1, 2]"))) == loads_path(b"[1, 2]")


@pytest.mark.skipif(not hasattr(sys, "set_int_max_str_digits"), reason="no int digit limit on this Python")
def test_an_int_beyond_the_digit_limit_is_refused_as_json_loads_refuses_it():
    text = "9" * 5000
    with pytest.raises(ValueError) as want:
        json.loads(text)
    with pytest.raises(ValueError) as got:
        bale.compact_json(text)
    assert str(got.value) == str(want.value)
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        assert_same_region(text)
    finally:
        sys.set_int_max_str_digits(old)


def test_nesting_deeper_than_json_loads_can_go_is_read():
    depth = 100_000
    region = bale.compact_json("[" * depth + "]" * depth)
    region.verify()
    v = region.root
    for _ in range(depth - 1):
        assert len(v) == 1
        v = v[0]
    assert list(v) == []


def test_a_region_from_json_verifies_and_reads_back(json_corpus):
    for path in json_corpus_files():
        for text in corpus_documents(path)[:50]:
            region = bale.load(bytes(bale.compact_json(text)), verify=True)
            assert bale.thaw(region.root) == json.loads(text) or _has_nan(json.loads(text))


def _has_nan(v):
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, dict):
        return any(_has_nan(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_nan(x) for x in v)
    return False


# Keys from a small set (so key sequences repeat, as records do), with the
# one-character Latin-1 strings CPython shares, and longer ones.
keys = st.sampled_from(["a", "id", "name", "\xe9", "\x80", "a longer key", "k\u20ac", "\U0001f600"])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(["", "\xe9", "\xff", "\x80", "x" * 20, "\u20ac" * 9, "\U0001f600", "\ud800"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.dictionaries(keys, inner, max_size=5),
        # Records of one key sequence: tables, and what ends them.
        st.lists(st.fixed_dictionaries({"id": inner, "name": scalars}), min_size=4, max_size=8),
        st.lists(st.fixed_dictionaries({"v": st.lists(scalars, max_size=3)}), min_size=4, max_size=8),
        # Records holding dicts: nested tables, and what refuses them.
        st.lists(
            st.fixed_dictionaries({"id": scalars, "u": st.fixed_dictionaries({"a": inner, "b": scalars})}),
            min_size=4,
            max_size=8,
        ),
        st.lists(st.fixed_dictionaries({"u": st.one_of(st.none(), st.dictionaries(keys, inner, max_size=2))}),
                 min_size=4, max_size=6),
        # Records holding lists of dicts: rows columns, and what refuses them.
        st.lists(
            st.fixed_dictionaries({"id": scalars, "l": st.lists(st.fixed_dictionaries({"a": inner}), max_size=3)}),
            min_size=4,
            max_size=8,
        ),
        st.lists(st.fixed_dictionaries({"l": st.lists(st.dictionaries(keys, inner, max_size=2), max_size=3)}),
                 min_size=4, max_size=6),
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.booleans())
def test_generated_json_gives_the_bytes_of_json_loads_then_compact(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert_same_region(text)
    if ascii_only:
        assert_same_region(text.encode())


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=8))
def test_generated_items_give_the_file_append_writes(tmp_path_factory, values):
    d = tmp_path_factory.mktemp("w")
    items = [json.dumps(v) for v in values]
    assert write(d / "a.bale", items, "json") == write(d / "b.bale", items, "loads")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='[]{}",:0123456789.eE+-ntrufalsNIiy \\u\xe9', max_size=40))
def test_any_text_is_read_as_json_loads_reads_it_or_refused_as_it_refuses_it(text):
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as e:
        with pytest.raises(type(e)) as got:
            bale.compact_json(text)
        assert str(got.value) == str(e)
        return
    assert bytes(bale.compact_json(text)) == bytes(bale.compact(value))


def test_convert_writes_the_file_of_the_python_path(tmp_path, json_corpus):
    src = json_corpus / "github_events.json"
    out = tmp_path / "events.bale"
    p = subprocess.run([sys.executable, "-m", "bale", "convert", str(src), str(out)], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    items = [json.dumps(v, ensure_ascii=False) for v in json.loads(src.read_bytes())]
    assert out.read_bytes() == write(tmp_path / "b.bale", items, "loads")
