import os
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, Sequence, Set, ValuesView
from typing import Any, SupportsIndex, final, overload

from typing_extensions import Buffer, Self, disjoint_base

FORMAT_VERSION: int
HEADER_LEN: int
__version__: str

__all__ = [
    "CompactError",
    "DictValues",
    "DictView",
    "FORMAT_VERSION",
    "FormatError",
    "FrozenSetView",
    "HEADER_LEN",
    "ListView",
    "NumberListView",
    "RecordView",
    "Region",
    "SetView",
    "ThawError",
    "TupleView",
    "Writer",
    "_compact_by_frames",
    "_layout_checks",
    "_panic_for_test",
    "_read_every_value",
    "_open_index",
    "_save_index",
    "_open_segment",
    "_oldest_reader",
    "_reader_lock",
    "_extern_segments",
    "_extern_targets",
    "_Segments",
    "_StoreReads",
    "_store_get",
    "_xxh3",
    "__version__",
    "announced_length",
    "column",
    "compact",
    "compact_json",
    "load",
    "memoryview_of",
    "open",
    "region_of",
    "region_stats",
    "stream_json",
    "thaw",
    "to_json",
]

class CompactError(TypeError):
    """A value bale cannot compact; the message names its type and path."""

class FormatError(ValueError):
    """Bytes that are not a valid bale region."""

class ThawError(TypeError):
    """A valid stored value this process cannot rebuild: a record of an unknown or changed class, or an unknown time zone."""

