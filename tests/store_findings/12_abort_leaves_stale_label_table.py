"""_new_segment records a new segment id in self._labels, and _abort does
not undo it. The aborted segment's id is handed out again by the next
transaction (next_file comes from the snapshot) -- possibly to another
label. Until the next commit rebuilds _labels, the id is listed under both
labels: in one batch, drop("x") removes label "y"'s new segment (the
acknowledged batch loses y's values), and put(..., label="x") appends into
y's segment (the value is counted, and later dropped, as "y").
Found by 11_model_random_ops.py seed 2.
Exits 0 when labels stay apart after an aborted batch."""
import os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
s["base"] = 0
try:
    with s.batch():
        s.put("gone", 1, label="x")          # new segment N for "x"
        raise KeyboardInterrupt               # rolled back
except KeyboardInterrupt:
    pass
with s.batch():
    s.put("y1", {"v": 1}, label="y")          # gets the same id N
    dropped = s.drop("x")                     # "x" has no values...
    s.put("x1", {"v": 2}, label="x")
print("drop('x') said", dropped, "; labels:", s.labels(), "; y1:", s.get("y1"), "; x1:", s.get("x1"))
ok = dropped == 0 and s.get("y1") == {"v": 1} and s.labels() == {None: 1, "y": 1, "x": 1}
s.close()
r = bale.Store(d, readonly=True)
ok = ok and r.get("y1") == {"v": 1} and r.labels() == {None: 1, "y": 1, "x": 1}
print("after reopen: labels", r.labels(), "y1", r.get("y1"))
sys.exit(0 if ok else 1)
