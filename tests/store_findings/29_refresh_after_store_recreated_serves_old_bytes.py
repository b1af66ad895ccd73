"""A reader's refresh() reuses the mapping it already has for a segment id
whenever that mapping is at least the committed length (_load_snapshot:
`old.nbytes >= info.length`), without checking that it is still the same
file. When the store directory is removed and created anew (a cache wiped
and rebuilt while a long-running reader lives), ids restart at 1 and the
reader keeps reading the *old* store's segment under the new store's index:
new entries decode against old bytes -- silent wrong values (or
FormatErrors). Identify files (st_dev/st_ino, or a store id in the commit
record) before reusing a mapping.
A writer that lives across the wipe is worse: its next put reloads the
snapshot, reuses its old lineage for segment 1 as the handle to append to,
and pwrites past the old length into the *new* file, leaving a hole: the
new store fails verify() ("span ... does not follow").
Exits 0 when the reader, after refresh(), reads the new store's values and
the surviving writer leaves a store that verifies."""
import os, shutil, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
with bale.Store(d) as s:
    s["k"] = "old-" + "o" * 200
    s["pad"] = "p" * 5000
    for i in range(10):
        s[f"x{i}"] = i
r = bale.Store(d, readonly=True)
assert r["k"].startswith("old-")
shutil.rmtree(d)                         # the cache is wiped ...
with bale.Store(d) as s:                 # ... and rebuilt with the same layout
    s["k"] = "new-" + "n" * 200
r.refresh()
try:
    got = r["k"]
except bale.FormatError as e:
    got = f"FormatError: {e}"
print(f"generation {r.generation}; reader reads k = {got[:12]!r}...")
fresh = bale.Store(d, readonly=True)["k"]
print(f"a fresh reader reads k = {fresh[:12]!r}...")
reader_ok = got == fresh

d2 = os.path.join(tempfile.mkdtemp(), "s")
w = bale.Store(d2)
w["k"] = "old-" + "o" * 200
w["pad"] = "p" * 5000
shutil.rmtree(d2)
with bale.Store(d2) as s:
    s["k"] = "new-" + "n" * 200
w["after"] = {"x": 1}                    # the writer that outlived the wipe
w.close()
try:
    bale.Store(d2, readonly=True).verify()
    writer_ok = True
except bale.FormatError as e:
    print("BUG: the surviving writer damaged the new store:", e)
    writer_ok = False
sys.exit(0 if reader_ok and writer_ok else 1)
