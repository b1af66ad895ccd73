"""reclaim() only rewrites segments with 0 < live <= puts/2, and a commit
only removes segments with live == 0 that are sealed. An *open* segment
whose values were all deleted (or overwritten under another label) is
neither: its file stays on disk forever -- up to segment_size (64 MiB by
default) per label ever used -- and reclaim() reports 0 bytes freed.
Exits 0 when reclaim() returns the space of a segment with no live value."""
import os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
with s.batch():
    for i in range(200):
        s.put(f"k{i}", {"blob": os.urandom(4096).hex()}, label="tmp")
with s.batch():
    for i in range(200):
        del s[f"k{i}"]
freed = s.reclaim()
size = sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.startswith("seg-"))
print(f"len={len(s)} labels={s.labels()} reclaim freed {freed} bytes; segment files still hold {size} bytes")
print("segment rows:", {k: v.row() for k, v in s._snap.segments.items()})
sys.exit(0 if size < 64 * 1024 else 1)
