"""Record types and other classes bale stores: what to take out of an
instance, and how to rebuild one.

The Rust compactor asks ``describe(cls)`` once per class it meets that is
not a built-in type; the thaw asks ``resolve(...)`` once per record type of
a region. A class is resolved only from this process's registry (classes
registered, or compacted here) or from the ``types`` given to ``thaw``:
nothing named in the bytes is ever imported or looked up elsewhere.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import threading
from typing import Any, Callable, Iterable

FLAVOR_DATACLASS = 1
FLAVOR_NAMEDTUPLE = 2
FLAVOR_REGISTERED = 3
FLAVOR_ENUM = 4
FLAVOR_ENUM_MIXIN = 5

_FLAVOR_NAMES = {
    FLAVOR_DATACLASS: "dataclass",
    FLAVOR_NAMEDTUPLE: "NamedTuple",
    FLAVOR_REGISTERED: "registered class",
    FLAVOR_ENUM: "enum",
    FLAVOR_ENUM_MIXIN: "enum",
}

# describe() answers for numpy values (records are answered by their RecordType)
KIND_NDARRAY = 1
KIND_NPSCALAR = 2


class RecordType:
    """How bale stores and rebuilds instances of one class (the extension
    reads its attributes by name)."""

    __slots__ = ("cls", "name", "flavor", "fields", "attrs", "get", "make")

    def __init__(self, cls: type, name: str, flavor: int, fields: tuple[str, ...],
                 attrs: tuple[str, ...], get: Callable[[Any], Iterable[Any]] | None,
                 make: Callable[..., Any] | None) -> None:
        self.cls = cls
        self.name = name
        self.flavor = flavor
        self.fields = fields
        self.attrs = attrs
        self.get = get
        self.make = make


_lock = threading.Lock()
# Qualified name -> RecordType of the classes this process registered or compacted.
_by_name: dict[str, RecordType] = {}
# Classes registered explicitly (the only way for classes of other kinds).
_registered: dict[type, RecordType] = {}


def qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def _record_type(cls: type) -> RecordType | None:
    rt = _registered.get(cls)
    if rt is not None:
        return rt
    name = qualified_name(cls)
    if isinstance(cls, enum.EnumMeta):
        flavor = FLAVOR_ENUM_MIXIN if issubclass(cls, (int, str)) else FLAVOR_ENUM
        return RecordType(cls, name, flavor, ("name", "value"), ("_name_", "_value_"), None, None)
    if _is_namedtuple(cls):
        fields = tuple(getattr(cls, "_fields"))
        return RecordType(cls, name, FLAVOR_NAMEDTUPLE, fields, fields, None, None)
    if dataclasses.is_dataclass(cls):
        fields = tuple(f.name for f in dataclasses.fields(cls))
        return RecordType(cls, name, FLAVOR_DATACLASS, fields, fields, None, None)
    return None


def describe(cls: type) -> RecordType | int | None:
    """What the compactor needs to store instances of ``cls``: its
    ``RecordType``, ``KIND_NDARRAY`` or ``KIND_NPSCALAR`` for numpy values,
    or None if it cannot."""
    if cls.__module__ == "numpy":
        np = sys.modules.get("numpy")
        if np is not None:
            if issubclass(cls, np.ndarray) and cls is np.ndarray:
                return KIND_NDARRAY
            if issubclass(cls, np.generic):
                return KIND_NPSCALAR
    rt = _record_type(cls)
    if rt is None:
        return None
    # A class compacted here can be thawed here.
    with _lock:
        known = _by_name.get(rt.name)
        if known is None or known.cls is not cls:
            _by_name[rt.name] = rt
    return rt


def register(cls: type, fields: Iterable[str] | None = None, *,
             get: Callable[[Any], Iterable[Any]] | None = None,
             make: Callable[..., Any] | None = None) -> type:
    """Let bale store instances of ``cls`` as records; returns ``cls``.

    ``fields`` names the values stored for each instance, in order. By
    default they are read with ``getattr(obj, field)`` and an instance is
    rebuilt with ``cls(**dict(zip(fields, values)))``; ``get(obj)`` (an
    iterable of the values, in field order) and ``make(*values)`` replace
    either. For dataclasses and NamedTuples every argument is optional.
    Registering a class again replaces its earlier registration.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register() takes a class, not {type(cls).__name__}")
    if isinstance(cls, enum.EnumMeta):
        raise TypeError(f"{cls.__qualname__} is an enum: bale stores enum members without registration")
    default = _record_type(cls) if cls not in _registered else None
    if fields is None:
        fields = _default_fields(cls, default)
    fields = tuple(fields)
    for f in fields:
        if not isinstance(f, str) or not f.isidentifier():
            raise ValueError(f"register({cls.__qualname__}): field names must be identifiers, got {f!r}")
    if len(set(fields)) != len(fields):
        raise ValueError(f"register({cls.__qualname__}): field names repeat: {fields}")
    if get is not None and not callable(get):
        raise TypeError("register(): get must be callable")
    if make is not None and not callable(make):
        raise TypeError("register(): make must be callable")
    if default is not None and get is None and make is None and default.fields == fields:
        rt = default
    else:
        if make is None and default is None:
            make = _keyword_maker(cls, fields)
        flavor = default.flavor if default is not None and get is None and make is None else FLAVOR_REGISTERED
        rt = RecordType(cls, qualified_name(cls), flavor, fields, fields, get, make)
    with _lock:
        _registered[cls] = rt
        _by_name[rt.name] = rt
    return cls


