"""Store.verify() promises to check every segment's bytes on disk against
the span checksums. In the process that wrote them, the segment handles in
_maps are the writer's lineages (a private mapping plus anonymous memory
holding the appended bytes), so verify() hashes the writer's memory, not the
file: a byte flipped on disk after the commit goes unnoticed by verify(),
while a fresh open (or `bale store verify`) refuses the store.
Exits 0 when verify() in the writing process detects the damage."""
import os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
s["k"] = {"payload": "x" * 1000}
seg = os.path.join(d, "seg-00000001.bale")
with open(seg, "r+b") as f:           # damage a committed byte of the value
    f.seek(os.path.getsize(seg) - 200)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0xFF]))
try:
    bale.Store(d, readonly=True).verify()
    fresh = "passed"
except bale.FormatError as e:
    fresh = f"FormatError ({e})"
try:
    s.verify()
    writer = "passed"
except bale.FormatError as e:
    writer = f"FormatError ({e})"
print("fresh reader verify:", fresh)
print("writer's own verify:", writer)
sys.exit(0 if writer != "passed" else 1)
