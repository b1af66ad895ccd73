"""_create refuses to overwrite a store whose superblocks exist but are
invalid ("never overwrite a damaged store with an empty one"), but when
both SUPER files are *missing* it creates a fresh empty store in the
directory even though seg-*/idx-* files are there -- and the first write's
sweep then deletes every one of them as "files no commit names" (and the new store's
first segment, id 1, O_TRUNCs the old seg-00000001.bale). A store
directory missing only its superblocks (a copy or restore still in
progress, a sync tool, a mistaken `rm SUPER.*`) is turned into an empty
store and its data destroyed, with no error. Refuse (FormatError naming the
directory) when segment or index files exist without a valid superblock.
Exits 0 when opening such a directory as a writer is refused, or the data
files are left alone."""
import os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
with bale.Store(d) as s, s.batch():
    for i in range(2000):
        s.put(f"k{i}", {"i": i})
def files():
    return {n: os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.startswith(("seg-", "idx-"))}
before = files()
for n in ("SUPER.0", "SUPER.1"):
    os.unlink(os.path.join(d, n))
try:
    with bale.Store(d) as w:
        w["new"] = 1
except bale.FormatError as e:
    print("refused:", e)
    sys.exit(0)
after = files()
gone = [n for n in before if n not in after]
shrunk = [f"{n} {before[n]}->{after[n]} bytes" for n in before if n in after and after[n] < before[n]]
print(f"opened as a new empty store; its first write deleted {gone} and truncated/reused {shrunk}")
gone += shrunk
sys.exit(1 if gone else 0)