def _default_fields(cls: type, default: RecordType | None) -> tuple[str, ...]:
    if default is not None:
        return default.fields
    struct_fields = getattr(cls, "__struct_fields__", None)  # msgspec.Struct
    if isinstance(struct_fields, tuple):
        return struct_fields
    attrs_fields = getattr(cls, "__attrs_attrs__", None)  # attrs
    if attrs_fields is not None:
        return tuple(a.name for a in attrs_fields)
    model_fields = getattr(cls, "model_fields", None)  # pydantic v2
    if isinstance(model_fields, dict):
        return tuple(model_fields)
    slots = getattr(cls, "__slots__", None)
    if isinstance(slots, (tuple, list)) and slots:
        return tuple(s for s in slots if not s.startswith("__"))
    raise TypeError(
        f"register({cls.__qualname__}): say which fields to store, e.g. register({cls.__qualname__}, ['a', 'b'])")


def _keyword_maker(cls: type, fields: tuple[str, ...]) -> Callable[..., Any]:
    def make(*values: Any) -> Any:
        return cls(**dict(zip(fields, values)))
    make.__qualname__ = f"make_{cls.__qualname__}"
    return make


def registered_types() -> dict[str, type]:
    """Qualified name -> class, for every class ``thaw`` can rebuild in this process."""
    with _lock:
        return {name: rt.cls for name, rt in _by_name.items()}


class TypeMismatch(Exception):
    pass


def resolve(name: str, flavor: int, fields: tuple[str, ...], types: tuple[type, ...] | None) -> RecordType:
    """How to rebuild records of the stored type ``name``.

    Returns its ``RecordType`` (the extension reads ``cls``, ``flavor``,
    ``attrs`` and ``make``); raises ``LookupError`` when no
    class of that name is known, ``TypeMismatch`` when the known class has
    other fields than the stored ones.
    """
    rt = None
    if types:
        for cls in types:
            if isinstance(cls, type) and qualified_name(cls) == name:
                rt = _registered.get(cls) or _record_type(cls)
                if rt is None:
                    raise TypeMismatch(f"{name} is not a dataclass, NamedTuple, enum or registered class")
                break
    if rt is None:
        with _lock:
            rt = _by_name.get(name)
    if rt is None:
        raise LookupError(
            f"cannot thaw a {_FLAVOR_NAMES.get(flavor, 'record')} of class {name}: it is not known in this "
            f"process (bale never imports classes named in data); pass it with thaw(value, types=[...]), "
            f"compact an instance of it first, or bale.register() it")
    if rt.fields != tuple(fields) and rt.flavor not in (FLAVOR_ENUM, FLAVOR_ENUM_MIXIN):
        stored, now = list(fields), list(rt.fields)
        missing = [f for f in stored if f not in now]
        extra = [f for f in now if f not in stored]
        parts = []
        if missing:
            parts.append(f"stored fields the class lacks: {missing}")
        if extra:
            parts.append(f"class fields not stored: {extra}")
        if not parts:
            parts.append(f"field order differs: stored {stored}, class {now}")
        raise TypeMismatch(f"cannot thaw records of {name}: its fields differ from the stored ones ({'; '.join(parts)})")
    if (rt.flavor in (FLAVOR_ENUM, FLAVOR_ENUM_MIXIN)) != (flavor in (FLAVOR_ENUM, FLAVOR_ENUM_MIXIN)):
        raise TypeMismatch(f"cannot thaw {name}: stored as a {_FLAVOR_NAMES.get(flavor)}, known here as a "
                           f"{_FLAVOR_NAMES.get(rt.flavor)}")
    return rt


