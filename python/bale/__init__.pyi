import asyncio
import socket
import os
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from contextlib import AbstractContextManager
from typing import Any, NoReturn, TypeVar

from bale._bale import (
    FORMAT_VERSION as FORMAT_VERSION,
    CompactError as CompactError,
    DictValues as DictValues,
    DictView as DictView,
    FormatError as FormatError,
    FrozenSetView as FrozenSetView,
    ListView as ListView,
    NumberListView as NumberListView,
    RecordView as RecordView,
    Region as Region,
    SetView as SetView,
    ThawError as ThawError,
    TupleView as TupleView,
    Writer as Writer,
    column as column,
    compact as compact,
    compact_json as compact_json,
    load as load,
    memoryview_of as memoryview_of,
    open as open,
    region_of as region_of,
    thaw as thaw,
    to_json as to_json,
)

__version__: str
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

def json_default(obj: object) -> Any:
    """``default=`` hook for ``json.dump(s)``: list, tuple and number-list views as lists, dict views as dicts."""

def send(sock: socket.socket, region: Region) -> None:
    """Send a region on a connected socket, straight from its memory."""

def recv(sock: socket.socket, *, verify: bool = True, max_size: int = ...) -> Region:
    """Receive one region; verified by default; larger than max_size is refused."""

async def send_async(writer: asyncio.StreamWriter, region: Region) -> None: ...
async def recv_async(reader: asyncio.StreamReader, *, verify: bool = True, max_size: int = ...) -> Region: ...

class SharedRegion:
    """A picklable handle on a region placed in POSIX shared memory.

    The process that called ``share`` owns the segment. Its name is removed by
    ``unlink()`` (any process) or when the owner ends, however it ends (a
    watchdog process covers ``os._exit``, signals and ``SIGKILL``); attached
    regions stay valid.
    """

    name: str
    nbytes: int
    def __init__(self, name: str, nbytes: int) -> None: ...
    def attach(self, *, verify: bool = False) -> Region:
        """A region over the shared segment, without copying; FileNotFoundError once the name was removed."""
    def unlink(self) -> None:
        """Remove the segment's name; attached regions keep working."""
    def __enter__(self) -> SharedRegion: ...
    def __exit__(self, *exc: object) -> None: ...

_T = TypeVar("_T", bound=type)

def register(
    cls: _T,
    fields: Iterable[str] | None = None,
    *,
    get: Callable[[Any], Iterable[Any]] | None = None,
    make: Callable[..., Any] | None = None,
) -> _T:
    """Let bale store instances of ``cls`` as records (fields, how to read them, how to rebuild)."""

def registered_types() -> dict[str, type]:
    """Qualified name -> class, for every class ``thaw`` can rebuild in this process."""

def share(region: Region) -> SharedRegion:
    """Copy a region into a new shared-memory segment owned by this process and return its handle.

    The segment's name goes at ``handle.unlink()`` or when this process ends,
    however it ends (the first call starts a watchdog process for that).
    """

class Store(MutableMapping[str | bytes, Any]):
    """A persistent heap of compact regions in a directory (docs/STORE.md).

    ``s[k] = v`` is durable when it returns; ``s[k]`` is a view over the
    mapped files (no deserialization); ``put(k, v, label=...)`` groups
    values for ``drop(label)``; ``batch()`` makes many writes one commit.
    Readers in any number of processes see the commit they opened or last
    ``refresh()``-ed to; writers in several processes take turns on a lock.
    """

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False, segment_size: int = ...) -> None: ...
    def __getitem__(self, key: str | bytes, /) -> Any:
        """The stored value: a view (DictView, ListView, ...) or a scalar."""
    def __setitem__(self, key: str | bytes, value: object) -> None: ...
    def __delitem__(self, key: str | bytes) -> None: ...
    def __contains__(self, key: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[str | bytes]: ...
    def get(self, key: str | bytes, default: Any = None) -> Any: ...  # type: ignore[override]
    def keys(self) -> list[str | bytes]:  # type: ignore[override]
        """The live keys, as a list."""
    def put(self, key: str | bytes, value: object, *, label: str | None = None, share: bool = False) -> None:
        """Store ``value`` under ``key`` (durably unless inside ``batch()``), in ``label``'s group; dicts and lists met as views of this store's values are referenced, not copied."""
    def region(self, key: str | bytes) -> Region:
        """The region handle whose root is ``self[key]`` (its bytes are refused alone when the value references other segments)."""
    def batch(self) -> AbstractContextManager[Store]:
        """Many writes, one commit (one fsync); all or nothing."""
    def drop(self, label: str | None) -> int:
        """Remove every value put with ``label`` at once; returns how many (data other labels' values reference stays until nothing does)."""
    def reclaim(self) -> int:
        """Return the disk space of dead data; returns the bytes freed."""
    def refresh(self) -> bool:
        """Move to the newest commit; returns whether there was one."""
    def labels(self) -> dict[str | None, int]:
        """Live values per label (None: unlabelled)."""
    def verify(self, progress: Callable[[int, int], object] | None = None) -> dict[str, int]:
        """Check every byte against its checksum and every value in full; FormatError naming the file."""
    def info(self) -> dict[str, Any]:
        """Sizes and counts (``bale store info``)."""
    @property
    def path(self) -> str: ...
    @property
    def generation(self) -> int: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None:
        """Close the store (an open batch is abandoned); values read before stay readable."""
    def __enter__(self) -> Store: ...
    def __exit__(self, *exc: object) -> None: ...
    def __del__(self) -> None: ...
    def __copy__(self) -> NoReturn:
        """TypeError: open the path again instead."""
    def __deepcopy__(self, memo: object) -> NoReturn: ...
