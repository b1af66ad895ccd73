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
    from _collections_abc import Mapping, Sequence, Set, ValuesView
except ImportError:  # pragma: no cover - other Python implementations
    from collections.abc import Mapping, Sequence, Set, ValuesView

from bale._bale import (
    FORMAT_VERSION,
    CompactError,
    DictValues,
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
    compact_json,
    load,
    memoryview_of,
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
    "Store": "bale._store",
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
ValuesView.register(DictValues)
Set.register(SetView)
Set.register(FrozenSetView)

from bale._bale import __version__  # noqa: E402  (Cargo.toml's workspace version: the one place it is written)


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


def json_default(obj):
    """A ``default=`` hook for ``json.dump``/``json.dumps`` that reads views.

    ``json.dumps(region.root, default=bale.json_default)`` writes list,
    tuple and number-list views as arrays and dict views as objects, one
    level at a time (nested views come back through the hook; nothing is
    thawed whole). Anything else raises json's usual TypeError.
    ``bale.to_json(view)`` makes the same JSON in Rust, much faster.
    """
    if isinstance(obj, (ListView, TupleView, NumberListView)):
        return list(obj)
    if isinstance(obj, DictView):
        return dict(obj._iter_items())
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_VIEWS = (ListView, TupleView, NumberListView, DictView, SetView, FrozenSetView, RecordView)


def _patch_json(encoder):
    """Makes json's TypeError for a view name the ways to write it as JSON.

    ``json.dumps`` accepts only real lists and dicts: a view reaches
    ``JSONEncoder.default``, whose error then says what to use instead.
    Other objects get json's own behaviour, unchanged.
    """
    original = encoder.JSONEncoder.default
    if getattr(original, "_bale_hint", False):
        return

    def default(self, o):
        if isinstance(o, _VIEWS):
            raise TypeError(
                f"Object of type {type(o).__name__} is not JSON serializable: a bale view is not a list or "
                "dict; use bale.to_json(view) for JSON bytes, or json.dumps(value, default=bale.json_default)"
            )
        return original(self, o)

    default._bale_hint = True
    default.__doc__ = original.__doc__
    encoder.JSONEncoder.default = default


class _PatchJsonOnImport:
    """Patches ``json.encoder`` when it is imported after bale: a finder that
    finds nothing itself, asks the others, and wraps the module's execution
    (``import bale`` does not import json, which costs several ms)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "json.encoder":
            return None
        import sys

        if _PatchJsonOnImport in sys.meta_path:
            sys.meta_path.remove(_PatchJsonOnImport)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        exec_module = getattr(spec.loader, "exec_module", None)
        if exec_module is not None:

            def exec_and_patch(module):
                exec_module(module)
                _patch_json(module)

            spec.loader.exec_module = exec_and_patch
        return spec


def _install_json_hint():
    import sys

    encoder = sys.modules.get("json.encoder")
    if encoder is not None:
        _patch_json(encoder)
    elif _PatchJsonOnImport not in sys.meta_path:
        sys.meta_path.insert(0, _PatchJsonOnImport)


_install_json_hint()


def _root_of(region):
    """Unpickling helper: a pickled view arrives as the root of its own region."""
    return region.root


__all__ = [
    "FORMAT_VERSION",
    "CompactError",
    "DictValues",
    "DictView",
    "FormatError",
    "FrozenSetView",
    "ListView",
    "NumberListView",
    "RecordView",
    "Region",
    "SetView",
    "SharedRegion",
    "Store",
    "ThawError",
    "TupleView",
    "Writer",
    "column",
    "compact",
    "compact_json",
    "json_default",
    "load",
    "memoryview_of",
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
