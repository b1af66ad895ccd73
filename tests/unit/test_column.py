"""bale.column: one field of every record, natively."""

import numpy as np
import pytest

import bale


def records():
    return bale.compact([{"id": i, "score": i / 4, "name": f"n{i}", "mixed": i if i % 2 else float(i), "opt": None if i == 3 else i} for i in range(1000)])


def test_numeric_fields_become_numpy_arrays():
    root = records().root
    ids = bale.column(root, "id")
    assert isinstance(ids, np.ndarray) and ids.dtype == np.int64
    assert ids.tolist() == list(range(1000))
    scores = bale.column(root, "score")
    assert scores.dtype == np.float64 and scores.tolist() == [i / 4 for i in range(1000)]
    mixed = bale.column(root, "mixed")
    assert mixed.dtype == np.float64 and mixed.tolist() == [float(i) for i in range(1000)]


def test_other_fields_become_lists():
    root = records().root
    assert bale.column(root, "name") == [f"n{i}" for i in range(1000)]
    opt = bale.column(root, "opt")
    assert isinstance(opt, list) and opt[3] is None and opt[4] == 4
    r = bale.compact([{"k": ["x", 1]}, {"k": {"a": 1}}, {"k": [1, 2]}])
    col = bale.column(r.root, "k")
    assert col == [["x", 1], {"a": 1}, [1, 2]] and isinstance(col[0], bale.ListView)
    assert isinstance(col[2], bale.NumberListView)


def test_records_with_different_key_orders_and_tuples():
    r = bale.compact(({"a": 1, "b": 2}, {"b": 3, "a": 4}, {"c": 0, "a": 5}))
    assert bale.column(r.root, "a").tolist() == [1, 4, 5]


def test_errors_name_the_record():
    r = bale.compact([{"a": 1}, {"b": 2}])
    with pytest.raises(KeyError, match="item 1 has no key 'a'"):
        bale.column(r.root, "a")
    r = bale.compact([{"a": 1}, 5])
    with pytest.raises(TypeError, match="item 1 is not a dict"):
        bale.column(r.root, "a")
    with pytest.raises(TypeError, match="list or tuple view"):
        bale.column([{"a": 1}], "a")
    with pytest.raises(TypeError):
        bale.column(bale.compact({"a": 1}).root, "a")


def test_empty_list_gives_an_empty_array():
    col = bale.column(bale.compact([]).root, "a")
    assert len(col) == 0
