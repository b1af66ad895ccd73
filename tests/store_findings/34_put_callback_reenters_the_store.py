"""Compaction runs user code (a registered get=, a property): a put's value
can call back into the same Store while the put is appending. Each such
re-entrant call joins the put's transaction (the mutex is re-entrant), so:
- drop() of the put's own label pops the segment the put is appending to:
  the put dies with a bare KeyError (txn.segments[seg]);
- close() ends in AssertionError (see 15);
- put() to the same label: "another thread is appending to this region"
  (a RuntimeError, misleading but clean);
- reclaim(): sweeps the transaction's new files (see 01).
Expected: re-entrant writes refused with one clear error (or handled), and
the store left consistent (verify() passes, len() == number of keys).
Exits 0 when every case gives a clean error or works, and the store
verifies afterwards."""
import os, sys, tempfile
import bale

class Rec:
    def __init__(self, x):
        self.x = x

ACTION = {}
def get(obj):
    ACTION["f"]()
    return (obj.x,)
bale.register(Rec, ["x"], get=get, make=lambda x: Rec(x))

bad = []
for name, f in [
    ("drop own label", lambda s: s.drop("L")),
    ("put same label", lambda s: s.put("inner", 1, label="L")),
    ("put other label", lambda s: s.put("inner", 1, label="M")),
    ("reclaim", lambda s: s.reclaim()),
    ("close", lambda s: s.close()),
]:
    d = os.path.join(tempfile.mkdtemp(), "s")
    s = bale.Store(d)
    s.put("base", 0, label="L")
    ACTION["f"] = lambda: f(s)
    try:
        s.put("outer", Rec(5), label="L")
        out = "ok"
    except (RuntimeError, ValueError, OSError, bale.CompactError) as e:
        out = f"clean {type(e).__name__}: {str(e)[:80]}"
    except Exception as e:
        out = f"BUG {type(e).__name__}: {str(e)[:80]}"
        bad.append(name)
    try:
        r = bale.Store(d, readonly=True)
        r.verify()
        if len(r) != len(r.keys()):
            raise AssertionError(f"len {len(r)} != {len(r.keys())} keys")
    except Exception as e:
        out += f"; store afterwards: BUG {type(e).__name__}: {str(e)[:80]}"
        bad.append(name)
    print(f"{name:16s} {out}")
sys.exit(1 if bad else 0)