def flavor_name(flavor: int) -> str:
    return _FLAVOR_NAMES.get(flavor, "record")


def array_parts(arr: Any, scalar: bool) -> tuple:
    """(data, flags, shape, dtype text, item size) of a numpy array or scalar for storing.

    ``data`` supports the buffer protocol and holds the items contiguous, in
    C order, or in F order when flags say so.
    """
    import numpy as np

    from . import CompactError

    if scalar:
        arr = np.asarray(arr)
    dt = arr.dtype
    if dt.hasobject:
        raise CompactError(f"cannot compact a numpy array of dtype {dt} (it holds Python objects)")
    flags = 2 if scalar else 0
    if dt.names is not None or dt.subdtype is not None:
        text = repr(dt.descr)
        flags |= 4
    else:
        text = dt.str
    if arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous:
        flags |= 1
        data = arr
    else:
        data = np.ascontiguousarray(arr)
    return (memoryview(data.reshape(-1, order="F" if flags & 1 else "C").view(np.uint8)), flags,
            tuple(arr.shape), text, dt.itemsize)


_dtype_cache: dict[tuple[str, bool], Any] = {}


def make_dtype(text: str, descr: bool) -> Any:
    """The numpy dtype stored as ``text`` (``dtype.str``, or a literal of ``dtype.descr``)."""
    key = (text, descr)
    dt = _dtype_cache.get(key)
    if dt is None:
        import ast

        import numpy as np

        spec = ast.literal_eval(text) if descr else text
        dt = np.dtype(spec)
        if dt.hasobject:
            raise ValueError("dtype holds Python objects")
        if len(_dtype_cache) < 1024:
            _dtype_cache[key] = dt
    return dt


def _check_text(arr: Any) -> None:
    """Raises if a text (``U``) array or field holds a code point above U+10FFFF."""
    import numpy as np

    dt = arr.dtype
    if dt.kind == "U" and arr.size:
        units = np.ascontiguousarray(arr).view(np.dtype(dt.byteorder.replace("|", "=") + "u4"))
        if (units > 0x10FFFF).any():
            raise ValueError("text array holds a code point above U+10FFFF")
    elif dt.names is not None:
        for name in dt.names:
            _check_text(arr[name])
    elif dt.subdtype is not None and arr.size:
        _check_text(np.ascontiguousarray(arr).view(dt.subdtype[0]))


def check_dtype(text: str, flags: int, itemsize: int) -> None:
    """Raises unless ``text`` is a numpy dtype (without objects) of ``itemsize`` bytes."""
    dt = make_dtype(text, bool(flags & 4))
    if dt.itemsize != itemsize:
        raise ValueError(f"dtype {dt} has items of {dt.itemsize} bytes, the region says {itemsize}")


def array_from(buffer: Any, offset: int, nbytes: int, shape: tuple, text: str, flags: int, copy: bool) -> Any:
    """The array stored at ``offset`` of ``buffer`` (read-only, zero copy unless ``copy``)."""
    import numpy as np

    dt = make_dtype(text, bool(flags & 4))
    count = 1
    for d in shape:
        count *= d
    if count * dt.itemsize != nbytes:
        raise ValueError(f"array of shape {shape} and dtype {dt} needs {count * dt.itemsize} bytes, "
                         f"{nbytes} are stored")
    arr = np.frombuffer(buffer, dtype=dt, count=count, offset=offset) if count else np.empty(0, dtype=dt)
    arr = arr.reshape(shape, order="F" if flags & 1 else "C")
    _check_text(arr)
    if not copy:
        arr.flags.writeable = False
    if flags & 2:
        # A structured scalar would still view the region: copy it out first.
        return (arr.copy() if dt.names is not None else arr)[()]
    if copy:
        return arr.copy(order="K")
    return arr
