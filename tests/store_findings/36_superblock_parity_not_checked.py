"""The spec puts commit g in SUPER.{g mod 2}, so that the slot being
rewritten always holds the commit *before* the newest one. Readers do not
check the parity: a store whose newest commit sits in the wrong slot (a
restored backup with the files swapped, a copy tool, another
implementation) is accepted, and the next commit g+1 overwrites the newest
commit g in place. If that write is torn (crash), the store falls back to
g-1: commit g, acknowledged, is lost (and g-1 may name files g removed).
Either refuse a superblock in the wrong slot (FormatError) or have the
writer choose the slot that does not hold the newest commit.
Exits 0 when the swapped store is refused, or when a torn next commit still
leaves commit g."""
import os, sys, tempfile
import bale
from bale import _store

d = os.path.join(tempfile.mkdtemp(), "s")
with bale.Store(d) as s:
    s["a"] = 1            # commit 2 -> SUPER.0
    s["b"] = 2            # commit 3 -> SUPER.1
s0, s1 = os.path.join(d, "SUPER.0"), os.path.join(d, "SUPER.1")
os.rename(s0, s0 + ".tmp"); os.rename(s1, s0); os.rename(s0 + ".tmp", s1)   # swapped slots
try:
    w = bale.Store(d)
except bale.FormatError as e:
    print("swapped superblocks refused:", e)
    sys.exit(0)
w["c"] = 3                # commit 4: written to SUPER.0, which held commit 3
w.close()
target = os.path.join(d, "SUPER.0")
data = open(target, "rb").read()
with open(target, "r+b") as f:          # that write torn by a crash
    f.truncate(len(data) // 2)
r = bale.Store(d, readonly=True)
print(f"after a torn commit 4 the store is at generation {r.generation}: b={r.get('b')}")
sys.exit(0 if r.get("b") == 2 else 1)
