"""close() inside a batch abandons the transaction (as documented), but the
batch's `with` exit then calls _commit(), whose _current() fails an
`assert` ("called inside a write transaction only"): an AssertionError
escapes to the user (and under `python -O` an AttributeError on None).
Expected: a clean error (ValueError "store ... is closed" / RuntimeError).
Exits 0 when no AssertionError/AttributeError escapes."""
import os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
try:
    with s.batch():
        s.put("z", 1)
        s.close()
    outcome = "no error"
except (AssertionError, AttributeError) as e:
    outcome = f"BUG {type(e).__name__}: {e}"
except (ValueError, RuntimeError, OSError) as e:
    outcome = f"clean {type(e).__name__}: {e}"
print(outcome)
r = bale.Store(d, readonly=True)
assert "z" not in r
sys.exit(1 if outcome.startswith("BUG") else 0)
