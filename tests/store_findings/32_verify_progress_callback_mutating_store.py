"""verify(progress=...) calls back into user code between segments, holding
only the (re-entrant) mutex. A callback that writes (drop, reclaim, put) or
closes the store changes self._maps under verify's feet: verify then looks
up a segment of its old snapshot in the new _maps and dies with a bare
KeyError (or ValueError for closed handles). Expected: verify checks its own
snapshot consistently (keep the snapshot's handles locally) or refuses
re-entrant writes with a clear error. A drop in the callback makes verify
report a healthy store as damaged (FormatError ".sums ... missing").
Exits 0 when no KeyError escapes and no false FormatError is raised."""
import os, sys, tempfile
import bale

bad = []
for name, action in [("drop", lambda s: s.drop("B")), ("close", lambda s: s.close()),
                     ("reclaim", lambda s: s.reclaim())]:
    d = os.path.join(tempfile.mkdtemp(), "s")
    s = bale.Store(d)
    for i in range(20):
        s.put(f"a{i}", i, label="A")
        s.put(f"b{i}", i, label="B")
    for i in range(15):
        del s[f"a{i}"]
    fired = []
    def progress(done, total):
        if not fired:
            fired.append(1)
            action(s)
    try:
        s.verify(progress=progress)
        out = "ok"
    except bale.FormatError as e:
        out = f"BUG false damage report on a healthy store: {e}"
        bad.append(name)
    except (RuntimeError, ValueError) as e:
        out = f"clean {type(e).__name__}: {e}"
    except Exception as e:
        out = f"BUG {type(e).__name__}: {e}"
        bad.append(name)
    print(f"{name:8s} {out}")
sys.exit(1 if bad else 0)
