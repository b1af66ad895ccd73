"""The delta (up to 1,024 entries, keys included) is rewritten into the
superblock at every commit, and key size is unbounded. After 200 puts with
256 KiB keys (a URL/document used as key, a hashed blob forgotten), every
later commit -- even `s["x"] = 1` -- rewrites and fdatasyncs a 50 MB
superblock (twice the space: both slots), until 1,024 entries push the delta
into an index file. Bound key size (e.g. 64 KiB, ValueError), or move the
delta to an index file by bytes as well as by count.
Exits 0 when a small commit after big keys writes a superblock under 1 MiB."""
import os, sys, tempfile, time
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
try:
    s.put("k" * (256 << 10), 0)
    print("a 256 KiB key was accepted")
except ValueError as e:
    print("a 256 KiB key is refused:", e)
big = "k" * (32 << 10)   # as large as keys may be, about
with s.batch():
    for i in range(200):
        s.put(f"{i}:{big}", i)
t = time.time()
for i in range(5):
    s["x"] = i
dt = (time.time() - t) / 5
size = max(os.path.getsize(os.path.join(d, n)) for n in ("SUPER.0", "SUPER.1"))
print(f"a one-int put takes {dt * 1000:.0f} ms and writes a {size / 2**20:.1f} MiB superblock")
sys.exit(0 if size < (1 << 20) else 1)
