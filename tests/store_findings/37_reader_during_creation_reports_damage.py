"""A reader that opens a store while its creator is between mkdir and the
first superblock write (both SUPER files missing) is told the store is
*damaged*: FormatError "no valid superblock (SUPER.0: missing; SUPER.1:
missing)". Nothing is damaged; there is no store yet. When both slots are
missing (not torn), a reader should say so (FileNotFoundError "no bale store
here", as for a missing directory) or wait for the creator's lock.
Exits 0 when no FormatError is raised for a directory with no superblock."""
import os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
os.makedirs(d)
open(os.path.join(d, "LOCK"), "wb").close()      # the creator got this far
try:
    bale.Store(d, readonly=True)
    print("opened")
    ok = True
except bale.FormatError as e:
    print("BUG: reported as damaged:", e)
    ok = False
except FileNotFoundError as e:
    print("clean:", e)
    ok = True
sys.exit(0 if ok else 1)
