"""Regions in POSIX shared memory.

``share(region)`` copies a region once into a new shared-memory segment and
returns a small picklable handle. ``handle.attach()``, in any process on the
machine, maps the segment read-only and returns a region over it, with no
copy.

Lifetime rules:

* The process that calls ``share`` owns the segment. No other process does:
  neither the processes that attach it nor the children the owner forks.
* The segment's name is removed (nothing can attach it any more) at the
  first of: ``handle.unlink()`` in any process (idempotent), or the end of a
  ``with handle:`` block; the end of the owner process, however it ends. A
  normal exit (return from main, an exception, ``sys.exit``) removes them
  at exit; for the others (``os._exit``, a signal, ``SIGKILL``, a crash),
  the owner's first ``share`` starts a small watchdog process that waits
  for the owner to end and then removes the names the owner still owns. Nothing goes through multiprocessing's
  resource tracker, so there is no "leaked shared_memory" warning and no
  wait for the tracker (which a spawned child shares with its parent).
* The memory is freed once the name is gone and the last mapping is closed:
  regions attached before (and their views) stay valid in every process,
  after an unlink and after the owner's death.
* The watchdog runs in its own session (a terminal's Ctrl-C does not reach
  it) and ends with its owner. If it is killed itself, its owner's segments
  stay until unlinked (``SharedRegion(name, nbytes).unlink()``).
"""

from __future__ import annotations

import os
import threading

from bale._bale import Region, load, open as open_region

_SHM_DIR = "/dev/shm"
_PREFIX = "bale_"

try:
    import _posixshmem  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - CPython on POSIX has it
    _posixshmem = None  # type: ignore[assignment, unused-ignore]


def _shm_open(name: str, flags: int, mode: int = 0o600) -> int:
    if _posixshmem is not None:
        return _posixshmem.shm_open("/" + name, flags, mode=mode)
    return os.open(os.path.join(_SHM_DIR, name), flags, mode)  # pragma: no cover


def _shm_unlink(name: str) -> None:
    if _posixshmem is not None:
        _posixshmem.shm_unlink("/" + name)
    else:  # pragma: no cover
        os.unlink(os.path.join(_SHM_DIR, name))


# The watchdog reads "+name" (owned) and "-name" (unlinked) lines on its
# stdin, a pipe whose only writer is its owner; at end of file (the owner is
# gone, however it ended) it removes the names still owned.
_WATCHDOG = r"""
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
try:
    from _posixshmem import shm_unlink
except ImportError:
    def shm_unlink(name):
        os.unlink("/dev/shm" + name)
owned, pending = set(), b""
while True:
    chunk = os.read(0, 1 << 16)
    if not chunk:
        break
    *lines, pending = (pending + chunk).split(b"\n")
    for line in lines:
        (owned.add if line[:1] == b"+" else owned.discard)(line[1:].decode())
for name in owned:
    try:
        shm_unlink("/" + name)
    except OSError:
        pass
"""

_lock = threading.Lock()
_pipe: int | None = None  # this process's end of its watchdog's stdin
_owned: set[str] = set()
_watchdogs: list[object] = []  # keeps the Popen objects alive (they are never waited for)


def _forget_in_forked_child() -> None:
    # A forked child owns none of its parent's segments, and must not keep
    # the parent's watchdog waiting: it closes its copy of the pipe.
    global _pipe, _lock
    _lock = threading.Lock()
    if _pipe is not None:
        try:
            os.close(_pipe)
        except OSError:
            pass
    _pipe = None
    _owned.clear()
    _watchdogs.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_forked_child)


def _tell_watchdog(line: str) -> None:
    """Sends one line to this process's watchdog, starting it first if needed."""
    global _pipe
    if _pipe is None:
        import subprocess
        import sys

        read, write = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHDOG],
                stdin=read, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                close_fds=True, start_new_session=True,
            )
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        _watchdogs.append(proc)
        _pipe = write
        import atexit

        # A normal exit removes the names at once; the watchdog covers the rest.
        atexit.register(_unlink_owned)
    data = (line + "\n").encode()
    # One write of a short line: atomic on a pipe (below PIPE_BUF).
    os.write(_pipe, data)


def _own(name: str) -> None:
    with _lock:
        _tell_watchdog("+" + name)
        _owned.add(name)


def _disown(name: str) -> None:
    with _lock:
        if name in _owned:
            _owned.discard(name)
            try:
                _tell_watchdog("-" + name)
            except OSError:
                pass


def _unlink_owned() -> None:
    for name in list(_owned):
        try:
            _shm_unlink(name)
        except OSError:
            pass
        _disown(name)


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
        """A region over the shared segment, without copying (O(1)).

        Raises FileNotFoundError once the segment's name was removed (see
        the module's lifetime rules); a region attached before stays valid.
        """
        path = os.path.join(_SHM_DIR, self.name.lstrip("/"))
        if os.path.isdir(_SHM_DIR):
            return open_region(path, verify=verify)
        import mmap

        fd = _shm_open(self.name.lstrip("/"), os.O_RDONLY)
        try:
            mapped = mmap.mmap(fd, self.nbytes, access=mmap.ACCESS_READ) if self.nbytes else b""
        finally:
            os.close(fd)
        return load(mapped, verify=verify)

    def unlink(self) -> None:
        """Remove the segment's name, from any process (idempotent); attached regions keep working."""
        name = self.name.lstrip("/")
        try:
            _shm_unlink(name)
        except FileNotFoundError:
            pass
        _disown(name)

    def __enter__(self) -> "SharedRegion":
        return self

    def __exit__(self, *exc: object) -> None:
        self.unlink()


def share(region: Region) -> SharedRegion:
    """Copy ``region`` into a new shared-memory segment owned by this process; returns its handle."""
    import mmap

    nbytes = region.nbytes
    with memoryview(region) as src:  # a closed region refuses here, before anything is made
        name = _PREFIX + os.urandom(8).hex()
        # Owned (by the watchdog's count) before it exists: a kill between
        # the two leaves nothing behind.
        _own(name)
        try:
            fd = _shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR)
            try:
                os.ftruncate(fd, max(nbytes, 1))
                with mmap.mmap(fd, max(nbytes, 1)) as dst:
                    dst[:nbytes] = src
            finally:
                os.close(fd)
        except BaseException:
            try:
                _shm_unlink(name)
            except OSError:
                pass
            _disown(name)
            raise
    return SharedRegion(name, nbytes)
