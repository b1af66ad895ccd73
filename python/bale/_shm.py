"""Regions in POSIX shared memory.

``share(region)`` copies a region once into a new shared-memory segment and
returns a small picklable handle. ``handle.attach()``, in any process on the
machine, maps the segment read-only and returns a region over it, with no
copy. Who unlinks: the process that called ``share``, through
``handle.unlink()`` or by using the handle as a context manager, once every
consumer has attached (regions already attached stay valid after the unlink,
as with any POSIX mapping). If the sharing process exits without unlinking,
Python's resource tracker unlinks the segment for it.
"""

from __future__ import annotations

import os

from bale._bale import Region, load, open as open_region

_SHM_DIR = "/dev/shm"


def _shared_memory():
    # Imported on first use: multiprocessing is heavy for programs that never share.
    from multiprocessing import shared_memory

    return shared_memory


class SharedRegion:
    """A handle on a region in shared memory: pickle it to another process."""

    __slots__ = ("name", "nbytes")

    def __init__(self, name: str, nbytes: int) -> None:
        self.name = name
        self.nbytes = nbytes

    def __reduce__(self):
        return (SharedRegion, (self.name, self.nbytes))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SharedRegion) and (self.name, self.nbytes) == (other.name, other.nbytes)

    def __hash__(self) -> int:
        return hash((self.name, self.nbytes))

    def __repr__(self) -> str:
        return f"SharedRegion(name={self.name!r}, nbytes={self.nbytes})"

    def attach(self, *, verify: bool = False) -> Region:
        """A region over the shared segment, without copying (O(1))."""
        path = os.path.join(_SHM_DIR, self.name.lstrip("/"))
        if os.path.isdir(_SHM_DIR):
            return open_region(path, verify=verify)
        # No /dev/shm: map through the standard library (keeps the mapping open).
        shm = _shared_memory().SharedMemory(name=self.name)
        return load(shm.buf[: self.nbytes], verify=verify)

    def unlink(self) -> None:
        """Remove the segment's name; attached regions keep working."""
        try:
            shm = _shared_memory().SharedMemory(name=self.name)
        except FileNotFoundError:
            return
        shm.close()
        shm.unlink()

    def __enter__(self) -> "SharedRegion":
        return self

    def __exit__(self, *exc: object) -> None:
        self.unlink()


def share(region: Region) -> SharedRegion:
    """Copy ``region`` into a new shared-memory segment; returns its handle."""
    shm = _shared_memory().SharedMemory(create=True, size=max(region.nbytes, 1))
    try:
        with memoryview(region) as src:
            shm.buf[: region.nbytes] = src
    except BaseException:
        shm.close()
        shm.unlink()
        raise
    shm.close()
    return SharedRegion(shm.name, region.nbytes)
