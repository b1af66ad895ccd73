"""Store creation writes SUPER.1 in place (open O_CREAT, pwrite, ftruncate,
fdatasync). A process killed (or a machine losing power) between the
O_CREAT and the write leaves an empty SUPER.1 and nothing else. Every later
Store(path) -- writer or reader -- then raises FormatError "no valid
superblock" forever: the half-created store can never be opened or
re-created, although it never held a commit (no SUPER.0, no segment or
index file). Creation should write the first superblock under a temporary
name and rename it (or treat "no commit ever made" as a store to create).
Exits 0 when the half-created store can be opened."""
import os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
os.makedirs(d)
open(os.path.join(d, "LOCK"), "wb").close()
open(os.path.join(d, "SUPER.1"), "wb").close()    # killed right after O_CREAT
try:
    with bale.Store(d) as s:
        s["k"] = 1
    print("opened and written")
    sys.exit(0)
except bale.FormatError as e:
    print("BUG: half-created store is bricked:", e)
    sys.exit(1)
