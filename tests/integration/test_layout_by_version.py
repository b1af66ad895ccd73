"""Which readings of CPython's private layouts are on, per interpreter.

Each fast path is compiled in only for the CPython versions whose layout it
was written for (bounded on both sides), and switched on only when its check
at import agrees with the C API. A version outside those bounds, and every
free-threaded build, takes the C-API path for dicts. `make layout-by-version` prints
the table for every interpreter CI tests.
"""

import os
import sys
import sysconfig

import pytest

import bale

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
VERSION = sys.version_info[:2]


@pytest.fixture
def checks():
    checks = bale._bale._layout_checks()
    if checks["fast_paths_switched_off"]:
        pytest.skip("BALE_NO_FAST_PATHS is set: every fast path is off (tests/unit/test_tables.py checks that)")
    return checks


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython layouts only")
def test_int_digits_are_read_from_3_10_to_3_14_with_30_bit_digits(checks):
    # 3.10-3.11 lead with ob_size, 3.12-3.14 with lv_tag; each is compiled
    # for its versions, and switched on only if it reads the C API's value
    # for the probe ints at import (free-threaded builds included: ints are
    # immutable, and their header is the one PyO3 compiles for them).
    expected = (3, 10) <= VERSION < (3, 15) and sys.int_info.bits_per_digit == 30
    assert checks["ints"] is expected, (VERSION, checks)


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython layouts only")
def test_dict_entry_tables_are_read_from_3_11_to_3_14_on_gil_builds_only(checks):
    # PyDictKeysObject as 3.11-3.14 lay it out; a free-threaded build's
    # dicts are read under their own lock, so never directly.
    expected = (3, 11) <= VERSION < (3, 15) and not FREE_THREADED
    assert checks["dict_entries"] is expected, (VERSION, checks)


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython layouts only")
def test_class_slots_are_read_from_3_10_to_3_14(checks):
    # PyTypeObject's tp_getattro, tp_dictoffset, tp_mro and tp_dict decide
    # that reading a record's attributes runs no Python code.
    assert checks["type_reads"] is ((3, 10) <= VERSION < (3, 15)), (VERSION, checks)


@pytest.mark.skipif(FREE_THREADED, reason="the view objects' layout is not asserted on free-threaded builds")
def test_view_objects_are_made_directly_on_gil_builds(checks):
    assert checks["views"] is True, checks


def test_layout_checks_name_every_fast_path():
    assert set(bale._bale._layout_checks()) == {"fast_paths_switched_off", "ints", "views", "dict_entries", "type_reads"}
    assert os.environ.get("BALE_NO_FAST_PATHS", "") in ("", "0") or bale._bale._layout_checks()["fast_paths_switched_off"]
