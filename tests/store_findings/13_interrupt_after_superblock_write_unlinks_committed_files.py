"""_commit wraps the superblock write in `except BaseException: _abort()`.
When the superblock's bytes are already written -- a Ctrl-C
(KeyboardInterrupt) raised just after its fdatasync returns, or an
fdatasync/ftruncate that fails after the pwrite (EIO) -- _abort unlinks the
transaction's new segment and .sums files, yet the superblock naming them
is complete (here even durable). Every later open of the store raises
FormatError "segment file named by the commit is missing": the whole store,
not just this put, is unreadable.
Simulated by wrapping os.fdatasync so that it raises KeyboardInterrupt
after syncing the superblock (what a SIGINT arriving during the fsync does).
Exits 0 when the store still opens with its earlier values."""
import os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
s["old"] = {"v": 1}

real = os.fdatasync
def fdatasync(fd):
    real(fd)
    if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith("SUPER."):
        raise KeyboardInterrupt  # SIGINT delivered during the superblock's fsync
os.fdatasync = fdatasync
try:
    s.put("new", {"v": 2}, label="fresh")   # a new segment file in this commit
except KeyboardInterrupt:
    print("put interrupted (its outcome may be either way)")
finally:
    os.fdatasync = real
s.close()
try:
    r = bale.Store(d, readonly=True)
    print("reopened:", dict((k, bale.thaw(r[k])) for k in r))
    ok = bale.thaw(r["old"]) == {"v": 1}
    r.verify()
except bale.FormatError as e:
    print("BUG: the store no longer opens:", e)
    ok = False
sys.exit(0 if ok else 1)
