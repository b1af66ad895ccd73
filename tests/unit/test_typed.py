"""Typed values: datetimes, decimals, UUIDs, enums, ranges, arrays, numpy
values, number lists and records (dataclasses, NamedTuples, registered
classes), their views, their type table, and thaw's refusal of classes it
does not know."""

from __future__ import annotations

import array
import dataclasses
import datetime as dt
import decimal
import enum
import pickle
import subprocess
import sys
import textwrap
import uuid
import zoneinfo
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bale
from _bale_testlib import thawed_both_ways


roundtrip = thawed_both_ways


def same_typed(a, b):
    """Equal, of the same type, and for times the same zone, fold and repr."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (dt.datetime, dt.time)):
        return a == b and a.fold == b.fold and a.tzinfo == b.tzinfo and repr(a) == repr(b)
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b


# ------------------------------------------------------------------ scalars

ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata", "America/Sao_Paulo"]


@settings(max_examples=300, deadline=None)
@given(st.datetimes(timezones=st.none() | st.timezones() | st.sampled_from([zoneinfo.ZoneInfo(z) for z in ZONES]),
                    allow_imaginary=True),
       st.booleans())
def test_datetimes_round_trip_with_zone_and_fold(value, fold):
    value = value.replace(fold=int(fold))
    if value.tzinfo is not None and not isinstance(value.tzinfo, (dt.timezone, zoneinfo.ZoneInfo)):
        with pytest.raises(bale.CompactError, match="tzinfo"):
            bale.compact(value)
        return
    for got in roundtrip(value):
        assert same_typed(value, got)
        assert got.utcoffset() == value.utcoffset()


def test_dst_fold_keeps_the_later_instant():
    ny = zoneinfo.ZoneInfo("America/New_York")
    first = dt.datetime(2021, 11, 7, 1, 30, tzinfo=ny)
    second = first.replace(fold=1)
    a, b = bale.thaw(bale.compact([first, second]).root)
    assert (a.fold, b.fold) == (0, 1)
    assert b.utcoffset() - a.utcoffset() == dt.timedelta(hours=-1)
    assert b.timestamp() - a.timestamp() == 3600


@settings(max_examples=200, deadline=None)
@given(st.times(timezones=st.none() | st.timezones()), st.dates(), st.timedeltas())
def test_times_dates_and_timedeltas(t, d, delta):
    value = [t, d, delta]
    if t.tzinfo is not None and not isinstance(t.tzinfo, (dt.timezone, zoneinfo.ZoneInfo)):
        return
    for got in roundtrip(value):
        assert all(same_typed(a, b) for a, b in zip(value, got))


def test_fixed_offsets_keep_their_names():
    named = dt.timezone(dt.timedelta(hours=5, minutes=30), "IST")
    unnamed = dt.timezone(dt.timedelta(hours=-2, seconds=1, microseconds=5))
    for tz in (named, unnamed, dt.timezone.utc):
        value = dt.datetime(2020, 5, 6, 7, 8, 9, 10, tzinfo=tz)
        for got in roundtrip(value):
            assert got.tzname() == value.tzname() and same_typed(value, got)


@settings(max_examples=300, deadline=None)
@given(st.decimals(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [decimal.Decimal("sNaN"), decimal.Decimal("-sNaN42"), decimal.Decimal("NaN123"), decimal.Decimal("-0E-30"),
     decimal.Decimal("1E+999999"), decimal.Decimal("-Infinity"), decimal.Decimal("3.14159265358979323846264338327950288")]))
def test_decimals_keep_every_digit_sign_and_exponent(value):
    for got in roundtrip(value):
        assert str(got) == str(value)
        assert got.as_tuple() == value.as_tuple()


@settings(max_examples=100, deadline=None)
@given(st.uuids(), st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1),
       st.integers(-2**63, 2**63 - 1).filter(bool))
def test_uuids_and_ranges(u, start, stop, step):
    value = [u, range(start, stop, step)]
    for got in roundtrip(value):
        assert got == value and type(got[0]) is uuid.UUID and type(got[1]) is range


def test_big_ranges_are_refused_with_the_path():
    with pytest.raises(bale.CompactError, match=r"root\[1\].*64 bits"):
        bale.compact([0, range(2**70)])


@pytest.mark.parametrize("code, items", [
    ("b", [-1, 2]), ("B", [0, 255]), ("h", [-300]), ("H", [60000]), ("i", [-1, 7]), ("I", [2**32 - 1]),
    ("l", [-(2**63)]), ("L", [2**64 - 1]), ("q", [5]), ("Q", [6]), ("f", [1.5]), ("d", [2.25, -0.0]), ("u", "héllo"),
])
def test_array_arrays(code, items):
    value = array.array(code, items)
    for got in roundtrip(value):
        assert type(got) is array.array and got.typecode == code and got == value


@pytest.mark.parametrize("value", [
    np.float64(1.5), np.float32(-2.5), np.int8(-3), np.uint64(2**64 - 1), np.bool_(True), np.complex128(1 + 2j),
    np.datetime64("2020-01-02T03:04:05.123456789"), np.timedelta64(5, "ms"), np.str_("héllo"), np.bytes_(b"ab"),
])
def test_numpy_scalars(value):
    for got in roundtrip(value):
        assert type(got) is type(value) and got == value and got.dtype == value.dtype


def test_enum_members_come_back_as_themselves():
    class Color(enum.Enum):
        RED = 1
        BLUE = "b"

    class Level(enum.IntEnum):
        LOW = 1

    class Perm(enum.Flag):
        R = 4
        W = 2

    if hasattr(enum, "StrEnum"):
        class Mode(enum.StrEnum):
            FAST = "fast"
    else:  # 3.10 has no StrEnum (new in 3.11): the str mixin it is made of
        class Mode(str, enum.Enum):
            FAST = "fast"

    value = [Color.RED, Color.BLUE, Level.LOW, Perm.R | Perm.W, Perm.R, Mode.FAST, Color.RED]
    for got in roundtrip(value):
        assert all(a is b for a, b in zip(got, value))
    root = bale.compact(value).root
    assert root[0] is Color.RED and root[3] == Perm.R | Perm.W
    assert bale.to_json(bale.compact([Level.LOW, Mode.FAST]).root) == b'[1,"fast"]'
    with pytest.raises(ValueError, match="Color has no JSON form"):
        bale.to_json(root)


def test_members_are_stored_once():
    class E(enum.Enum):
        A = "a value long enough to be stored out of line"

    one = bale.compact([E.A]).nbytes
    many = bale.compact([E.A] * 1000).nbytes
    assert many - one < 1000 * 8 + 64  # one slot per reference, one member


def test_hashable_typed_keys_are_found():
    d = {dt.date(2020, 1, 1): "d", dt.datetime(2020, 1, 1, 5): "dt", dt.time(3): "t", dt.timedelta(1): "td",
         uuid.UUID(int=5): "u", 1: "one"}
    view = bale.compact(d).root
    for k, v in d.items():
        assert view[k] == v
    assert dt.date(2021, 1, 1) not in view
    assert dt.datetime(2020, 1, 1, 5, tzinfo=dt.timezone.utc) not in view  # aware != naive
    assert bale.thaw(view) == d
    assert bale.compact(frozenset({dt.date(2020, 1, 1)})).root == frozenset({dt.date(2020, 1, 1)})
    # A Decimal equal to a stored int key finds it, as in a dict.
    assert view[decimal.Decimal(1)] == "one"


def test_unhashable_or_inexact_keys_are_refused_clearly():
    with pytest.raises(bale.CompactError, match=r"aware datetime.*key"):
        bale.compact({dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc): 1})
    with pytest.raises(bale.CompactError, match="Decimal cannot be a dict key"):
        bale.compact({decimal.Decimal(1): 1})


def test_unsupported_tzinfo_is_refused_naming_it():
    class Custom(dt.tzinfo):
        def utcoffset(self, d):
            return dt.timedelta(0)

    with pytest.raises(bale.CompactError, match=r"root\[0\]: .*Custom"):
        bale.compact([dt.datetime(2020, 1, 1, tzinfo=Custom())])


# ---------------------------------------------------------------- numpy

@pytest.mark.parametrize("arr", [
    np.arange(24, dtype=np.int32).reshape(2, 3, 4),
    np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    np.arange(100)[::3],
    np.arange(20.0).reshape(4, 5)[:, 1:3],
    np.zeros((0, 3)),
    np.array(3.5),
    np.array([True, False]),
    np.array(["a", "héllo"]),
    np.array([b"x", b"yz"]),
    np.array(["2020-01-01", "NaT"], dtype="datetime64[s]"),
    np.array([1 + 2j], dtype=np.complex64),
    np.array([(1, 2.5, b"ab")], dtype=[("a", "<i4"), ("b", ">f8"), ("c", "S2")]),
    np.array([[1, 2]], dtype=">u2"),
    np.zeros(3, dtype=np.dtype([("x", "<f4", (2,))])),
])
def test_arrays_are_read_in_place(arr):
    region = bale.compact({"a": arr, "pad": "x"})
    view = region.root["a"]
    assert type(view) is np.ndarray and view.dtype == arr.dtype and view.shape == arr.shape
    assert view.tobytes() == arr.tobytes()
    assert not view.flags.writeable
    if view.size:
        assert np.shares_memory(view, np.frombuffer(region, dtype=np.uint8))
        assert view.__array_interface__["data"][0] % 64 == 0
    thawed = bale.thaw(region.root)["a"]
    assert thawed.flags.writeable and not np.shares_memory(thawed, np.frombuffer(region, dtype=np.uint8))
    assert same_typed(thawed, arr)
    if arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous:
        assert view.flags.f_contiguous


def test_array_data_offsets_are_multiples_of_64_in_files(tmp_path):
    arrays = [np.arange(n, dtype=np.uint8) for n in range(1, 70, 7)]
    path = tmp_path / "a.bale"
    bale.compact(arrays).save(path)
    region = bale.open(path, verify=True)
    for a, v in zip(arrays, region.root):
        assert np.array_equal(a, v) and v.ctypes.data % 64 == 0


@pytest.mark.parametrize("size", [1 << 10, 3 << 20])
def test_large_arrays_are_aligned_and_the_region_still_grows(size):
    # A large allocation starts 16 bytes into a page: the region is moved up
    # to a 64-byte boundary inside it; appends then write past it as usual.
    arr = np.arange(size, dtype=np.float32)
    region = bale.compact({"a": arr})
    view = region.root["a"]
    assert view.ctypes.data % 64 == 0 and np.array_equal(view, arr)
    assert np.frombuffer(region, dtype=np.uint8).ctypes.data % 64 == 0
    assert region.verify() is None
    grown = region.append({"b": [1, 2], "a": view})
    assert np.array_equal(grown.root["a"], arr) and grown.root["b"] == [1, 2]
    assert np.array_equal(region.root["a"], arr)
    assert bale.load(bytes(grown), verify=True).root["b"] == [1, 2]


def test_object_arrays_are_refused():
    with pytest.raises(bale.CompactError, match=r"root\[1\].*object"):
        bale.compact([1, np.array([1, "a"], dtype=object)])


def test_ndarray_subclasses_are_not_taken_for_arrays():
    class Sub(np.ndarray):
        pass

    with pytest.raises(bale.CompactError, match="Sub"):
        bale.compact(np.zeros(2).view(Sub))


# --------------------------------------------------------- number lists

def test_number_lists_are_raw_numbers_read_in_place():
    ints = list(range(-5, 1000))
    floats = [x / 7 for x in range(1000)]
    region = bale.compact({"i": ints, "f": floats})
    vi, vf = region.root["i"], region.root["f"]
    assert type(vi) is bale.NumberListView and type(vf) is bale.NumberListView
    ai, af = np.asarray(vi), np.asarray(vf)
    assert ai.dtype == np.int64 and af.dtype == np.float64
    assert ai.tolist() == ints and af.tolist() == floats
    buf = np.frombuffer(region, dtype=np.uint8)
    assert np.shares_memory(ai, buf) and np.shares_memory(af, buf)
    m = memoryview(vf)
    assert m.format == "d" and m.itemsize == 8 and m.readonly and m.shape == (1000,)
    # About 8 bytes per item.
    assert region.nbytes < 64 + 2000 * 8 + 200
    # Still a Sequence of Python numbers.
    assert vi[3] == -2 and type(vi[3]) is int and vi[-1] == 999 and vi[2:5] == [-3, -2, -1]
    assert list(vi) == ints and list(reversed(vf)) == floats[::-1]
    assert 500 in vi and vi.index(10) == 15 and vi.count(7) == 1
    assert vi == ints and vf == floats and vi != floats
    assert repr(bale.compact([1.5, 2.0]).root) == "[1.5, 2.0]"
    thawed = bale.thaw(region.root)
    assert type(thawed["i"]) is list and thawed == {"i": ints, "f": floats}
    with pytest.raises(IndexError):
        vi[5000]
    with pytest.raises(TypeError, match="read-only"):
        memoryview(vi).cast("B")[0:1] = b"x"


@pytest.mark.parametrize("value", [[True, 1], [1, 2.0], [2**63, 1], [1, 2**63], [1.5, None], [1, "a"], [False]])
def test_lists_that_are_not_homogeneous_numbers_keep_their_types(value):
    view = bale.compact(value).root
    assert type(view) is bale.ListView
    got = bale.thaw(view)
    assert got == value and [type(x) for x in got] == [type(x) for x in value]


def test_number_lists_keep_identity_with_share():
    a = [1.5, 2.5]
    got = bale.thaw(bale.compact([a, a], share=True).root)
    assert got[0] is got[1] and got[0] == a


# ---------------------------------------------------------------- records

@dataclasses.dataclass
class Plain:
    x: int
    y: str = "y"


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: tuple
    b: float = 0.5


@dataclasses.dataclass(slots=True)
class Slotted:
    p: list
    q: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class WithInitFalse:
    a: int
    computed: int = dataclasses.field(init=False, default=0)

    def __post_init__(self):
        self.computed = self.a * 2


@dataclasses.dataclass
class Tree:
    left: object
    right: object


class Point(NamedTuple):
    x: float
    y: float
    label: str = ""


def test_dataclasses_and_namedtuples_round_trip():
    w = WithInitFalse(3)
    w.computed = 99  # not what __post_init__ would make: thaw must not call it
    value = [Plain(1), Frozen((1, "a"), 2.5), Slotted([1, [2]], {"k": Plain(2, "z")}), w, Point(1.0, 2.0, "p"),
             Tree(Tree(None, Point(0.0, 0.0)), [Frozen(())])]
    for got in roundtrip(value):
        assert got == value
        assert [type(x) for x in got] == [type(x) for x in value]
        assert got[3].computed == 99


@settings(max_examples=100, deadline=None)
@given(st.builds(Plain, st.integers(), st.text()), st.builds(Frozen, st.tuples(st.integers()), st.floats(allow_nan=False)),
       st.builds(Point, st.floats(allow_nan=False), st.floats(allow_nan=False), st.text()))
def test_record_round_trips_hypothesis(a, b, c):
    for got in roundtrip([a, b, c, {"nested": [a, c]}]):
        assert got == [a, b, c, {"nested": [a, c]}]


def test_record_views_read_like_their_objects():
    root = bale.compact([Plain(7, "seven"), Point(1.5, 2.5, "pt"), Slotted([1, 2])]).root
    p, pt, s = root
    assert type(p) is bale.RecordView
    assert p.x == 7 and p.y == "seven" and p._fields == ("x", "y")
    assert p.__bale_type__ == f"{__name__}.Plain"
    assert pt.x == 1.5 and pt[1] == 2.5 and pt[-1] == "pt" and pt[:2] == (1.5, 2.5) and len(pt) == 3
    assert tuple(pt) == (1.5, 2.5, "pt")
    x, y, label = pt
    assert (x, y, label) == (1.5, 2.5, "pt")
    assert type(s.p) is bale.NumberListView and s.q == {}
    assert p == Plain(7, "seven") and p != Plain(7, "other") and Plain(7, "seven") == p
    assert pt == Point(1.5, 2.5, "pt") and pt == (1.5, 2.5, "pt")
    assert repr(p) == "Plain(x=7, y='seven')" and repr(pt) == "Point(x=1.5, y=2.5, label='pt')"
    assert repr(p) == repr(Plain(7, "seven"))
    with pytest.raises(AttributeError, match="'Plain' record has no field 'z'"):
        p.z
    with pytest.raises(TypeError, match="not subscriptable"):
        p[0]
    assert hash(pt) == hash(Point(1.5, 2.5, "pt"))
    assert pickle.loads(pickle.dumps(p)) == p


def test_registered_classes():
    class Money:
        def __init__(self, amount, currency):
            self.amount = amount
            self.currency = currency

        def __eq__(self, other):
            return (self.amount, self.currency) == (other.amount, other.currency)

    with pytest.raises(bale.CompactError, match=r"root\[0\]: cannot compact .*Money"):
        bale.compact([Money(1, "EUR")])
    bale.register(Money, ["amount", "currency"])
    got = bale.thaw(bale.compact([Money(decimal.Decimal("1.50"), "EUR")]).root)
    assert got == [Money(decimal.Decimal("1.50"), "EUR")] and type(got[0]) is Money

    class Opaque:
        def __init__(self, secret):
            self._secret = secret

    bale.register(Opaque, ["secret"], get=lambda o: (o._secret,), make=lambda s: Opaque(s))
    view = bale.compact(Opaque([1, 2])).root
    assert view.secret == [1, 2]
    assert bale.thaw(view)._secret == [1, 2]

    bale.register(Opaque, ["secret"], get=lambda o: (1, 2), make=lambda s: Opaque(s))
    with pytest.raises(bale.CompactError, match="gave 2 values for 1 fields"):
        bale.compact(Opaque(0))
    with pytest.raises(ValueError, match="identifiers"):
        bale.register(Money, ["not valid"])
    with pytest.raises(TypeError, match="fields"):
        bale.register(type("NoFields", (), {}))


def test_a_record_cannot_contain_itself():
    t = Tree(None, None)
    t.left = t
    with pytest.raises(bale.CompactError, match="cycle"):
        bale.compact(t)
    with pytest.raises(bale.CompactError, match="cannot contain itself"):
        bale.compact(t, share=True)
    loop = [1]
    holder = Tree(loop, None)
    loop.append(holder)
    with pytest.raises(bale.CompactError, match=r"root.left\[1\]: .*Tree"):
        bale.compact(holder, share=True)
    # A cycle that does not pass through the record is fine with share=True.
    ring = [1]
    ring.append(ring)
    got = bale.thaw(bale.compact(Tree(ring, ring), share=True).root)
    assert got.left is got.right and got.left[1] is got.left


def test_shared_records_keep_identity():
    p = Plain(1)
    got = bale.thaw(bale.compact([p, p, [p]], share=True).root)
    assert got[0] is got[1] is got[2][0]


def test_type_table_lists_each_type_once():
    region = bale.compact([Plain(i) for i in range(1000)] + [Point(0.0, 1.0)] * 3)
    assert region.types() == [(f"{__name__}.Plain", "dataclass", ("x", "y"), 1000),
                              (f"{__name__}.Point", "NamedTuple", ("x", "y", "label"), 3)]
    stats = bale._bale.region_stats(region)
    assert stats["kinds"]["record types"][0] == 2
    # Field names are stored once: 1000 records cost a header and two slots each.
    assert stats["kinds"]["records"] == (1003, 1000 * 24 + 3 * 32)


# ------------------------------------------- classes unknown to the reader

CHILD_PRELUDE = """
import sys, bale
region = bale.load(sys.stdin.buffer.read(), verify=True)
"""


def run_child(code, data):
    return subprocess.run([sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(code)], input=data,
                          capture_output=True, timeout=60)


def module_with(src, tmp_path, name):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(src))
    sys.path.insert(0, str(tmp_path))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(tmp_path))


def test_thaw_in_another_process_needs_the_class(tmp_path):
    mod = module_with("""
        import dataclasses
        @dataclasses.dataclass
        class Order:
            id: int
            items: list
    """, tmp_path, "shop_models_a")
    data = bytes(bale.compact({"o": mod.Order(1, ["tea"])}))
    # Without the class: views work, thaw names the class and never imports it.
    p = run_child("""
        o = region.root["o"]
        print(o.id, list(o.items), o)
        assert "shop_models_a" not in sys.modules
        try:
            bale.thaw(region.root)
        except bale.ThawError as e:
            print("ThawError:", e)
        assert "shop_models_a" not in sys.modules
    """, data)
    out = p.stdout.decode()
    assert p.returncode == 0, p.stderr.decode()
    assert "1 ['tea'] Order(id=1, items=['tea'])" in out
    assert "ThawError: cannot thaw a dataclass of class shop_models_a.Order" in out
    assert "never imports" in out
    # With types=[...]: rebuilt.
    p = run_child(f"""
        sys.path.insert(0, {str(tmp_path)!r})
        import shop_models_a
        got = bale.thaw(region.root, types=[shop_models_a.Order])
        assert got == {{"o": shop_models_a.Order(1, ["tea"])}}, got
        print("ok")
    """, data)
    assert p.returncode == 0 and b"ok" in p.stdout, p.stderr.decode()


def test_thaw_refuses_a_class_whose_fields_changed(tmp_path):
    @dataclasses.dataclass
    class Order:
        id: int
        items: list

    data = bale.compact([Order(1, [])])
    Order.__qualname__ = "Order"

    @dataclasses.dataclass
    class Order2:
        id: int
        total: float

    Order2.__qualname__ = Order.__qualname__
    Order2.__module__ = Order.__module__
    Order2.__name__ = "Order"
    region = bale.compact([Order(1, [])])
    with pytest.raises(bale.ThawError, match=r"fields differ.*stored fields the class lacks: \['items'\].*not stored: \['total'\]"):
        bale.thaw(region.root, types=[Order2])
    assert bale.thaw(data.root, types=[Order]) == [Order(1, [])]


def test_thaw_types_must_be_classes():
    with pytest.raises(TypeError, match="takes classes"):
        bale.thaw(bale.compact([1]).root, types=["Order"])


# ------------------------------------------------------- bytes and errors

def every_kind():
    class Kind(enum.Enum):
        A = 1

    return {
        "date": dt.date(2020, 2, 29), "dt": dt.datetime(2021, 3, 4, 5, 6, 7, 8, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")),
        "t": dt.time(1, tzinfo=dt.timezone(dt.timedelta(hours=1), "X")), "td": dt.timedelta(-1, 5, 6),
        "dec": decimal.Decimal("-1.5E-7"), "uuid": uuid.UUID(int=1), "range": range(1, 10, 3),
        "array": array.array("i", [1, 2]), "np": np.arange(6.0).reshape(2, 3), "nps": np.int16(-4),
        "ints": [1, 2, 3], "floats": [0.5, -1.0], "rec": Plain(1, "x"), "pt": Point(1.0, 2.0), "enum": Kind.A,
        "keys": {dt.date(2020, 1, 1): 1, uuid.UUID(int=9): 2},
    }


def test_every_kind_survives_transplant_compacted_and_append():
    value = every_kind()
    region = bale.compact(value)
    again = bale.compact(region.root)  # a copy from another region, natively
    assert bytes(again) == bytes(region)
    grown = region.append([region.root, region.root["rec"]])
    first = bale.thaw(grown.root)[0]
    assert all(same_typed(a, b) for a, b in zip(first.values(), bale.thaw(region.root).values()))
    compacted = grown.compacted()
    compacted.verify()
    got = bale.thaw(compacted.root)
    assert all(same_typed(a, b) for a, b in zip(got[0].values(), value.values()) if not isinstance(a, enum.Enum))


def test_to_json_of_typed_values():
    assert bale.to_json(bale.compact({"p": Point(1.0, 2.0), "l": [1.5, 2], "f": [0.5]}).root) == \
        b'{"p":[1.0,2.0,""],"l":[1.5,2],"f":[0.5]}'
    for value, name in [(dt.date(2020, 1, 1), "date"), (decimal.Decimal(1), "Decimal"), (Plain(1), "Plain"),
                        (np.zeros(2), "ndarray")]:
        with pytest.raises(ValueError, match=rf"root\[0\]: a .*{name} has no JSON form"):
            bale.to_json(bale.compact([value]).root)


def test_corrupted_typed_objects_give_format_errors():
    """Every byte of a region with every kind, flipped: a bale error or a
    value, never a crash (the fuzz suite does this at scale)."""
    data = bytearray(bytes(bale.compact(every_kind())))
    errors = 0
    for i in range(64, len(data)):
        for bit in (0x01, 0x80):
            data[i] ^= bit
            try:
                region = bale.load(bytes(data))
                try:
                    bale.thaw(region.root)
                    region.verify()
                except (bale.FormatError, bale.ThawError):
                    errors += 1
            except bale.FormatError:
                errors += 1
            finally:
                data[i] ^= bit
    assert errors > 0


def test_readme_example_runs(tmp_path):
    """The README's example of typed values runs as a script, as written."""
    import pathlib

    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("## Types beyond JSON")[1].split("```python")[1].split("```")[0]
    script = tmp_path / "example.py"
    script.write_text(block + "\nprint(t.price, t.side, region.root['path'][1].y, w.shape, region.types()[0][0])\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["101.25", "Side.BUY", "2.5", "(1000,", "64)", "__main__.Trade"]


def test_import_bale_does_not_load_the_typed_machinery():
    """dataclasses, decimal, uuid and numpy load on first use, not on `import bale`."""
    code = "import sys, bale; print([m for m in ('dataclasses', 'inspect', 'decimal', 'uuid', 'numpy', 'zoneinfo') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_bale_info_lists_the_type_table(tmp_path):
    path = tmp_path / "t.bale"
    bale.compact([Plain(i) for i in range(3)] + [Point(1.0, 2.0)]).save(path)
    out = subprocess.run([sys.executable, "-m", "bale", "info", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "record types: 2" in out.stdout
    assert f"3 x {__name__}.Plain (dataclass: x, y)" in out.stdout


def test_registered_msgspec_structs_and_attrs_classes_use_their_own_fields():
    msgspec = pytest.importorskip("msgspec")
    attrs = pytest.importorskip("attrs")

    class Item(msgspec.Struct):
        name: str
        qty: int = 1

    @attrs.define
    class Box:
        items: list
        label: str

    for cls in (Item, Box):
        with pytest.raises(bale.CompactError, match=rf"root\[0\]: cannot compact {cls.__name__}"):
            bale.compact([cls(*(["x"] if cls is Item else [[], "b"]))])
    bale.register(Item)
    bale.register(Box)
    value = Box([Item("tea", 2), Item("cup")], "kitchen")
    view = bale.compact(value).root
    assert view._fields == ("items", "label") and view.items[0]._fields == ("name", "qty")
    assert view.items[1].name == "cup" and view == value
    got = bale.thaw(view)
    assert got == value and type(got.items[0]) is Item


def test_small_int_pairs_are_held_in_their_slot():
    value = [(1, 2), (-(2**28), 2**28 - 1), (2**28, 0), (1, "x"), (True, 1), ((1, 2), (3, 4))]
    region = bale.compact(value)
    root = region.root
    assert type(root[0]) is tuple and root[0] == (1, 2) and bale.region_of(root[0]) is None
    assert type(root[2]) is bale.TupleView and type(root[3]) is bale.TupleView  # out of range, not ints
    assert type(root[4]) is bale.TupleView  # a bool is not stored as an int
    assert type(root[5]) is bale.TupleView and root[5][1] == (3, 4)
    got = bale.thaw(root)
    assert got == value and [type(x) for x in got] == [tuple] * 6 and type(got[4][0]) is bool
    # Equal, and hashing alike, to stored tuples: as keys and set elements too.
    keys = bale.compact({(1, 2): "a", frozenset({(3, 4)}): "b"}).root
    assert keys[(1, 2)] == "a" and keys[root[0]] == "a" and keys[frozenset({(3, 4)})] == "b"
    assert bale.compact((7, 8)).root == (7, 8) and hash(bale.compact([(7, 8)]).root[0]) == hash((7, 8))
    assert bale.to_json(bale.compact([(1, -2)]).root) == b"[[1,-2]]"
    # 8 bytes per pair: 1,000 pairs in a list cost their slots only.
    assert bale.compact([(i, i) for i in range(1000)]).nbytes < 64 + 8 + 8 * 1000 + 64
