"""A writer keeps every byte it ever appended in anonymous memory: each
segment's lineage is a private file mapping plus an anonymous reservation
that holds the appended bytes, and after a commit that lineage handle
becomes the segment's read handle in _maps (and stays in _lineages even
after the segment is sealed). So a long-running writer's RSS grows with the
size of the store it wrote (not evictable to the page cache), against the
README's "stores larger than memory work".
Here: 1 MiB segments, 160 MiB written in 1 MiB-ish puts; the writer's
anonymous RSS grows by about the whole amount.
Exits 0 when the anonymous memory growth stays below 64 MiB."""
import os, sys, tempfile
import bale

def rss_anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d, segment_size=1 << 20)
blob = os.urandom(1 << 20)
before = rss_anon()
for i in range(160):
    s.put(f"k{i}", blob[: (1 << 20) - 4096])
grown = rss_anon() - before
print(f"anonymous RSS grew by {grown / 2**20:.0f} MiB after writing 160 MiB "
      f"({len(s._lineages)} lineages, {len(s._maps)} maps held)")
s.close()
import shutil; shutil.rmtree(os.path.dirname(d))
sys.exit(0 if grown < 64 << 20 else 1)
