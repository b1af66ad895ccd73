"""Store.close() forgets _maps and _lineages but keeps self._snap and
self._fast, which hold every segment handle and index view of the last
snapshot. A closed Store object that is still referenced (a global, an
attribute, a `with bale.Store(...) as s:` variable after the block) keeps
all its segment mappings -- for a writer, its anonymous copies of everything
it appended (see 04) -- and the files' disk space after they are dropped by
other writers. Values read before hold their own handles, so close() can
release everything.
Exits 0 when a closed (but referenced) store maps nothing of the store."""
import gc, os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
with bale.Store(d, segment_size=4096) as s, s.batch():
    for i in range(300):
        s.put(f"k{i}", {"i": i, "pad": "p" * 100})
gc.collect()
mapped = [l for l in open("/proc/self/maps") if d in l]
anon = s._fast and sum(h.nbytes for h in s._fast[1].values())
print(f"closed store still maps {len(mapped)} ranges of store files; its handles cover {anon} bytes")
with bale.Store(d) as w:
    w.drop(None)
gc.collect()
held = [l for l in open("/proc/self/maps") if d in l and "(deleted)" in l]
print(f"after another writer dropped everything: {len(held)} deleted files still mapped")
sys.exit(0 if not mapped and not held else 1)
