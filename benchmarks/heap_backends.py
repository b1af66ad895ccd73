"""The same operations on bale.Store and on the stores bench_heap.py compares it with.

Used by ``bench_heap.py`` and by its child processes (``heap_child.py``), so
it imports each library only when a side of that kind is opened: a child
that times ``import`` plus open plus a first get pays for its own library
only.

Sides, each a directory:

- ``bale``: ``bale.Store``; a batch is ``with s.batch()``; a durable put
  is ``s.put`` (fsync'ed when it returns).
- ``lmdb``: LMDB + pickle (protocol 5), one named database per label (so
  that a label can be dropped with ``txn.drop(db)``), default ``sync=True``
  (a commit fsyncs), ``map_size`` 64 GiB (sparse), keys UTF-8 bytes.
- ``diskcache``: ``diskcache.Cache`` with its defaults (SQLite in WAL mode,
  ``synchronous=NORMAL``, pickle protocol 5) except ``size_limit`` (1 TiB:
  nothing is culled) and ``tag_index=True`` (a label is a tag; ``evict(tag)``
  needs the index).
- ``shelve``: ``shelve.open(protocol=5)``: on this Python ``dbm.dumb`` (no
  gdbm or ndbm module); ``sync()`` rewrites its index and never fsyncs.
- ``sqlite``: sqlite3 + pickle, ``kv(key TEXT PRIMARY KEY, value BLOB)``,
  ``journal_mode=WAL``, ``synchronous=FULL``.
"""

from __future__ import annotations

import os
import pickle

PROTOCOL = 5
SIDES = ("bale", "lmdb", "diskcache", "shelve", "sqlite")
LABELS = {"bale": "bale.Store", "lmdb": "LMDB + pickle", "diskcache": "diskcache", "shelve": "shelve (dbm.dumb)",
          "sqlite": "sqlite3 + pickle"}


def disk_usage(path: str) -> int:
    """Bytes allocated on disk (st_blocks * 512) by a file or every file under a directory."""
    if os.path.isfile(path):
        return os.stat(path).st_blocks * 512
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


class Side:
    name = ""

    def put_batch(self, items, label=None) -> None:
        raise NotImplementedError

    def put_durable(self, key, value, label=None) -> None:
        raise NotImplementedError

    def get(self, key):
        raise NotImplementedError

    def field_loop(self, keys, field):
        """A function reading ``store[k][field]`` for every k of ``keys`` (the timed loop)."""
        get = self.get

        def loop():
            for k in keys:
                get(k)[field]
        return loop

    def scan_sum(self, field) -> float:
        raise NotImplementedError

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


class BaleSide(Side):
    name = "bale"

    def __init__(self, path: str, readonly: bool = False):
        import bale

        os.makedirs(path, exist_ok=True)
        self.s = bale.Store(os.path.join(path, "store"), readonly=readonly)

    def put_batch(self, items, label=None):
        s = self.s
        with s.batch():
            for k, v in items:
                s.put(k, v, label=label)

    def put_durable(self, key, value, label=None):
        self.s.put(key, value, label=label)

    def get(self, key):
        return self.s[key]

    def field_loop(self, keys, field):
        s = self.s

        def loop():
            for k in keys:
                s[k][field]
        return loop

    def scan_sum(self, field):
        s = self.s
        return sum(s[k][field] for k in s.keys())

    def refresh(self):
        self.s.refresh()

    def drop(self, label):
        return self.s.drop(label)

    def close(self):
        self.s.close()


class LmdbSide(Side):
    name = "lmdb"

    def __init__(self, path: str, readonly: bool = False, label=None):
        import lmdb

        os.makedirs(path, exist_ok=True)
        self.env = lmdb.open(path, map_size=1 << 36, max_dbs=8, readonly=readonly, lock=True)
        self.db = self.env.open_db((label or "main").encode(), create=not readonly)
        self.txn = None

    def put_batch(self, items, label=None):
        dumps, db = pickle.dumps, self.db
        with self.env.begin(write=True, db=db) as txn:
            put = txn.put
            for k, v in items:
                put(k.encode(), dumps(v, PROTOCOL))

    def put_durable(self, key, value, label=None):
        with self.env.begin(write=True, db=self.db) as txn:
            txn.put(key.encode(), pickle.dumps(value, PROTOCOL))

    def _read(self):
        if self.txn is None:
            self.txn = self.env.begin(db=self.db, buffers=False)
        return self.txn

    def get(self, key):
        return pickle.loads(self._read().get(key.encode()))

    def field_loop(self, keys, field):
        bkeys = [k.encode() for k in keys]  # encoded before the timing
        get, loads = self._read().get, pickle.loads

        def loop():
            for k in bkeys:
                loads(get(k))[field]
        return loop

    def scan_sum(self, field):
        loads = pickle.loads
        return sum(loads(v)[field] for _k, v in self._read().cursor())

    def refresh(self):
        """A new read transaction: the newest commit."""
        if self.txn is not None:
            self.txn.abort()
            self.txn = None

    def drop(self, label=None):
        self.refresh()
        with self.env.begin(write=True) as txn:
            n = txn.stat(self.db)["entries"]
            txn.drop(self.db, delete=True)
        return n

    def close(self):
        self.refresh()
        self.env.close()


