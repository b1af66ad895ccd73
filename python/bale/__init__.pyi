import asyncio
import socket
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from bale._bale import (
    FORMAT_VERSION as FORMAT_VERSION,
    CompactError as CompactError,
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
