"""``bale.Store``: a persistent, storage-backed heap of regions.

Values live in *segment* files, each one growing bale region (the first 64
bytes of an empty region, then every value appended to it, in one offset
space); a value is a handle on a segment's first ``end`` bytes with its own
root slot, so a get maps nothing new and copies nothing. The index (key ->
segment, end, root, flags) is bale data too, read in place: a small delta
in the commit record, then index files, newest first, merged in a size-tiered
way. Commits alternate between two superblock files. ``docs/STORE.md`` is the
specification of the layout and the commit protocol; this module follows it.
"""

from __future__ import annotations

import contextvars
import errno
import fcntl
import os
import stat
import struct
import threading
import time
import weakref
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from bale import _bale
from bale._bale import FormatError

MAGIC = b"BALESTOR"
# Version 2 added references between segments (rows' `refs` and `held`);
# version 3 the reader table (`READERS`) and the record's `freed` segments,
# so that readers map segments at their first read. Older stores are read
# (their segments mapped at open), and written as version 3 by their next
# commit.
VERSION = 3
READ_VERSIONS = (1, 2, 3)
# The reader table: open stores lock the byte at their snapshot's
# generation (docs/STORE.md, *Readers*).
READERS_NAME = "READERS"
# magic, version, reserved, generation, payload length, checksum (docs/STORE.md).
SUPER_HEADER = struct.Struct("<8sIIQQQ")
SUPER_NAMES = ("SUPER.0", "SUPER.1")
# A span record of a segment's .sums file: start, end, XXH3-64 of the bytes.
SPAN = struct.Struct("<QQQ")
EMPTY_REGION = bytes(_bale.compact(None))

DEFAULT_SEGMENT_SIZE = 64 << 20
# Appended bytes are written to a segment file in runs of at least this
# many bytes (one write and one checksum each), and at the commit.
WRITE_RUN = 1 << 20
# Index entries kept in the commit record before they move to an index file.
DELTA_LIMIT = 1024
# An index file absorbs the newer run merged into it while it holds at most
# this many times the run's entries (size-tiered: O(log n) files).
MERGE_RATIO = 4
# How often a reader retries a snapshot whose files a writer removed while
# it was opening them.
SNAPSHOT_TRIES = 50
# How often both superblocks are read again when neither is valid (2 ms
# apart): a reader racing two commits finds both torn.
TORN_TRIES = 25

_MISSING = object()
# The longest key, in bytes (str keys: code units times their width).
MAX_KEY = 64 << 10
# Index entries kept in the commit record hold at most about this many
# bytes of keys; more go to an index file (as more than DELTA_LIMIT do).
DELTA_KEY_BYTES = 256 << 10
# The batch of the running thread or task: a batch belongs to the code
# that opened it, not to every task of its thread.
_BATCH: contextvars.ContextVar = contextvars.ContextVar("bale_store_batch", default=None)
# The writers' locks this process holds: (st_dev, st_ino) of the store's
# directory -> the thread holding it.
_HELD_LOCKS: dict[tuple[int, int], int] = {}
# The largest commit record read (a segment table of millions of rows).
MAX_RECORD = 1 << 30
# Every count, length and id in a commit record is below this.
MAX_FIELD = 1 << 62
# File ids are below this: references between segments name them in 32 bits.
MAX_FILE_ID = (1 << 32) - 1


# Every open store, so that a forked child can renew their mutexes: one held
# by another thread at the fork would be held for ever in the child.
_STORES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _after_fork_in_child() -> None:
    me = threading.get_ident()
    for store in list(_STORES.values()):
        store._mutex = threading.RLock()
        # The parent may give up a batch whose appends this copy of memory
        # holds: views made before the fork are copied, never referenced.
        store._segs = _bale._Segments()
        # The reader lock is the parent's open file description's: a
        # refresh here would move it from under the parent. Lock anew.
        store._renew_reader_lock_after_fork()
        txn = store._txn
        if txn is not None and txn.owner != me:
            # A batch of a thread the child does not have: the parent ends it.
            store._txn = None
            store._gate()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _segment_name(seg: int) -> str:
    return f"seg-{seg:08d}.bale"


def _sums_name(seg: int) -> str:
    return f"seg-{seg:08d}.sums"


def _index_name(file_id: int) -> str:
    return f"idx-{file_id:08d}.bale"


def _check_key(key: object) -> None:
    if type(key) is not str and type(key) is not bytes:
        raise TypeError(f"store keys are str or bytes, not {type(key).__name__}")
    if len(key) > MAX_KEY // 4:
        size = len(key.encode("utf-8", "surrogatepass")) if isinstance(key, str) else len(key)
        if size > MAX_KEY:
            raise ValueError(f"store keys are at most {MAX_KEY} bytes (in UTF-8); this one has {size}")


def _check_label(label: object) -> None:
    if label is not None and type(label) is not str:
        raise TypeError(f"labels are str or None, not {type(label).__name__}")


class _Segment:
    """One row of the segment table (docs/STORE.md, *Commit record*)."""

    __slots__ = ("label", "length", "live", "puts", "sums", "open", "refs", "held")

    def __init__(self, label, length, live, puts, sums, open_, refs=(), held=False):
        self.label = label
        self.length = length
        self.live = live
        self.puts = puts
        self.sums = sums
        self.open = open_
        self.refs = refs  # the other segments its values reference, ascending
        self.held = held  # kept only because a kept segment references it

    def row(self) -> tuple:
        return (self.label, self.length, self.live, self.puts, self.sums, self.open, self.refs, self.held)

    def copy(self) -> _Segment:
        return _Segment(*self.row())

    def release(self) -> int:
        """Its values die at once (`drop`, or moved by `reclaim`): the
        commit keeps the row, held, while a kept segment references it.
        Returns how many values were live."""
        live, self.live, self.open, self.held = self.live, 0, False, True
        return live


class _Snapshot:
    """One commit as read from a superblock: tables thawed (they are
    O(segments)), the delta and index files read in place."""

    __slots__ = (
        "store", "generation", "next_file", "count", "segments", "levels", "delta", "index_views", "record", "freed", "lazy",
    )

    def __init__(self, store, generation, next_file, count, segments, levels, delta, index_views, record, freed, lazy):
        self.store = store  # a random id, made with the store
        self.generation = generation
        self.next_file = next_file
        self.count = count
        self.segments = segments  # {seg id: _Segment}
        self.levels = levels  # ((file id, entries), ...), newest first
        self.delta = delta  # DictView of the commit record: key -> entry or None
        self.index_views = index_views  # DictView per level
        self.record = record  # the commit record's Region (keeps `delta` readable)
        # Segments no row names whose files wait for older readers: {seg id:
        # the generation that freed it}; a writer removes what it could.
        self.freed = freed
        # Whether segments are mapped at their first read (this store holds
        # a reader lock on the generation), or all at once (older stores).
        self.lazy = lazy


class _Txn:
    """What a write transaction changed, applied to the store at commit."""

    __slots__ = (
        "segments", "count", "next_file", "pending", "spans", "new_files", "dead_files", "touched", "full_merge", "broken",
        "owner", "pid", "unwritten", "freed",
    )

    def __init__(self, snap: _Snapshot):
        self.segments = {k: v.copy() for k, v in snap.segments.items()}
        self.count = snap.count
        self.next_file = snap.next_file
        self.pending: dict = {}
        self.spans: dict[int, list[tuple[int, int, int]]] = {}
        # Per segment: where its bytes not yet written start, and them.
        self.unwritten: dict[int, tuple[int, list[bytes]]] = {}
        # The thread whose batch this is: other threads read the last commit.
        self.owner = threading.get_ident()
        # A child of fork() inherits the object, not the transaction.
        self.pid = os.getpid()
        self.new_files: list[str] = []
        self.dead_files: list[str] = []
        self.touched: set[int] = set()
        self.freed = dict(snap.freed)  # the commit's `freed`
        self.full_merge = False
        # A write that failed part-way: this transaction must not commit.
        self.broken: BaseException | None = None


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _format_error(path: str, what: str) -> FormatError:
    return FormatError(f"{path}: {what}")