class DiskcacheSide(Side):
    name = "diskcache"

    def __init__(self, path: str, readonly: bool = False):
        import diskcache

        self.cache = diskcache.Cache(path, size_limit=1 << 40, tag_index=True)

    def put_batch(self, items, label=None):
        cache = self.cache
        with cache.transact():
            for k, v in items:
                cache.set(k, v, tag=label)

    def put_durable(self, key, value, label=None):
        self.cache.set(key, value, tag=label)

    def get(self, key):
        return self.cache[key]

    def field_loop(self, keys, field):
        cache = self.cache

        def loop():
            for k in keys:
                cache[k][field]
        return loop

    def scan_sum(self, field):
        cache = self.cache
        return sum(cache[k][field] for k in cache.iterkeys())

    def drop(self, label):
        return self.cache.evict(label)

    def close(self):
        self.cache.close()


class ShelveSide(Side):
    name = "shelve"

    def __init__(self, path: str, readonly: bool = False):
        import shelve

        os.makedirs(path, exist_ok=True)
        self.sh = shelve.open(os.path.join(path, "shelf"), flag="r" if readonly else "c", protocol=PROTOCOL)

    def put_batch(self, items, label=None):
        sh = self.sh
        for k, v in items:
            sh[k] = v
        sh.sync()

    def put_durable(self, key, value, label=None):
        self.sh[key] = value
        self.sh.sync()  # rewrites dbm.dumb's index; no fsync

    def get(self, key):
        return self.sh[key]

    def field_loop(self, keys, field):
        sh = self.sh

        def loop():
            for k in keys:
                sh[k][field]
        return loop

    def close(self):
        self.sh.close()


class SqliteSide(Side):
    name = "sqlite"

    def __init__(self, path: str, readonly: bool = False):
        import sqlite3

        os.makedirs(path, exist_ok=True)
        file = os.path.join(path, "kv.sqlite")
        if readonly:
            self.con = sqlite3.connect(f"file:{file}?mode=ro", uri=True, isolation_level=None)
        else:
            self.con = sqlite3.connect(file, isolation_level=None)
            self.con.execute("PRAGMA journal_mode=WAL")
            self.con.execute("PRAGMA synchronous=FULL")
            self.con.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB)")

    def put_batch(self, items, label=None):
        dumps = pickle.dumps
        con = self.con
        con.execute("BEGIN")
        con.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?)", ((k, dumps(v, PROTOCOL)) for k, v in items))
        con.execute("COMMIT")

    def put_durable(self, key, value, label=None):
        self.con.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", (key, pickle.dumps(value, PROTOCOL)))

    def get(self, key):
        return pickle.loads(self.con.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()[0])

    def field_loop(self, keys, field):
        execute, loads = self.con.execute, pickle.loads
        sql = "SELECT value FROM kv WHERE key = ?"

        def loop():
            for k in keys:
                loads(execute(sql, (k,)).fetchone()[0])[field]
        return loop

    def scan_sum(self, field):
        loads = pickle.loads
        return sum(loads(v)[field] for (v,) in self.con.execute("SELECT value FROM kv"))

    def drop(self, label=None):
        """No labels in the table: the nearest is dropping the whole table."""
        n = self.con.execute("SELECT count(*) FROM kv").fetchone()[0]
        self.con.execute("DROP TABLE kv")
        return n

    def close(self):
        self.con.close()


def open_side(name: str, path: str, readonly: bool = False, label=None) -> Side:
    if name == "bale":
        return BaleSide(path, readonly)
    if name == "lmdb":
        return LmdbSide(path, readonly, label)
    if name == "diskcache":
        return DiskcacheSide(path, readonly)
    if name == "shelve":
        return ShelveSide(path, readonly)
    if name == "sqlite":
        return SqliteSide(path, readonly)
    raise ValueError(name)