@final
class Region:
    """A compact region: one immutable, position-independent buffer.

    Use it as a context manager (or call ``close()``) to stop reading through
    the handle. The memory (a file mapping, a loaded buffer, a shared-memory
    mapping) is released when the handle and every view, memoryview and numpy
    array taken from it are gone, never while one of them can still read it.
    """

    @property
    def root(self) -> Any:
        """The root value: a read-only view for containers, a plain value for scalars."""
    @property
    def nbytes(self) -> int: ...
    def verify(self) -> None:
        """Check the whole structure and the checksum; raise FormatError."""
    def types(self) -> list[tuple[str, str, tuple[str, ...], int]]:
        """The type table: (qualified name, kind, field names, records) per record type (O(n) walk)."""
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the region to ``path`` atomically: the file appears complete (fsynced) or not at all.

        A process killed while saving leaves no temporary file (Linux: an
        unnamed ``O_TMPFILE``; elsewhere the next save to ``path`` removes
        it). Errors are ``OSError`` with ``errno`` and ``filename`` set.
        """
    def __bytes__(self) -> bytes: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __release_buffer__(self, buffer: memoryview, /) -> None: ...
    def __reduce_ex__(self, protocol: SupportsIndex, /) -> tuple[Any, ...]: ...
    def append(self, obj: object, *, share: bool = False) -> Region:
        """Copy ``obj`` into this region's memory; return a handle whose root is the copy."""
    # Store support (bale._store): a segment's handles and the bytes appends wrote.
    @property
    def _layout(self) -> tuple[int, int, int]: ...
    @property
    def _tail(self) -> int: ...
    def _handle(self, len: int, root: int, flags: int) -> Region: ...
    def _placed(self, segments: _Segments, segment: int) -> Region: ...
    def _store_append(
        self, obj: object, segments: _Segments, allowed: dict[int, Any], *, share: bool = False
    ) -> tuple[Region, list[int] | None]: ...
    def _value_at(self, slot: int) -> Any: ...
    def _span(self, start: int, end: int) -> bytes: ...
    def _item_slots(self) -> list[int]: ...
    def compacted(self) -> Region:
        """A fresh region holding only what this handle's root reaches."""
    def close(self) -> None:
        """Refuse new reads through this handle (``ValueError: region is closed``).

        ``root``, buffers, ``bytes()``, ``save``, ``append``, ``compacted``,
        ``verify``, ``types``, pickling, ``thaw``/``to_json`` of the handle
        refuse; ``nbytes`` and ``closed`` answer. Views, memoryviews and numpy
        arrays taken before keep working and keep the memory alive: it is
        released when the last of them and the handle are gone. Idempotent.
        """
    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called on this handle."""
    def __enter__(self) -> Region: ...
    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        """Close the handle (exceptions propagate)."""
    def __copy__(self) -> Region: ...
    def __deepcopy__(self, memo: Any, /) -> Region: ...

@final
class ListView(Sequence[Any]):
    @overload
    def __getitem__(self, index: SupportsIndex, /) -> Any: ...
    @overload
    def __getitem__(self, index: slice, /) -> list[Any]: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __reversed__(self) -> Iterator[Any]: ...
    def __contains__(self, value: object, /) -> bool: ...
    def index(self, value: Any, start: SupportsIndex = 0, stop: SupportsIndex = ..., /) -> int: ...
    def count(self, value: Any, /) -> int: ...
    def __add__(self, other: list[Any] | ListView | NumberListView, /) -> list[Any]:
        """A native list, as ``list + list`` gives (nested containers stay views, as in ``view[:]``)."""
    def __radd__(self, other: list[Any], /) -> list[Any]: ...
    def __mul__(self, n: SupportsIndex, /) -> list[Any]: ...
    def __rmul__(self, n: SupportsIndex, /) -> list[Any]: ...

@final
class TupleView(Sequence[Any]):
    @overload
    def __getitem__(self, index: SupportsIndex, /) -> Any: ...
    @overload
    def __getitem__(self, index: slice, /) -> tuple[Any, ...]: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __reversed__(self) -> Iterator[Any]: ...
    def __contains__(self, value: object, /) -> bool: ...
    def index(self, value: Any, start: SupportsIndex = 0, stop: SupportsIndex = ..., /) -> int: ...
    def count(self, value: Any, /) -> int: ...
    def __hash__(self) -> int: ...
    def __add__(self, other: tuple[Any, ...] | TupleView, /) -> tuple[Any, ...]:
        """A native tuple, as ``tuple + tuple`` gives (nested containers stay views)."""
    def __radd__(self, other: tuple[Any, ...], /) -> tuple[Any, ...]: ...
    def __mul__(self, n: SupportsIndex, /) -> tuple[Any, ...]: ...
    def __rmul__(self, n: SupportsIndex, /) -> tuple[Any, ...]: ...

@final
class NumberListView(Sequence[Any]):
    """A list stored as raw int64 or float64 numbers (int32 in a hand-made region's INT32_LIST); exports them as a read-only buffer."""

    @overload
    def __getitem__(self, index: SupportsIndex, /) -> int | float: ...
    @overload
    def __getitem__(self, index: slice, /) -> list[Any]: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __reversed__(self) -> Iterator[Any]: ...
    def __contains__(self, value: object, /) -> bool: ...
    def index(self, value: Any, start: SupportsIndex = 0, stop: SupportsIndex = ..., /) -> int: ...
    def count(self, value: Any, /) -> int: ...
    def tolist(self) -> list[Any]:
        """The items as a list of Python numbers."""
    def __add__(self, other: list[Any] | ListView | NumberListView, /) -> list[Any]:
        """A native list, as ``list + list`` gives (nested containers stay views, as in ``view[:]``)."""
    def __radd__(self, other: list[Any], /) -> list[Any]: ...
    def __mul__(self, n: SupportsIndex, /) -> list[Any]: ...
    def __rmul__(self, n: SupportsIndex, /) -> list[Any]: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __release_buffer__(self, buffer: memoryview, /) -> None: ...

@final
class RecordView:
    """A stored dataclass, NamedTuple, enum member or registered-class instance, read in place."""

    @property
    def _fields(self) -> tuple[str, ...]:
        """The stored field names, in order."""
    @property
    def __bale_type__(self) -> str:
        """The qualified name of the record's class, as stored."""
    def __getattr__(self, name: str) -> Any: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: SupportsIndex | slice, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __hash__(self) -> int: ...

@final
class DictValues(ValuesView[Any]):
    """``DictView.values()``: a ``ValuesView`` read by position, made in Rust."""
    def __iter__(self) -> Iterator[Any]: ...
    def __len__(self) -> int: ...
    def __contains__(self, value: object, /) -> bool: ...

@final
class DictView(Mapping[Any, Any]):
    def __getitem__(self, key: Any, /) -> Any: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __contains__(self, key: object, /) -> bool: ...
    def get(self, key: Any, default: Any = None, /) -> Any: ...
    def keys(self) -> KeysView[Any]: ...
    def values(self) -> DictValues:
        """Values in insertion order, read by position."""
    def items(self) -> ItemsView[Any, Any]:
        """(key, value) pairs in insertion order, read by position."""
    def __or__(self, other: dict[Any, Any] | DictView, /) -> dict[Any, Any]:
        """A native dict, as ``dict | dict`` gives (values that are containers stay views)."""
    def __ror__(self, other: dict[Any, Any], /) -> dict[Any, Any]: ...

@final
class SetView(Set[Any]):
    def __contains__(self, x: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def isdisjoint(self, other: Any, /) -> bool: ...

@final
class FrozenSetView(Set[Any]):
    def __contains__(self, x: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def isdisjoint(self, other: Any, /) -> bool: ...
    def __hash__(self) -> int: ...

def compact(obj: object, *, share: bool = False) -> Region:
    """A deep, immutable copy of ``obj`` in a fresh region."""

def compact_json(text: str | bytes | bytearray) -> Region:
    """The region ``compact(json.loads(text))`` gives, byte for byte, made
    without Python objects where bale's JSON parser reads the text; other
    texts go through ``json.loads``, which reads them or raises its error."""

def region_of(value: object) -> Region | None:
    """The region a view lives in, rooted at that view; None for anything else.

    A row of a table (a list of records stored by column), or a list inside
    one, has no place of its own: its handle is rooted at a copy appended to
    the region.
    """

def thaw(value: Any, *, types: Iterable[type] | None = None) -> Any:
    """Native Python objects from a view or a region's root (deep); native values pass through.

    Records are rebuilt with the classes in ``types``, else with classes this
    process registered or compacted; an unknown class raises ThawError.
    """

def load(buffer: Buffer, *, verify: bool = False) -> Region:
    """Adopt a buffer-protocol object as a region, without copying (O(1))."""

def open(path: str | os.PathLike[str], *, verify: bool = False) -> Region:
    """Memory-map a region file read-only (O(1)); pages load on demand."""

def announced_length(head: bytes) -> int:
    """Check a region's 64-byte header; return the region's total length."""

def _compact_by_frames(obj: object) -> bytes:
    """The bytes of ``compact(obj)`` written without the tuple-tree recursion (test hook)."""

def _layout_checks() -> dict[str, bool]:
    """Which readings of CPython's private layouts this process checked and uses."""

def _panic_for_test() -> None:
    """Panic in Rust (test hook: panics must surface as Python exceptions)."""

def to_json(value: object) -> bytes:
    """JSON text of a view, a region (its root) or a compactable value, made in Rust.

    The bytes of ``json.dumps(value, allow_nan=False, ensure_ascii=False,
    separators=(",", ":")).encode()``: floats as ``repr`` writes them, non-string
    keys as strings. Raises ValueError naming the place of what JSON cannot
    hold (NaN and infinities as values or keys, bytes, sets, cycles, ...).
    """

def memoryview_of(container: Any, key: Any = None) -> memoryview:
    """A read-only memoryview over the ``bytes`` stored at ``container[key]``, without copying.

    ``container`` is a list, tuple or dict view, a record view (``key`` a
    field name), or a ``Region`` (its root; no key when the root is the
    bytes). Reading ``view[key]`` still copies into ``bytes``; this memoryview
    reads the region's memory in place and keeps it alive while it (or a
    slice of it) lives. It equals the bytes but is not hashable. Raises
    TypeError when the value is not bytes.
    """

def stream_json(
    path: str | os.PathLike[str],
    on_item: Callable[[bytes], object],
    on_entry: Callable[[str, bytes], object],
    on_value: Callable[[str], object],
) -> tuple[str, int]:
    """Reads a JSON file incrementally (serde_json), one top-level element at a time.

    A top-level array: ``on_item(text)`` with the JSON text (UTF-8 bytes) of
    each element; an object: ``on_entry(key, text)`` for each member; any
    other value: ``on_value(text)`` once, with the text as a str. Returns ``("array" | "object" | "value", count)``.
    Malformed JSON raises ValueError naming the file, line, column and
    element index; a callback's exception propagates.
    """

def column(records: ListView | TupleView, key: object) -> Any:
    """Field ``key`` of every dict: a numpy array for numeric fields (numpy installed), else a list.

    For a table (a list of records stored by column) the field is read from its column.
    """

def region_stats(region: Region, top: int = 5) -> dict[str, Any]:
    """Counts and bytes per kind of value, and the most used dict shapes."""

@final
class Writer:
    """Builds a region file item by item; leaving ``with`` by an exception removes it."""

    def __new__(cls, path: str | os.PathLike[str]) -> Writer: ...
    def append(self, value: object) -> None:
        """Add the next item of a list root."""
    def append_json(self, text: str | bytes | bytearray) -> None:
        """``append(json.loads(text))``, byte for byte, without Python objects."""
    def __setitem__(self, key: object, value: object, /) -> None:
        """Add ``key: value`` to a dict root (each key once)."""
    def set_json(self, key: object, text: str | bytes | bytearray) -> None:
        """``w[key] = json.loads(text)``, byte for byte, without Python objects."""
    def __len__(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def close(self) -> None:
        """Finish the file and move it into place atomically."""
    def abort(self) -> None:
        """Discard everything written; nothing is left at the path."""
    def __enter__(self) -> Writer: ...
    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool: ...

# Store support (bale._store).
def _open_segment(
    path: str | os.PathLike[str], length: int, keep_file: bool = True, place: tuple[_Segments, int] | None = None
) -> Region: ...
def _extern_segments(region: Region) -> list[int]: ...
def _extern_targets(region: Region) -> list[tuple[int, int, int, int]]: ...
def _reader_lock(fd: int, generation: int, hold: bool) -> None: ...
def _oldest_reader(fd: int, below: int) -> int | None: ...
@final
class _Segments:
    """The bytes of a store snapshot's segments, which references between segments read."""

    def __new__(cls) -> Self: ...
    def successor(self) -> _Segments: ...
def _open_index(path: str | os.PathLike[str], verify: bool = False) -> Region: ...
def _save_index(region: Region, path: str | os.PathLike[str]) -> None: ...
def _xxh3(data: Buffer) -> int: ...

# Benchmark support (benchmarks/bench_sweep.py): the reads of a scan through views, without the scan.
def _read_every_value(records: ListView | TupleView | DictView, deep: bool = False) -> int:
    """Make (and drop) every value of every record, or with ``deep`` every value under ``records``; returns how many.

    With ``deep``, a region holding cycles raises ValueError (the walk would not end)."""
def _store_get(
    key: object,
    sources: tuple[DictView, ...],
    handles: dict[int, Region | None],
    missing: object,
    value: bool = True,
    mapper: Callable[[int], Region | None] | None = None,
) -> Any: ...

@disjoint_base
class _StoreReads:
    """The base class of ``bale.Store``: ``s[k]``, ``s.get(k)`` and ``k in s`` in Rust."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self: ...
    def _set_fast(self, fast: tuple[tuple[DictView, ...], dict[int, Region | None]] | None) -> None: ...
    def __getitem__(self, key: Any, /) -> Any: ...
    def get(self, key: Any, default: Any = None) -> Any: ...
    def __contains__(self, key: object, /) -> bool: ...