def _read_superblock(path: str) -> tuple[int, int, bytes] | str:
    """The generation, version and commit record in the superblock file
    ``path``, or why it is not valid."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"cannot be opened ({e.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return "not a regular file"
        with open(fd, "rb") as f:
            head = f.read(SUPER_HEADER.size)
            if len(head) < SUPER_HEADER.size:
                return f"{len(head)} bytes, shorter than the {SUPER_HEADER.size}-byte header"
            magic, version, reserved, generation, length, checksum = SUPER_HEADER.unpack(head)
            if magic != MAGIC:
                return "bad magic bytes (not a bale store superblock)"
            if version not in READ_VERSIONS:
                return f"store version {version}; this bale reads versions {READ_VERSIONS[0]} to {READ_VERSIONS[-1]}"
            if reserved != 0:
                return "reserved field is not zero"
            size = os.fstat(f.fileno()).st_size
            if size != SUPER_HEADER.size + length or length > MAX_RECORD:
                return f"holds {size - SUPER_HEADER.size} bytes of commit record; its header says {length}"
            data = head + f.read(length)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if len(data) != SUPER_HEADER.size + length:
        return f"holds {len(data) - SUPER_HEADER.size} bytes of commit record; its header says {length}"
    body = data[: SUPER_HEADER.size - 8] + data[SUPER_HEADER.size :]
    if _bale._xxh3(body) != checksum:
        return "checksum mismatch (torn or damaged)"
    return generation, version, data[SUPER_HEADER.size :]


def _row_ok(seg: int, row, version: int, next_file: int) -> bool:
    """Whether a segment table row has the types and ranges of ``version``.
    (Spelled out rather than with generators: opening a store checks a row
    per 64 MiB segment.)"""
    if type(row) is not tuple or len(row) != (6 if version == 1 else 8):
        return False
    label, length, live, puts, sums, open_ = row[:6]
    if not (
        (label is None or type(label) is str)
        and type(length) is int and type(live) is int and type(puts) is int and type(sums) is int
        and type(open_) is bool
        and 64 <= length < MAX_FIELD and length % 8 == 0
        and 0 <= live < MAX_FIELD and 0 <= puts < MAX_FIELD
        and 0 <= sums < MAX_FIELD and sums % SPAN.size == 0
    ):
        return False
    if version == 1:
        return True
    refs, held = row[6], row[7]
    if type(refs) is not tuple or type(held) is not bool or (held and (live != 0 or open_)):
        return False
    prev = -1
    for r in refs:
        # Ascending and distinct, each an id below next_file, none its own.
        if type(r) is not int or not prev < r < next_file or r == seg:
            return False
        prev = r
    return True


def _parse_record(where: str, payload: bytes, version: int = VERSION) -> tuple:
    """Checks a commit record's shape (docs/STORE.md) and returns its parts."""
    try:
        region = _bale.load(payload, verify=True)
    except FormatError as e:
        raise _format_error(where, f"commit record is not a valid region: {e}") from None
    rec = region.root
    try:
        store = rec["store"]
        generation = rec["generation"]
        next_file = rec["next_file"]
        count = rec["count"]
        seg_view = rec["segments"]
        levels = _bale.thaw(rec["levels"])
        delta = rec["delta"]
        freed = _bale.thaw(rec["freed"]) if version >= 3 else {}
    except (KeyError, TypeError) as e:
        raise _format_error(where, f"commit record lacks a field: {e}") from None
    ints = (store, generation, next_file, count)
    if not all(type(x) is int and 0 <= x < MAX_FIELD for x in ints):
        raise _format_error(where, f"commit record's generation, next_file and count must be ints in [0, 2^62): {ints}")
    if next_file > MAX_FILE_ID:
        raise _format_error(where, f"commit record's next_file {next_file} is past 2^32 - 1 (file ids are 32-bit)")
    if not isinstance(delta, _bale.DictView):
        raise _format_error(where, "commit record's delta is not a dict")
    if not isinstance(seg_view, _bale.DictView):
        raise _format_error(where, "commit record's segment table is not a dict")
    segments = {}
    for seg, row in _bale.thaw(seg_view).items():
        if not (type(seg) is int and 0 <= seg < next_file and _row_ok(seg, row, version, next_file)):
            raise _format_error(where, f"segment table row {seg!r}: {row!r} is malformed")
        segments[seg] = _Segment(*row)
    for seg, info in segments.items():
        for ref in info.refs:
            if ref not in segments:
                # The segment a kept segment references must be kept too.
                raise _format_error(where, f"segment {seg} references segment {ref}, which has no row")
    if type(levels) is not tuple or not all(
        type(lv) is tuple and len(lv) == 2 and all(type(x) is int and 0 <= x < MAX_FIELD for x in lv) and lv[0] < next_file
        for lv in levels
    ):
        raise _format_error(where, f"commit record's index levels {levels!r} are malformed")
    if sum(s.live for s in segments.values()) != count:
        raise _format_error(where, f"commit record's count {count} is not the sum of its segments' live values")
    if type(freed) is not dict or not all(
        type(seg) is int and 0 <= seg < next_file and seg not in segments and type(g) is int and 1 <= g <= generation
        for seg, g in freed.items()
    ):
        raise _format_error(where, f"commit record's freed segments {freed!r} are malformed")
    return store, generation, next_file, count, segments, levels, delta, freed, region


