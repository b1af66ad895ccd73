"""bale: compact regions for Python.

Immutable data copied once into one contiguous, position-independent buffer
that is used in place, sent as bytes, shared between processes and
memory-mapped from disk with no (de)serialization, and that the garbage
collector sees as a single object.

Invariants (as in GHC's ``Data.Compact``):

* A region has no references out of it, and nothing in it ever changes.
* ``compact`` copies: later changes to the original do not show in the region.
  By default identity sharing inside the input is not preserved (a subobject
  reachable twice is stored twice; equal strings met again as the same object,
  and dicts with the same keys, are stored once, which is invisible), and a
  cycle is an error. ``compact(obj, share=True)`` stores every object once,
  cycles included, and ``thaw`` gives the same sharing back.
* ``Region.append`` adds data to a region without moving or changing any byte
  already in it: views of the region inside the appended value are referenced,
  not copied, and every earlier handle, view and buffer stays valid.
* Views read the region in place; every read is bounds-checked, so any bytes
  given to ``load``/``open`` give ``FormatError`` rather than a crash.
"""

try:
    # The same classes as collections.abc, without importing the collections
    # package (over 1 ms of `import bale`, which fresh processes pay).
    from _collections_abc import Mapping, Sequence, Set
except ImportError:  # pragma: no cover - other Python implementations
    from collections.abc import Mapping, Sequence, Set

from bale._bale import (
    FORMAT_VERSION,
    CompactError,
    DictView,
    FormatError,
    FrozenSetView,
    ListView,
    NumberListView,
    RecordView,
    Region,
    SetView,
    ThawError,
    TupleView,
    Writer,
    column,
    compact,
    load,
    open,
    region_of,
    thaw,
    to_json,
)

# Sockets and shared memory load on first use (PEP 562): fresh processes
# that only open a file do not pay for them.
_LAZY = {
    "recv": "bale._net",
    "recv_async": "bale._net",
    "send": "bale._net",
    "send_async": "bale._net",
    "SharedRegion": "bale._shm",
    "share": "bale._shm",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'bale' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

Sequence.register(ListView)
Sequence.register(NumberListView)
Sequence.register(TupleView)
Mapping.register(DictView)
Set.register(SetView)
Set.register(FrozenSetView)

__version__ = "0.1.0"


def register(cls, fields=None, *, get=None, make=None):
    """Let bale store instances of ``cls`` as records; returns ``cls``.

    ``fields`` names the values stored for each instance, in order. By
    default they are read with ``getattr(obj, field)`` and an instance is
    rebuilt with ``cls(**dict(zip(fields, values)))``; ``get(obj)`` (an
    iterable of the values, in field order) and ``make(*values)`` replace
    either. Dataclasses, NamedTuples and enums need no registration.
    """
    # bale._types imports dataclasses (and with it inspect and ast): loaded
    # on first use, to keep `import bale` fast.
    from bale._types import register as _register

    return _register(cls, fields, get=get, make=make)


def registered_types():
    """Qualified name -> class, for every class ``thaw`` can rebuild in this process."""
    from bale._types import registered_types as _registered_types

    return _registered_types()


def _root_of(region):
    """Unpickling helper: a pickled view arrives as the root of its own region."""
    return region.root


__all__ = [
    "FORMAT_VERSION",
    "CompactError",
    "DictView",
    "FormatError",
    "FrozenSetView",
    "ListView",
    "NumberListView",
    "RecordView",
    "Region",
    "SetView",
    "SharedRegion",
    "ThawError",
    "TupleView",
    "Writer",
    "column",
    "compact",
    "load",
    "open",
    "recv",
    "recv_async",
    "region_of",
    "register",
    "registered_types",
    "send",
    "send_async",
    "share",
    "thaw",
    "to_json",
]
