"""Durability on power loss. A store is created with SUPER.1 only; the
first put writes commit 2 to SUPER.0, *creating* that file (O_CREAT), then
fdatasyncs it -- but never fsyncs the directory after creating it
(_fsync_dir runs before the superblock write, and only when the commit made
segment/index files). After a power loss the directory entry SUPER.0 may be
missing: the acknowledged commit 2 is gone and the store is back at
commit 1. (Likewise the creation path fsyncs the directory, but only once;
this is the one superblock file created later.)
Checked by tracing the calls in order: after SUPER.0 is created, the
directory must be fsynced before put() returns.
Exits 0 when it is."""
import os, sys, tempfile
import bale
from bale import _store

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
events = []
real_open, real_fsync_dir = os.open, _store._fsync_dir

def traced_open(path, flags, *a, **k):
    existed = os.path.exists(path)
    fd = real_open(path, flags, *a, **k)
    if not existed and os.path.basename(str(path)).startswith("SUPER."):
        events.append(("created", os.path.basename(path)))
    return fd

def traced_fsync_dir(path):
    events.append(("fsync_dir", path))
    return real_fsync_dir(path)

os.open = traced_open
_store._fsync_dir = traced_fsync_dir
try:
    # segments exist already after this first put? no: the first put makes a
    # segment (so _fsync_dir runs, but *before* SUPER.0 is created)
    s["a"] = 1
finally:
    os.open, _store._fsync_dir = real_open, real_fsync_dir
print("events of the first put:", events)
created = [i for i, e in enumerate(events) if e[0] == "created"]
ok = all(any(e[0] == "fsync_dir" for e in events[i + 1:]) for i in created)
print("directory fsynced after creating the superblock file:", ok)
sys.exit(0 if ok else 1)
