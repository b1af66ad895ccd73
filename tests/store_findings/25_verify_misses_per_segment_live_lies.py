"""verify() compares the number of live keys with the record's `count`, and
the open check only compares `count` with the sum of the segments' `live`.
Nobody checks each segment's `live` against the index. A commit record
(valid checksum) that moves live counts between segments keeping the sum
passes verify(); the next commit by any writer then deletes the sealed
segment whose `live` says 0 -- with its files -- and every key in it
silently disappears (and len() still counts them: 41 for 24 keys).
Exits 0 when verify() refuses the lying record (or no value is lost)."""
import os, sys, tempfile
import bale
from _common import rewrite_record

d = os.path.join(tempfile.mkdtemp(), "s")
with bale.Store(d, segment_size=4096) as s:
    for i in range(40):
        s.put(f"k{i}", {"i": i, "pad": "p" * 200}, label="L")
    rows = {k: v.row() for k, v in s._snap.segments.items()}
sealed = min(rows)
last = max(rows)
assert not rows[sealed][5] and rows[sealed][2] > 0, rows
moved = rows[sealed][2]

def lie(record):
    seg = record["segments"]
    a, b = seg[sealed], seg[last]
    seg[sealed] = (a[0], a[1], 0, *a[3:])
    seg[last] = (b[0], b[1], b[2] + moved, *b[3:])
rewrite_record(d, lie)

try:
    got = bale.Store(d, readonly=True).verify()
    print("verify() passed the lying record:", got)
    verified = True
except bale.FormatError as e:
    print("verify refused:", e)
    verified = False
w = bale.Store(d)
w.put("other", 1, label="M")          # any commit
w.close()
r = bale.Store(d, readonly=True)
lost = [f"k{i}" for i in range(40) if f"k{i}" not in r]
print(f"after one more commit: {len(lost)} of 40 values gone, len={len(r)}")
sys.exit(0 if not verified or not lost else 1)
