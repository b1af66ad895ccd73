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
from dataclasses import dataclass
from multiprocessing import shared_memory

from bale._bale import Region, load, open as open_region

_SHM_DIR = "/dev/shm"


@dataclass(frozen=True)
class SharedRegion:
    """A handle on a region in shared memory: pickle it to another process."""

    name: str
    nbytes: int

    def attach(self, *, verify: bool = False) -> Region:
        """A region over the shared segment, without copying (O(1))."""
        path = os.path.join(_SHM_DIR, self.name.lstrip("/"))
        if os.path.isdir(_SHM_DIR):
            return open_region(path, verify=verify)
        # No /dev/shm: map through the standard library (keeps the mapping open).
        shm = shared_memory.SharedMemory(name=self.name)
        return load(shm.buf[: self.nbytes], verify=verify)

    def unlink(self) -> None:
        """Remove the segment's name; attached regions keep working."""
        try:
            shm = shared_memory.SharedMemory(name=self.name)
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
    shm = shared_memory.SharedMemory(create=True, size=max(region.nbytes, 1))
    try:
        with memoryview(region) as src:
            shm.buf[: region.nbytes] = src
    except BaseException:
        shm.close()
        shm.unlink()
        raise
    shm.close()
    return SharedRegion(shm.name, region.nbytes)