class Store(_bale._StoreReads, MutableMapping):
    """A persistent heap of compact regions in the directory ``path``.

    See the README's *The store* section and ``docs/STORE.md``.

    ``s[k]``, ``s.get(k)`` and ``k in s`` are the base class's (``_bale._StoreReads``):
    outside a batch, one call into Rust with no Python frame, reading what
    ``_gate`` last handed it; inside one, or on a closed store, and for
    every error, the ``_get_*`` and ``_contains_slow`` methods below.
    """

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False, segment_size: int = DEFAULT_SEGMENT_SIZE):
        self._path = os.path.abspath(os.fspath(path))
        self._readonly = bool(readonly)
        if type(segment_size) is not int or segment_size < 4096:
            raise ValueError(f"segment_size must be an int of at least 4096 bytes, not {segment_size!r}")
        self._segment_size = segment_size
        self._mutex = threading.RLock()
        _STORES[id(self)] = self
        self._closed = False
        self._txn: _Txn | None = None
        self._lock_fd = -1
        self._pid = os.getpid()
        self._maps: dict[int, Any] = {}  # seg id -> read-only segment handle
        # The bytes of the snapshot's segments, for references between
        # segments (`store_segments.rs`): one registry per snapshot, of a
        # new family when bytes it handed out stop being the store's.
        self._segs = _bale._Segments()
        self._moving: frozenset[int] | set[int] = frozenset()  # segments `reclaim` empties
        self._lineages: dict[int, Any] = {}  # seg id -> newest handle this writer appended
        self._in_memory: set[int] = set()  # segments whose map is a lineage's memory
        self._seg_fds: dict[int, int] = {}
        self._delta_dict: dict | None = None  # a writer's thawed copy of the delta
        self._labels: dict[Any, list[int]] = {}
        self._swept = False
        # What the store is doing that must not be re-entered (a callback of
        # a value being put, or of verify's progress, writing to the store).
        self._busy: str | None = None
        self._lock_key: tuple[int, int] | None = None
        # The READERS file (-1: none) and the generation locked in it (0: none).
        self._readers_fd = -1
        self._readers_pid = os.getpid()
        self._reader_gen = 0
        if readonly:
            if not os.path.isdir(self._path):
                if os.path.exists(self._path):
                    raise NotADirectoryError(errno.ENOTDIR, "a bale store is a directory", self._path)
                raise FileNotFoundError(errno.ENOENT, "no bale store here", self._path)
        else:
            self._create()
        self._snap = self._load_snapshot()
        self._set_snapshot(self._snap)

    # ----------------------------------------------------------------- opening

    def _file(self, name: str) -> str:
        return os.path.join(self._path, name)

    def _create(self) -> None:
        """Makes the directory, lock file and first commit if missing; two
        processes creating one store at once serialize on the lock."""
        try:
            os.makedirs(self._path, exist_ok=True)
        except FileExistsError:
            raise NotADirectoryError(errno.ENOTDIR, "a bale store is a directory", self._path) from None
        if not os.path.isdir(self._path):
            raise NotADirectoryError(errno.ENOTDIR, "a bale store is a directory", self._path)
        self._open_lock()
        self._lock()
        try:
            if all(isinstance(_read_superblock(self._file(n)), str) for n in SUPER_NAMES):
                if any(os.path.exists(self._file(n)) and os.path.getsize(self._file(n)) for n in SUPER_NAMES):
                    # Never overwrite a damaged store with an empty one.
                    self._load_snapshot()  # raises FormatError naming both slots
                # No commit was ever made here (or a creation was cut short).
                data = self._data_files()
                if data:
                    raise _format_error(
                        self._path,
                        f"has {len(data)} segment or index files but no superblock: not made into a new store "
                        "(restore SUPER.0/SUPER.1, or remove the directory)",
                    )
                record = {
                    "store": int.from_bytes(os.urandom(8), "little") % MAX_FIELD,
                    "generation": 1, "next_file": 1, "count": 0, "segments": {}, "levels": (), "delta": {},
                    "freed": {},
                }
                # Both superblock files exist from the start, so that no
                # commit needs the directory synced to be durable; the first
                # appears complete or not at all.
                os.close(os.open(self._file(SUPER_NAMES[0]), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
                first = SUPER_NAMES[1] + ".new"
                self._write_superblock(first, 1, bytes(_bale.compact(record)))
                os.replace(self._file(first), self._file(SUPER_NAMES[1]))
                _fsync_dir(self._path)
        finally:
            self._unlock()

    def _open_lock(self) -> None:
        """Writers lock the store's directory itself (flock): unlike a lock
        file, it cannot be removed and made again while a writer holds it."""
        try:
            self._lock_fd = os.open(self._path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as e:
            raise OSError(e.errno, f"cannot open the store's directory to lock it: {e.strerror}", self._path) from None
        self._pid = os.getpid()

    def _lock(self) -> None:
        if os.getpid() != self._pid:
            # A forked child shares its parent's open file description, and
            # with it the parent's flock: take a lock of its own.
            os.close(self._lock_fd)
            self._open_lock()
            self._lineages.clear()
            self._close_seg_fds()
        me = threading.get_ident()
        while True:
            st = os.fstat(self._lock_fd)
            key = (st.st_dev, st.st_ino)
            if _HELD_LOCKS.get(key) == me:
                # flock would wait for ever on a lock this very thread holds.
                raise RuntimeError(
                    f"this thread already holds the writers' lock of {self._path} through another "
                    "bale.Store object (a batch is open there): write through that one"
                )
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                now = os.stat(self._path)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == key:
                break
            # The directory was replaced while we waited: a writer that
            # opens the path now would not wait for us. Lock what is there.
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._open_lock()
        _HELD_LOCKS[key] = me
        self._lock_key = key

    def _unlock(self) -> None:
        if self._lock_key is not None:
            _HELD_LOCKS.pop(self._lock_key, None)
            self._lock_key = None
        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _newest_superblock(self) -> tuple[str, int, bytes, int]:
        """The newest valid superblock. A reader may find both torn: the
        one it read first being rewritten by a commit, the other by the
        next one; it reads them again before calling the store damaged."""
        for attempt in range(TORN_TRIES):
            try:
                return self._newest_superblock_once()
            except FormatError:
                if attempt + 1 == TORN_TRIES:
                    raise
                time.sleep(0.002)
        raise AssertionError("unreachable")

    def _newest_superblock_once(self) -> tuple[str, int, bytes, int]:
        reasons = []
        best = None
        for slot, name in enumerate(SUPER_NAMES):
            got = _read_superblock(self._file(name))
            if isinstance(got, str):
                reasons.append(f"{name}: {got}")
            elif got[0] % 2 != slot:
                # Commit g is written to SUPER.{g mod 2}: elsewhere, the next
                # commit would overwrite the newest one in place.
                reasons.append(f"{name}: holds generation {got[0]}, which belongs in SUPER.{got[0] % 2}")
            elif best is None or got[0] > best[1]:
                best = (name, got[0], got[2], got[1])
        if best is None:
            if all(r.endswith((": missing", ": 0 bytes, shorter than the 40-byte header")) for r in reasons):
                if not self._data_files():
                    raise FileNotFoundError(errno.ENOENT, "no bale store here yet: no commit has been made", self._path)
            raise _format_error(self._path, "no valid superblock (" + "; ".join(reasons) + ")")
        return best

    def _newest_header_generation(self) -> int | None:
        """The largest generation a superblock's header names (headers
        alone, 40 bytes each, their checksums unchecked), or None. Read
        after a reader lock on generation g, a value above g tells that a
        commit was made before the lock: a writer's commit that the read
        misses, or sees half-written, ends after it, and the writer tests
        the reader table after its commit."""
        newest = None
        for name in SUPER_NAMES:
            try:
                fd = os.open(self._file(name), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue  # missing: being made, or never
            try:
                head = os.pread(fd, SUPER_HEADER.size, 0)
            except OSError:
                head = b""
            finally:
                os.close(fd)
            if len(head) == SUPER_HEADER.size:
                magic, _version, _reserved, generation, _length, _checksum = SUPER_HEADER.unpack(head)
                if magic == MAGIC and (newest is None or generation > newest):
                    newest = generation
        return newest

    def _data_files(self) -> list[str]:
        return [n for n in os.listdir(self._path) if n.startswith(("seg-", "idx-"))]

    def _load_snapshot(self) -> _Snapshot:
        """Reads the newest commit and opens its index files; its segments
        are mapped at their first read (`_map`) when this store holds a
        reader lock on the commit (docs/STORE.md, *Readers*), else here. A
        writer may remove files of an older commit meanwhile: then read
        again. On an error the lock goes back to the snapshot the store
        still reads."""
        held = self._reader_gen
        try:
            return self._load_snapshot_once()
        except BaseException:
            if held and self._reader_gen != held:
                try:
                    self._hold_reader_lock(held)
                except OSError:
                    pass
            raise

    def _load_snapshot_once(self) -> _Snapshot:
        for attempt in range(SNAPSHOT_TRIES):
            name, generation, payload, version = self._newest_superblock()
            # Locked before anything is read: a writer that commits after
            # this sees the lock and keeps what this commit names. A commit
            # made before the lock may have removed segments this one
            # names: then read that one (or, at the last try, map this
            # one's segments now, as for older stores). (A generation out
            # of range is refused by the record's checks.)
            lazy = version >= 3 and 1 <= generation < MAX_FIELD and self._hold_reader_lock(generation)
            if lazy and (self._newest_header_generation() or 0) > generation:
                if attempt + 1 < SNAPSHOT_TRIES:
                    continue
                lazy = False
            where = self._file(name)
            store, gen, next_file, count, segments, levels, delta, freed, record = _parse_record(where, payload, version)
            if gen != generation:
                raise _format_error(where, f"header generation {generation} differs from the record's {gen}")
            if getattr(self, "_snap", None) is not None and self._snap.store != store:
                # Another store now lives at this path: nothing mapped is its.
                self._maps, self._in_memory = {}, set()
                self._segs = _bale._Segments()
                self._lineages.clear()
                self._close_seg_fds()
            try:
                views = []
                for file_id, entries in levels:
                    path = self._file(_index_name(file_id))
                    region = _bale._open_index(path)
                    root = region.root
                    if not isinstance(root, _bale.DictView) or len(root) != entries:
                        raise _format_error(path, f"index file is not a dict of {entries} entries")
                    views.append(root)
                maps = {}
                for seg, info in segments.items():
                    old = self._maps.get(seg)
                    if old is not None and old.nbytes >= info.length:
                        maps[seg] = old
                    elif not lazy:
                        maps[seg] = self._open_seg(seg, info.length, not self._readonly and info.open)
            except FileNotFoundError as e:
                if attempt + 1 < SNAPSHOT_TRIES and self._newest_superblock()[1] != generation:
                    continue  # a newer commit removed it: read that one
                kind = "index" if os.path.basename(e.filename or "").startswith("idx-") else "segment"
                raise _format_error(e.filename, f"{kind} file named by the commit is missing") from None
            self._maps = maps
            self._in_memory &= maps.keys()
            return _Snapshot(store, gen, next_file, count, segments, levels, delta, tuple(views), record, freed, lazy)
        raise AssertionError("unreachable")

    # ------------------------------------------------------------- reader table

    def _readers_file(self) -> int:
        """The store's READERS file, open (a writer creates it), or -1 when
        a reader finds none: then it maps every segment at open."""
        if self._readers_fd >= 0 and self._readers_pid == os.getpid():
            return self._readers_fd
        if self._readers_fd >= 0:
            self._renew_reader_lock_after_fork()
            return self._readers_fd
        path = self._file(READERS_NAME)
        try:
            if self._readonly:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            else:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:
            return -1
        except OSError as e:
            if self._readonly:
                return -1  # (a directory it may not read): segments mapped at open
            raise OSError(e.errno, f"cannot open the store's reader table: {e.strerror}", path) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise _format_error(path, "the reader table is not a regular file")
        self._readers_fd, self._readers_pid, self._reader_gen = fd, os.getpid(), 0
        return fd

    def _hold_reader_lock(self, generation: int) -> bool:
        """Locks ``generation`` in the reader table, then releases the
        generation locked before; returns whether it is locked."""
        fd = self._readers_file()
        if fd < 0:
            return False
        if self._reader_gen == generation:
            return True
        try:
            _bale._reader_lock(fd, generation, True)
        except OSError:
            # No such locks here (not Linux, or a file system without them):
            # every store maps its segments at open, and writers, whose
            # tests of the table fail alike, remove freed segments at once.
            return False
        if self._reader_gen:
            _bale._reader_lock(fd, self._reader_gen, False)
        self._reader_gen = generation
        return True

    def _renew_reader_lock_after_fork(self) -> None:
        """In a child of fork(): the inherited READERS descriptor shares the
        parent's locks; open the file again and lock this store's
        generation on it."""
        if self._readers_fd < 0 or self._readers_pid == os.getpid():
            return
        old, gen = self._readers_fd, self._reader_gen
        self._readers_fd, self._reader_gen = -1, 0
        try:
            os.close(old)  # the parent's open stays, and its locks with it
        except OSError:
            pass
        if gen:
            try:
                self._hold_reader_lock(gen)
            except OSError:
                pass
        snap = getattr(self, "_snap", None)
        if snap is not None and snap.lazy and self._reader_gen != snap.generation:
            # Unprotected now: map what it names while it is there.
            for seg in snap.segments:
                try:
                    self._map(seg)
                except (OSError, FormatError):
                    pass

    def _release_reader_lock(self) -> None:
        if self._readers_fd >= 0:
            if self._readers_pid == os.getpid():
                os.close(self._readers_fd)  # and every lock on it
            self._readers_fd, self._reader_gen = -1, 0

    def _remove_freed(self) -> None:
        """Removes the files of freed segments that no open store's snapshot
        names: those freed at a generation no reader lock lies below. With
        the writers' lock held."""
        freed = self._snap.freed
        if not freed:
            return
        fd = self._readers_file()
        if fd < 0:
            return
        try:
            oldest = _bale._oldest_reader(fd, max(freed.values()))
        except OSError:
            oldest = None  # no reader locks here: every reader mapped its segments at open
        for seg, gen in list(freed.items()):
            if oldest is not None and oldest < gen:
                continue  # a reader's snapshot still names it
            for name in (_segment_name(seg), _sums_name(seg)):
                try:
                    os.unlink(self._file(name))
                except FileNotFoundError:
                    pass
            del freed[seg]

    def _map(self, seg: int):
        """The read handle of segment ``seg`` of the snapshot, mapped at its
        first read, and with it every segment its values reference (a view
        of it reads them through its registry, whatever happens to the
        store after); None when the snapshot has no such segment."""
        with self._mutex:
            h = self._maps.get(seg)
            if h is not None:
                return h
            segments = self._snap.segments
            if seg not in segments:
                return None
            todo = [seg]
            while todo:
                s = todo.pop()
                if s in self._maps:
                    continue
                info = segments[s]
                try:
                    self._maps[s] = self._open_seg(s, info.length, not self._readonly and info.open)
                except FileNotFoundError as e:
                    raise _format_error(e.filename or self._file(_segment_name(s)), "segment file named by the commit is missing") from None
                todo.extend(r for r in info.refs if r not in self._maps)
            return self._maps[seg]

    def _map_segment(self, seg: int):
        """`_bale._store_get`'s mapper: the handle values of live segment
        ``seg`` are read from, mapped now if it was not; None when the
        segment is not live."""
        with self._mutex:
            info = self._snap.segments.get(seg)
            if info is None or info.held:
                return None
            handles = self._fast[1]
            h = handles.get(seg)
            if h is None:
                h = self._lineages.get(seg)
                if h is None:
                    h = self._map(seg)
                if not self._readonly and info.open and seg not in self._lineages:
                    self._lineages[seg] = h  # as `_set_snapshot` does for mapped ones
                handles[seg] = h
            return h

    def _open_seg(self, seg: int, length: int, keep_file: bool = True):
        """A handle on segment ``seg``'s first ``length`` bytes, whose values
        read references to other segments through ``_segs``."""
        return _bale._open_segment(self._file(_segment_name(seg)), length, keep_file, (self._segs, seg))

    def _set_snapshot(self, snap: _Snapshot) -> None:
        self._snap = snap
        self._delta_dict = None
        # Every handle moves to a registry of this snapshot's segments alone:
        # views of older snapshots keep theirs (and the files they map).
        segs = self._segs = self._segs.successor()
        self._maps = {seg: h._placed(segs, seg) for seg, h in self._maps.items()}
        self._lineages = {seg: h._placed(segs, seg) for seg, h in self._lineages.items() if seg in snap.segments}
        # What the handles carried over reference must be in this registry
        # too (mapped with them before, but maybe longer now).
        for seg in list(self._maps):
            info = snap.segments.get(seg)
            for ref in info.refs if info is not None else ():
                self._map(ref)
        labels: dict[Any, list[int]] = {}
        handles = {}
        for seg, info in snap.segments.items():
            if info.held:
                continue  # its values are dead; its bytes are read only through references
            labels.setdefault(info.label, []).append(seg)
            h = self._lineages.get(seg)
            if h is None:
                h = self._maps.get(seg)  # None: mapped at its first read (`_map_segment`)
                if h is not None and not self._readonly and info.open:
                    # Appends go through the handle values are read from, so
                    # that a value built from them references them.
                    self._lineages[seg] = h
            handles[seg] = h
        self._labels = labels
        # What `_bale._store_get` reads, replaced in one step.
        self._fast = ((snap.delta, *snap.index_views), handles)
        self._gate()

    def _gate(self) -> None:
        """Hands the base class what ``s[k]`` reads, outside any batch on an
        open store; else nothing, so that gets take ``_get_slow``. Called
        wherever ``_fast``, ``_txn`` or ``_closed`` change."""
        self._set_fast(self._fast if self._txn is None and not self._closed else None)

    def refresh(self) -> bool:
        """Moves to the newest commit; returns whether there was one.

        A store shows the commit it was opened at, or last refreshed to, or
        (in a writer) its own last commit; values already read keep reading
        the data they were read from.
        """
        with self._mutex:
            self._check_open()
            if self._txn is not None:
                raise RuntimeError("refresh() inside a batch; the batch sees its own snapshot")
            before = self._snap.generation
            if self._newest_header_generation() == before:
                return False  # (two 40-byte reads: readers refresh often)
            self._lineages.clear()
            self._close_seg_fds()
            self._set_snapshot(self._load_snapshot())
            return self._snap.generation != before

    # ----------------------------------------------------------------- reading

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"store {self._path} is closed")

    def _my_txn(self) -> _Txn | None:
        """The transaction of the running thread's (or task's) batch, if any."""
        txn = self._txn
        if txn is not None and _BATCH.get() is txn and txn.pid == os.getpid():
            return txn
        return None

    def _entry_fields(self, e) -> tuple[int, int, int, int] | None:
        """An index entry as read from a level, checked: four ints in range
        (None stays None, a deleted key)."""
        if e is None:
            return None
        if type(e) is not _bale.TupleView and type(e) is not tuple:
            raise _format_error(self._path, f"an index entry is not a tuple: {e!r}")
        try:
            seg, end, root, flags = e
        except (TypeError, ValueError):
            raise _format_error(self._path, f"an index entry is not a 4-tuple: {e!r}") from None
        if not (
            type(seg) is int and type(end) is int and type(root) is int and type(flags) is int
            and 0 <= seg < MAX_FIELD and 0 <= end < MAX_FIELD and 0 <= root < 1 << 64 and 0 <= flags < 1 << 32
        ):
            raise _format_error(self._path, f"an index entry is not four ints in range: {e!r}")
        return seg, end, root, flags

    def _entry(self, key):
        """The newest index entry for ``key`` (None for a tombstone), or _MISSING."""
        txn = self._my_txn()
        if txn is not None:
            e = txn.pending.get(key, _MISSING)
            if e is not _MISSING:
                return e
        snap = self._snap
        e = snap.delta.get(key, _MISSING)
        if e is not _MISSING:
            return self._entry_fields(e)
        for view in snap.index_views:
            e = view.get(key, _MISSING)
            if e is not _MISSING:
                return self._entry_fields(e)
        return _MISSING

    def _where(self, key, err=None) -> str:
        """The file a read of ``key`` went wrong in, for its error: the one
        ``_bale._store_get`` placed ``err`` in (an index level or a
        segment), else the segment its entry names, or the index level
        holding a bad entry."""
        snap = self._snap
        names = [SUPER_NAMES[snap.generation % 2]] + [_index_name(f) for f, _ in snap.levels]
        place = getattr(err, "_bale_place", None)
        if place is not None:
            kind, i = place
            if kind == "level" and i < len(names):
                return self._file(names[i])
            if kind == "segment":
                return self._file(_segment_name(i))
        for name, view in zip(names, (snap.delta, *snap.index_views)):
            try:
                e = view.get(key, _MISSING)
            except FormatError:
                return self._file(name)
            if e is _MISSING:
                continue
            try:
                fields = self._entry_fields(e)
            except FormatError:
                return self._file(name)
            return self._file(_segment_name(fields[0])) if fields is not None else self._file(name)
        return self._path

    def _segments(self) -> dict[int, _Segment]:
        txn = self._my_txn()
        return txn.segments if txn is not None else self._snap.segments

    def _live_entry(self, key):
        e = self._entry(key)
        if e is _MISSING or e is None:
            return None
        info = self._segments().get(e[0])
        if info is None or info.held:
            return None  # its segment was dropped
        return e

    def _handle(self, entry):
        seg, end, root, flags = entry
        h = self._lineages.get(seg)
        if h is None or h.nbytes < end:
            h = self._map(seg)
            if h is None or h.nbytes < end:
                raise _format_error(
                    self._file(_segment_name(seg)), f"an index entry ends at {end}, past the segment's committed bytes"
                )
        return h._handle(end, root, flags)

    def _value(self, key):
        """The value of ``key``, or _MISSING: outside a batch of this
        thread, one call into Rust (`_bale._store_get`)."""
        if not self._closed and self._my_txn() is None:
            sources, handles = self._fast
            try:
                value = _bale._store_get(key, sources, handles, _MISSING, True, self._map_segment)
            except FormatError as err:
                raise _format_error(self._where(key, err), f"value of key {key!r}: {err}") from None
        else:
            self._check_open()
            e = self._live_entry(key)
            value = _MISSING if e is None else self._handle(e).root
        if value is _MISSING:
            _check_key(key)
        return value

    # `s[k]` and `k in s` are `_bale._StoreReads.__getitem__`/`__contains__`;
    # they call these when `_gate` handed them nothing, or on an error.

    def _get_slow(self, key):
        value = self._value(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def _get_missing(self, key):
        _check_key(key)
        raise KeyError(key)

    def _get_failed(self, key, err):
        raise _format_error(self._where(key, err), f"value of key {key!r}: {err}") from None

    # `s.get(k, default)` is `_bale._StoreReads.get`, which calls these.

    def _get_default_slow(self, key, default):
        value = self._value(key)
        return default if value is _MISSING else value

    @staticmethod
    def _check_missing_key(key):
        _check_key(key)

    def region(self, key) -> _bale.Region:
        """The region handle whose root is ``self[key]``. Its bytes are not
        handed out alone (``bytes``, buffers, ``save``, pickling) when the
        value references other segments: ``ValueError``."""
        self._check_open()
        e = self._live_entry(key)
        if e is None:
            _check_key(key)
            raise KeyError(key)
        return self._handle(e)

    def _contains_slow(self, key) -> bool:
        if not self._closed and self._my_txn() is None:
            sources, handles = self._fast
            try:
                return _bale._store_get(key, sources, handles, _MISSING, False) is not _MISSING
            except FormatError as err:
                raise _format_error(self._where(key, err), f"value of key {key!r}: {err}") from None
        self._check_open()
        return self._live_entry(key) is not None

    def __len__(self) -> int:
        self._check_open()
        txn = self._my_txn()
        return txn.count if txn is not None else self._snap.count

    def _sources(self):
        """Index sources, newest first."""
        txn = self._my_txn()
        if txn is not None:
            yield txn.pending
        yield self._snap.delta
        yield from self._snap.index_views

    def __iter__(self) -> Iterator:
        self._check_open()
        segments = self._segments()
        seen = set()
        for source in list(self._sources()):
            for key, e in source.items():
                if key in seen:
                    continue
                seen.add(key)
                e = self._entry_fields(e)
                if e is not None and e[0] in segments and not segments[e[0]].held:
                    yield key

    def keys(self):
        """The live keys, as a list (one pass over the index)."""
        return list(self)

    def labels(self) -> dict[str | None, int]:
        """How many live values each label holds (None: unlabelled values)."""
        self._check_open()
        out: dict[str | None, int] = {}
        for info in self._segments().values():
            if not info.held:
                out[info.label] = out.get(info.label, 0) + info.live
        return {k: v for k, v in out.items() if v}

    @property
    def path(self) -> str:
        return self._path

    @property
    def generation(self) -> int:
        """The number of the commit this store shows."""
        return self._snap.generation

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def closed(self) -> bool:
        return self._closed

    # ----------------------------------------------------------------- writing

    @contextmanager
    def batch(self):
        """Many puts, deletes and drops, one commit: all of them are on disk
        when the ``with`` block ends, or (on an exception) none of them. The
        writers' lock is held for the whole block."""
        with self._write():
            yield self

    @contextmanager
    def _write(self):
        with self._mutex:
            self._check_open()
            if self._readonly:
                raise OSError(errno.EROFS, "store was opened with readonly=True", self._path)
            if self._busy:
                raise RuntimeError(f"store {self._path} was written to from inside its own {self._busy} (a callback?)")
            txn = self._txn
            if txn is not None:
                if txn.pid != os.getpid():
                    raise RuntimeError(
                        "this store's batch was begun before fork() in the parent process; "
                        "the child cannot write in it (open the store again in the child)"
                    )
                if _BATCH.get() is not txn:
                    raise RuntimeError(
                        "another task of this thread has a batch open on this store; "
                        "write inside that batch, or after it ends"
                    )
                yield
                return
            self._begin()
            token = _BATCH.set(self._txn)
            try:
                yield
            except BaseException:
                if self._txn is not None:
                    self._abort()
                raise
            finally:
                try:
                    _BATCH.reset(token)
                except ValueError:
                    pass  # left in another context than it was entered in
            txn = self._txn
            if txn is None:
                raise ValueError(f"store {self._path} was closed inside a batch; nothing of the batch was committed")
            if txn.pid != os.getpid():
                self._txn = None  # the parent's: neither committed nor unlocked here
                self._gate()
                raise RuntimeError("a batch begun before fork() cannot be committed in the child process")
            self._commit()

    def _begin(self) -> None:
        self._lock()
        try:
            newest = self._newest_superblock()[1]
            if newest != self._snap.generation:
                # Another writer committed: its appends are not in our
                # lineages, which must not be appended to again.
                self._lineages.clear()
                self._close_seg_fds()
                self._set_snapshot(self._load_snapshot())
            if not self._swept:
                self._sweep(self._snap)
                self._swept = True
            self._remove_freed()
        except BaseException:
            self._unlock()
            raise
        self._txn = _Txn(self._snap)
        self._gate()

    def _current(self) -> _Txn:
        txn = self._txn
        assert txn is not None, "called inside a write transaction only"
        return txn

    def _abort(self, keep_files: bool = False) -> None:
        """Forgets the transaction. ``keep_files``: the commit may have
        reached the disk (its superblock write failed part-way), so the
        files it names must stay; the next writer sweeps them if not."""
        txn, self._txn = self._current(), None
        self._gate()
        if txn.pid != os.getpid():
            return  # a child of fork(): the transaction and the lock are the parent's
        try:
            new = txn.segments.keys() - self._snap.segments.keys()
            for seg in txn.touched | new:
                # Bytes appended in memory never reached a commit.
                self._lineages.pop(seg, None)
            for seg in new:
                if seg in self._seg_fds:
                    os.close(self._seg_fds.pop(seg))
            if keep_files:
                self._swept = False
            else:
                for name in txn.new_files:
                    try:
                        os.unlink(self._file(name))
                    except OSError:
                        pass
            if txn.touched:
                # Its appends are not the store's: views of them, and of the
                # registries that held them, must not be referenced.
                self._segs = _bale._Segments()
            # New segment ids go back to the pool: labels and handles as committed.
            self._set_snapshot(self._snap)
        finally:
            self._unlock()

    def _segment_fd(self, seg: int) -> int:
        fd = self._seg_fds.get(seg)
        if fd is None:
            path = self._file(_segment_name(seg))
            try:
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            except OSError as e:
                raise OSError(e.errno, e.strerror, path) from None
            self._seg_fds[seg] = fd
        return fd

    def _close_seg_fds(self) -> None:
        for fd in self._seg_fds.values():
            os.close(fd)
        self._seg_fds.clear()

    def _new_file_id(self, txn: _Txn) -> int:
        """The next file id; ids stay below 2^32 - 1 (references between
        segments name them in 32 bits), as readers require."""
        file_id = txn.next_file
        if file_id >= MAX_FILE_ID:
            raise OSError(
                errno.ENOSPC,
                "the store has used every file id (2^32 - 1 segment and index files); nothing of this batch was committed",
                self._path,
            )
        txn.next_file += 1
        return file_id

    def _new_segment(self, txn: _Txn, label) -> int:
        seg = self._new_file_id(txn)
        for name in (_segment_name(seg), _sums_name(seg)):
            path = self._file(name)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            except OSError as e:
                raise OSError(e.errno, e.strerror, path) from None
            txn.new_files.append(name)
            if name.endswith(".bale"):
                self._seg_fds[seg] = fd
                self._pwrite(fd, EMPTY_REGION, 0, path)
            else:
                os.close(fd)
        txn.segments[seg] = _Segment(label, len(EMPTY_REGION), 0, 0, 0, True)
        self._lineages[seg] = self._open_seg(seg, len(EMPTY_REGION))
        self._labels.setdefault(label, []).append(seg)
        return seg

    def _open_segment_of(self, txn: _Txn, label) -> int:
        for seg in reversed(self._labels.get(label, ())):
            info = txn.segments.get(seg)
            if info is not None and info.open and info.label == label:
                if info.length < self._segment_size:
                    return seg
                info.open = False  # full: sealed
        return self._new_segment(txn, label)

    def _lineage(self, seg: int):
        """The handle appends to ``seg`` go through (and, in a writer, what
        values of an open segment are read from, so that a value built from
        them references them). Bytes past the commit (left by a writer
        killed mid-append) are overwritten by the next append."""
        h = self._lineages.get(seg)
        if h is None:
            info = self._segments()[seg]
            h = self._map(seg) if seg in self._snap.segments else None
            if h is None or h.nbytes != info.length:
                h = self._open_seg(seg, info.length)
            self._lineages[seg] = h
        return h

    @staticmethod
    def _pwrite(fd: int, data, at: int, path: str) -> None:
        view = memoryview(data)
        try:
            while view:
                n = os.pwrite(fd, view, at)
                view = view[n:]
                at += n
        except OSError as e:
            raise OSError(e.errno, f"cannot write to the store: {e.strerror}", path) from None

    def put(self, key, value, *, label: str | None = None, share: bool = False) -> None:
        """Stores ``value`` (anything ``bale.compact`` accepts) under ``key``,
        durably unless inside ``batch()``. Dicts and lists met as views of
        values of this store are referenced where they lie, whatever their
        label, not copied (docs/STORE.md, *References between segments*)."""
        _check_key(key)
        _check_label(label)
        txn = self._my_txn()
        if txn is not None and not self._closed and not self._busy:
            self._put(txn, key, value, label, share)  # inside this thread's batch
            return
        with self._write():
            self._put(self._current(), key, value, label, share)

    def _put(self, txn: _Txn, key, value, label, share: bool) -> None:
        seg = self._open_segment_of(txn, label)
        self._busy = "put() of another value"
        try:
            grown = self._append(txn, seg, value, share)
        finally:
            self._busy = None
        end, root, flags = grown._layout
        self._unlink_value(txn, key)
        info = txn.segments[seg]
        info.length = end
        info.live += 1
        info.puts += 1
        txn.count += 1
        txn.pending[key] = (seg, end, root, flags)

    def _append(self, txn: _Txn, seg: int, value, share: bool, allowed: dict | None = None):
        """Appends ``value`` to ``seg`` in memory; its bytes go to the file
        in runs of WRITE_RUN bytes, and at the commit. Views of values of
        the segments that are keys of ``allowed`` (by default, every segment
        of the transaction) are referenced where they are."""
        if allowed is None:
            allowed = txn.segments
        h = self._lineage(seg)
        if h._tail != h.nbytes:
            # Its lineage was appended to past it (by an abandoned batch, or
            # by hand through a stored value's region): continue from the file.
            h = self._lineages[seg] = self._open_seg(seg, h.nbytes)
        start = h.nbytes
        grown, refs = h._store_append(value, self._segs, allowed, share=share)
        txn.touched.add(seg)
        if refs:
            # Kept while this segment is (STORE.md, *References between segments*).
            info = txn.segments[seg]
            info.refs = tuple(sorted(set(info.refs).union(refs)))
        self._lineages[seg] = grown
        run = txn.unwritten.get(seg)
        if run is None:
            run = txn.unwritten[seg] = (start, [])
        run[1].append(grown._span(start, grown.nbytes))
        if grown.nbytes - run[0] >= WRITE_RUN:
            self._write_run(txn, seg)
        return grown

    def _write_run(self, txn: _Txn, seg: int) -> None:
        """Writes the bytes appended to ``seg`` since the last run, as one
        span with its checksum."""
        start, parts = txn.unwritten.pop(seg)
        data = b"".join(parts)
        try:
            self._pwrite(self._segment_fd(seg), data, start, self._file(_segment_name(seg)))
        except BaseException as e:
            txn.broken = e
            raise
        txn.spans.setdefault(seg, []).append((start, start + len(data), _bale._xxh3(data)))

    def __setitem__(self, key, value) -> None:
        self.put(key, value)

    def _unlink_value(self, txn: _Txn, key) -> bool:
        e = self._entry(key)
        if e is _MISSING or e is None:
            return False
        info = txn.segments.get(e[0])
        if info is None or info.held:
            return False
        info.live -= 1
        txn.count -= 1
        return True

    def __delitem__(self, key) -> None:
        _check_key(key)
        with self._write():
            txn = self._current()
            if not self._unlink_value(txn, key):
                raise KeyError(key)
            txn.pending[key] = None

    def drop(self, label: str | None) -> int:
        """Removes every value put with ``label`` at once (O(segments of the
        label)); returns how many. Their files are deleted at the commit,
        unless values of other labels reference them: then they stay
        (held) until nothing does."""
        _check_label(label)
        with self._write():
            txn = self._current()
            dropped = 0
            for seg in self._labels.get(label, ()):
                info = txn.segments.get(seg)
                if info is None or info.held:
                    continue
                live = info.release()  # the commit removes it, unless referenced
                dropped += live
                txn.count -= live
                self._lineages.pop(seg, None)
            return dropped

    # ------------------------------------------------------------------ commit

    def _write_superblock(self, name: str, generation: int, payload: bytes) -> None:
        head = SUPER_HEADER.pack(MAGIC, VERSION, 0, generation, len(payload), 0)
        checksum = _bale._xxh3(head[:-8] + payload)
        data = SUPER_HEADER.pack(MAGIC, VERSION, 0, generation, len(payload), checksum) + payload
        path = self._file(name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise OSError(e.errno, e.strerror, path) from None
        try:
            self._pwrite(fd, data, 0, path)
            os.ftruncate(fd, len(data))
            os.fdatasync(fd)
        except OSError as e:
            raise OSError(e.errno, f"cannot commit: {e.strerror}", path) from None
        finally:
            os.close(fd)

    def _delta(self) -> dict:
        if self._delta_dict is None:
            self._delta_dict = self._checked_level(self._snap.delta, "the commit record's delta")
        return self._delta_dict

    def _checked_level(self, view, what: str) -> dict:
        """An index level as a dict, its keys and entries checked."""
        level = _bale.thaw(view) if len(view) else {}
        for key, e in level.items():
            if type(key) is not str and type(key) is not bytes:
                raise _format_error(self._path, f"{what} has a key that is not str or bytes: {key!r}")
            self._entry_fields(e)
        return level

    def _merge_levels(self, txn: _Txn, run: dict, full: bool) -> tuple[tuple, list]:
        """Moves ``run`` (newer than every level) into index files: merged
        with each level no more than MERGE_RATIO times its size (all levels
        when ``full``). Returns the new levels and the files replaced."""
        levels = list(self._snap.levels)
        views = list(self._snap.index_views)
        replaced = []
        while levels and (full or levels[0][1] <= MERGE_RATIO * max(len(run), 1)):
            file_id, _ = levels.pop(0)
            older = self._checked_level(views.pop(0), _index_name(file_id))
            older.update(run)
            run = older
            replaced.append(_index_name(file_id))
        bottom = not levels
        # Entries naming a held segment are dead as those of a removed one.
        segments = {seg for seg, info in txn.segments.items() if not info.held}
        run = {
            k: (e if e is not None and e[0] in segments else None)
            for k, e in run.items()
            if not (bottom and (e is None or e[0] not in segments))
        }
        if run:
            file_id = self._new_file_id(txn)
            name = _index_name(file_id)
            txn.new_files.append(name)
            _bale._save_index(_bale.compact(run), self._file(name))
            levels.insert(0, (file_id, len(run)))
        return tuple(levels), replaced

    def _commit(self) -> None:
        txn = self._current()
        full_merge = txn.full_merge
        try:
            if txn.broken is not None:
                raise OSError(
                    getattr(txn.broken, "errno", None) or errno.EIO,
                    f"nothing of this batch was committed: a write in it failed ({txn.broken})",
                    self._path,
                )
            changed = txn.pending or txn.dead_files or full_merge or txn.segments.keys() != self._snap.segments.keys()
            if not changed and all(txn.segments[s].row() == self._snap.segments[s].row() for s in txn.segments):
                self._txn = None
                self._gate()
                self._unlock()
                return
            generation = self._snap.generation + 1
            self._release_unreferenced(txn, generation)
            for seg in sorted(txn.touched):
                if seg not in txn.segments:
                    continue  # dropped in this transaction
                if seg in txn.unwritten:
                    self._write_run(txn, seg)
                fd = self._segment_fd(seg)
                path = self._file(_segment_name(seg))
                info = txn.segments[seg]
                try:
                    os.fdatasync(fd)
                except OSError as e:
                    raise OSError(e.errno, f"cannot sync: {e.strerror}", path) from None
                spans = b"".join(SPAN.pack(*s) for s in txn.spans.get(seg, ()))
                sums_path = self._file(_sums_name(seg))
                sfd = os.open(sums_path, os.O_RDWR | os.O_CLOEXEC)
                try:
                    os.ftruncate(sfd, info.sums)  # a killed writer's records go
                    self._pwrite(sfd, spans, info.sums, sums_path)
                    os.fdatasync(sfd)
                finally:
                    os.close(sfd)
                info.sums += len(spans)
            delta = dict(self._delta())
            delta.update(txn.pending)
            levels, replaced = self._snap.levels, []  # type: tuple, list[str]
            if full_merge or len(delta) > DELTA_LIMIT or sum(map(len, delta)) > DELTA_KEY_BYTES:  # keys checked
                levels, replaced = self._merge_levels(txn, delta, full_merge)
                delta = {}
            if txn.new_files:
                _fsync_dir(self._path)
            record = {
                "store": self._snap.store,
                "generation": generation,
                "next_file": txn.next_file,
                "count": txn.count,
                "segments": {seg: info.row() for seg, info in txn.segments.items()},
                "levels": levels,
                "delta": delta,
                "freed": txn.freed,
            }
            payload = bytes(_bale.compact(record))
        except BaseException:
            self._abort()
            raise
        try:
            self._write_superblock(SUPER_NAMES[generation % 2], generation, payload)
        except BaseException:
            # Torn, or whole and only its sync failed or was interrupted:
            # the commit may be on disk, and then so must be its files.
            self._abort(keep_files=True)
            raise
        # Committed: what the new commit no longer names can go: at once
        # what no commit named before (and index files, which readers open
        # at once), the freed segments when no reader's snapshot names them
        # (this store's lock moved to the new commit first).
        self._txn = None
        self._gate()
        try:
            lazy = self._hold_reader_lock(generation)
            for name in txn.dead_files + replaced:
                try:
                    os.unlink(self._file(name))
                except FileNotFoundError:
                    pass
                if name.endswith(".bale") and name.startswith("seg-"):
                    seg = int(name[4:12])
                    if seg in self._seg_fds:
                        os.close(self._seg_fds.pop(seg))
            self._set_snapshot(self._load_snapshot_after_commit(generation, txn, levels, delta, lazy))
            self._delta_dict = delta
            self._remove_freed()
        finally:
            self._unlock()

    def _release_unreferenced(self, txn: _Txn, generation: int) -> None:
        """Removes the rows that no kept segment needs (STORE.md, *Writing*,
        4.2). A segment is kept when it is open or has live values, or when
        a kept segment references it: then it is *held*, its values dead
        and its bytes kept for the references. O(segments + references)."""
        segments = txn.segments
        roots = [s for s, i in segments.items() if not i.held and (i.live or i.open or not i.puts)]
        kept: set[int] = set()
        while roots:
            seg = roots.pop()
            if seg not in kept:
                kept.add(seg)
                roots.extend(segments[seg].refs)
        for seg, info in list(segments.items()):
            if seg not in kept:
                del segments[seg]
                if seg in self._snap.segments:
                    txn.freed[seg] = generation  # older snapshots name it: removed when no reader is there
                else:
                    txn.dead_files += [_segment_name(seg), _sums_name(seg)]  # no commit named it
                self._lineages.pop(seg, None)
            elif not info.held and not info.live and not info.open and info.puts:
                info.held = True  # emptied, and referenced

    def _load_snapshot_after_commit(self, generation, txn, levels, delta, lazy: bool) -> _Snapshot:
        for seg in list(self._lineages):
            if seg not in txn.segments:
                del self._lineages[seg]  # dropped or emptied: its mappings go
        for seg in list(self._seg_fds):
            if seg not in txn.segments or not txn.segments[seg].open:
                os.close(self._seg_fds.pop(seg))  # written no more
        record = _bale.compact({"delta": delta})
        views = []
        old = dict(zip((lv[0] for lv in self._snap.levels), self._snap.index_views))
        for file_id, entries in levels:
            view = old.get(file_id)
            if view is None:
                view = _bale._open_index(self._file(_index_name(file_id))).root
            views.append(view)
        maps = {}
        for seg, info in txn.segments.items():
            m = self._maps.get(seg)
            if not info.open:
                # Sealed: read from the file, and let go of the memory the
                # appends to it filled (a writer keeps one open segment's
                # worth per label, not everything it wrote).
                self._lineages.pop(seg, None)
                if m is None or m.nbytes < info.length or seg in self._in_memory:
                    m = None if lazy else self._open_seg(seg, info.length, False)
                    self._in_memory.discard(seg)
            elif m is None or m.nbytes < info.length:
                lineage = self._lineages.get(seg)
                m = lineage if lineage is not None and lineage.nbytes >= info.length else None
                if m is None:
                    m = None if lazy else self._open_seg(seg, info.length)
                else:
                    self._in_memory.add(seg)
            if m is not None:
                maps[seg] = m
        self._in_memory &= maps.keys()
        self._maps = maps
        return _Snapshot(
            self._snap.store, generation, txn.next_file, txn.count, txn.segments, levels, record.root["delta"], tuple(views),
            record, txn.freed, lazy,
        )

    # ----------------------------------------------------------------- reclaim

    def _sweep(self, snap: _Snapshot) -> None:
        """Removes files no commit names (left by writers killed before
        their commit, or after it and before they removed what it freed).
        Runs with the writers' lock held, so no writer is making any."""
        named: set[str] = set()
        for seg in (*snap.segments, *snap.freed):  # freed ones wait for readers
            named.update((_segment_name(seg), _sums_name(seg)))
        named.update(_index_name(file_id) for file_id, _ in snap.levels)
        for entry in os.scandir(self._path):
            n = entry.name
            if n in named or not (n.startswith(("seg-", "idx-", ".idx-")) and n.endswith((".bale", ".sums", ".tmp"))):
                continue
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                pass

    def _disk_usage(self) -> int:
        total = 0
        for e in os.scandir(self._path):
            try:
                if e.is_file():
                    total += e.stat().st_blocks * 512
            except FileNotFoundError:
                pass  # removed meanwhile by a writer in another process
        return total

    def reclaim(self) -> int:
        """Returns the disk space of dead data: rewrites segments in which at
        most half the values put are still live (their live values are
        copied together, keeping the sharing among them), merges the index
        into one file without dead entries, and removes files no commit
        names. Returns the bytes of disk space freed. O(keys)."""
        with self._mutex:
            if self._txn is not None:
                raise RuntimeError("reclaim() inside a batch: it commits by itself")
            before = self._disk_usage()
            with self._write():
                txn = self._current()
                txn.full_merge = True
                self._sweep(self._snap)
                for info in txn.segments.values():
                    if info.puts and not info.live:
                        info.open = False  # empty: removed at the commit (or held, if referenced)
                # A segment other segments reference stays whatever is moved
                # out of it: moving its values would only copy them.
                referenced = {r for info in txn.segments.values() for r in info.refs}
                sparse = {
                    seg
                    for seg, info in txn.segments.items()
                    if info.puts and info.live * 2 <= info.puts and info.live and not info.held and seg not in referenced
                }
                for seg in sparse:
                    # Sealed first: no moved value may land in a segment still to move.
                    txn.segments[seg].open = False
                if sparse:
                    moving: dict[int, list] = {}
                    for key in list(self):
                        e = self._live_entry(key)
                        if e[0] in sparse:
                            moving.setdefault(e[0], []).append((key, e))
                    self._moving = sparse
                    try:
                        for seg, items in moving.items():
                            self._move(txn, seg, items)
                    finally:
                        self._moving = frozenset()
            return max(0, before - self._disk_usage())

    def _move(self, txn: _Txn, seg: int, items: list) -> None:
        info = txn.segments[seg]
        label = info.label
        # One handle for all of them: copied as one value, what they share
        # stays shared.
        flags = 0
        for _, e in items:
            flags |= e[3]
        whole = self._handle((seg, max(e[1] for _, e in items), items[0][1][2], flags))
        values = tuple(whole._value_at(e[2]) for _, e in items)
        if len(values) == 2:
            values += (None,)  # a 2-tuple of small ints would be a PAIR slot, with no item slots
        new = self._open_segment_of(txn, label)
        # Copied, not referenced: the values leave `seg` (and the segments
        # moved with it); references they hold to other segments stay.
        allowed = {s: i for s, i in txn.segments.items() if s not in self._moving}
        grown = self._append(txn, new, values, True, allowed)
        end, _, flags = grown._layout
        slots = grown._item_slots()
        out = txn.segments[new]
        out.length = end
        for (key, _), slot in zip(items, slots):
            txn.pending[key] = (new, end, slot, flags)
        out.live += len(items)
        out.puts += len(items)
        info.live -= len(items)
        info.release()  # removed at the commit

    # ----------------------------------------------------------------- checks

    def verify(self, progress=None) -> dict:
        """Checks the whole store: the newest commit, every segment's bytes
        (on disk) against its span checksums, every index file, every live
        value read in full, and each segment's count of live values. Raises
        FormatError naming the file and what is wrong; returns counts.
        ``progress(done, total)`` is called per segment. A reader whose
        commit a writer has since replaced (and whose files it removed)
        moves to the newest commit and checks that."""
        with self._mutex:
            self._check_open()
            for attempt in range(SNAPSHOT_TRIES):
                try:
                    self._busy = "verify()"
                    try:
                        return self._verify(progress)
                    finally:
                        self._busy = None
                except FileNotFoundError as e:
                    newer = self._newest_superblock()[1] != self._snap.generation
                    if newer and self._my_txn() is None and attempt + 1 < SNAPSHOT_TRIES:
                        self.refresh()
                        continue
                    raise _format_error(e.filename or self._path, "a file named by the commit is missing") from None
            raise AssertionError("unreachable")

    def _verify(self, progress) -> dict:
        snap = self._snap
        checked_bytes = 0
        total = len(snap.segments)
        for i, (seg, info) in enumerate(sorted(snap.segments.items())):
            path = self._file(_segment_name(seg))
            sums_path = self._file(_sums_name(seg))
            with open(sums_path, "rb") as f:
                sums = f.read(info.sums)
            if len(sums) != info.sums:
                raise _format_error(sums_path, f"has {len(sums)} bytes; the commit says {info.sums}")
            # The file as it is on disk, not this writer's memory of it.
            handle = _bale._open_segment(path, info.length, False)
            at = 64
            for start, end, checksum in SPAN.iter_unpack(sums):
                if start != at or end > info.length or end < start:
                    raise _format_error(sums_path, f"span {start}..{end} does not follow {at} within {info.length} bytes")
                if _bale._xxh3(handle._span(start, end)) != checksum:
                    raise _format_error(path, f"bytes {start}..{end} do not match their checksum")
                at = end
            if at != info.length:
                raise _format_error(sums_path, f"spans cover up to {at}; the segment has {info.length} bytes")
            checked_bytes += info.length
            if progress is not None:
                progress(i + 1, total)
        for file_id, _ in snap.levels:
            _bale._open_index(self._file(_index_name(file_id)), verify=True)
        values = 0
        live: dict[int, int] = {}
        segments = self._segments()
        followed: set[tuple[int, int, int, int]] = set()
        for key in self:
            e = self._live_entry(key)
            try:
                handle = self._handle(e)
            except FormatError as err:
                raise _format_error(self._file(_segment_name(e[0])), f"value of key {key!r}: {err}") from None
            self._verify_references(key, e[0], handle, segments, followed)
            try:
                # Read in full, through every reference to another segment.
                _bale.thaw(handle.root)
            except FormatError as err:
                raise _format_error(self._file(_segment_name(e[0])), f"value of key {key!r}: {err}") from None
            values += 1
            live[e[0]] = live.get(e[0], 0) + 1
        referenced = {r for info in segments.values() for r in info.refs}
        for seg, info in segments.items():
            if info.held and seg not in referenced:
                raise _format_error(self._file(_segment_name(seg)), f"segment {seg} is held, but no segment references it")
        for seg, info in self._segments().items():
            if live.get(seg, 0) != info.live:
                raise _format_error(
                    self._file(_segment_name(seg)), f"the index names {live.get(seg, 0)} live values here; the commit counts {info.live}"
                )
        if values != len(self):
            raise _format_error(self._path, f"the index has {values} live keys; the commit counts {len(self)}")
        return {"values": values, "segments": total, "segment_bytes": checked_bytes, "index_files": len(snap.levels)}

    def _verify_references(self, key, seg: int, handle, segments: dict, followed: set) -> None:
        """Checks that every segment the value ``handle`` of ``seg``
        references, and every value reached through those references in
        turn (held segments' values too), is listed in the referencing
        segment's row: else a drop could free data a live value reaches,
        and a reader, which maps what rows list, could not read it.
        ``followed``: the values already checked (each is checked once)."""
        todo = [(seg, handle)]
        while todo:
            at, h = todo.pop()
            where = self._file(_segment_name(at))
            try:
                targets = _bale._extern_targets(h)
            except FormatError as err:
                raise _format_error(where, f"value of key {key!r}: {err}") from None
            missing = sorted({t[0] for t in targets}.difference(segments[at].refs))
            if missing:
                what = f"value of key {key!r}" if at == seg else f"a value that key {key!r} reaches"
                raise _format_error(where, f"{what} references segments {missing}, which its segment's row does not list")
            for target in targets:
                if target in followed:
                    continue
                followed.add(target)
                other, end, flags, slot = target
                base = self._lineages.get(other)  # (a writer's batch reads its own appends)
                if base is None or base.nbytes < end:
                    base = self._map(other)
                if base is None or base.nbytes < end:
                    raise _format_error(where, f"value of key {key!r} references bytes up to {end} of segment {other}, which has fewer")
                try:
                    todo.append((other, base._handle(end, slot, flags)))
                except FormatError as err:
                    raise _format_error(self._file(_segment_name(other)), f"a value that key {key!r} reaches: {err}") from None

    def info(self) -> dict:
        """Sizes and counts: for ``bale store info``."""
        with self._mutex:
            self._check_open()
            snap = self._snap
            return {
                "path": self._path,
                "generation": snap.generation,
                "values": len(self),
                "labels": self.labels(),
                "segments": len(snap.segments),
                "held_segments": sum(i.held for i in snap.segments.values()),
                "references": sum(len(i.refs) for i in snap.segments.values()),
                "freed_segments": len(snap.freed),
                "segment_bytes": sum(i.length for i in snap.segments.values()),
                "index_files": [entries for _, entries in snap.levels],
                "delta_entries": len(snap.delta),
                "disk_bytes": self._disk_usage(),
            }

    # ----------------------------------------------------------------- closing

    def close(self) -> None:
        """Closes the store. A batch still open is abandoned (nothing of it
        is committed). Values read before stay readable."""
        with self._mutex:
            if self._closed:
                return
            if self._txn is not None:
                self._abort()
            self._closed = True
            self._gate()
            self._close_seg_fds()
            if self._lock_fd >= 0:
                os.close(self._lock_fd)
                self._lock_fd = -1
            self._release_reader_lock()  # values read before map what they read
            self._lineages = {}
            self._maps = {}
            self._segs = _bale._Segments()  # values read before hold their own
            self._fast = ((), {})
            self._gate()
            self._in_memory = set()

    def __enter__(self) -> Store:
        self._check_open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __copy__(self):
        raise TypeError("a bale.Store cannot be copied: open the path again (bale.Store(store.path))")

    def __deepcopy__(self, memo):
        raise TypeError("a bale.Store cannot be copied: open the path again (bale.Store(store.path))")

    def __reduce__(self):
        raise TypeError("a bale.Store cannot be pickled: send its path and open it there")

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self)} values, generation {self._snap.generation}"
        mode = ", readonly" if self._readonly else ""
        return f"<bale.Store {self._path!r}{mode}: {state}>"
