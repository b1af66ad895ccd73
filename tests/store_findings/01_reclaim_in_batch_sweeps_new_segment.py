"""reclaim() inside a batch runs _sweep, which unlinks every seg-/idx- file
the *snapshot* does not name, including the segment (and .sums) files the
open batch just created. The commit then dies with a bare FileNotFoundError
on seg-N.sums (and were the .sums open, the commit would name a segment
file that is gone). Expected: either a clean RuntimeError from reclaim()
up front, or the batch commits with both values.
Exits 0 when the behaviour is correct."""
import sys, tempfile, os
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
try:
    with s.batch():
        s.put("a", {"x": 1}, label="new")   # creates seg-00000001 in this batch
        try:
            s.reclaim()                      # sweeps it: not named by the snapshot
        except RuntimeError:
            print("reclaim refused inside a batch: fine")
            sys.exit(0)
        s.put("b", {"x": 2}, label="new")
except Exception as e:
    print("BUG: batch with reclaim() fails at commit:", type(e).__name__, e)
    sys.exit(1)
s.close()
r = bale.Store(d, readonly=True)
r.verify()
sys.exit(0 if (r["a"] == {"x": 1} and r["b"] == {"x": 2}) else 1)
