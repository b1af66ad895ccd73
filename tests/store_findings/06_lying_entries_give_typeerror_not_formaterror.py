"""Index entries that are not 4-tuples of u64 (a damaged store whose commit
checksum is fixed) must give FormatError everywhere. The Rust get path
(_store_get) does, but the Python paths -- iteration, keys(), verify(),
reads inside a batch, reclaim() -- do `e[0] in segments` and
`h._handle(end, root, flags)` on whatever the entry is, so they raise
TypeError / ValueError / OverflowError, or worse accept it: an entry
(1.0, end, root, 0) or (True, ...) names segment 1 for the Python paths.
verify() -- the tool meant to diagnose damage -- raises TypeError, or passes
(entry "abcd": 'a' is no live segment, so the key counts as dropped), and a
read inside a batch returns a value where the same read outside gives
FormatError.
Exits 0 when every such lie gives FormatError from verify(), iteration and
batch reads."""
import os, sys, tempfile
import bale
from _common import rewrite_record, small_store

bad = []

def case(name, make):
    d = os.path.join(tempfile.mkdtemp(), "s")
    small_store(d)
    def lie(record):
        seg = sorted(record["segments"])[0]
        length = record["segments"][seg][1]
        record["delta"]["evil"] = make(seg, length)
    rewrite_record(d, lie)
    r = bale.Store(d, readonly=True)
    results = {}
    for what, fn in [
        ("verify", lambda: r.verify()),
        ("keys", lambda: r.keys()),
        ("get", lambda: bale.thaw(r.get("evil"))),
    ]:
        try:
            fn()
            results[what] = "ok"
        except bale.FormatError:
            results[what] = "FormatError"
        except Exception as e:
            results[what] = f"{type(e).__name__}"
    w = bale.Store(d)
    try:
        with w.batch():
            w.put("other", 1)
            bale.thaw(w.get("evil"))
        results["batch-get"] = "ok"
    except bale.FormatError:
        results["batch-get"] = "FormatError"
    except Exception as e:
        results["batch-get"] = type(e).__name__
    w.close()
    print(f"{name:10s} {results}")
    # verify must refuse every one of these lies; nothing may raise a non-bale error
    # and a read inside a batch must agree with the same read outside one
    if (results["verify"] != "FormatError" or results["batch-get"] != results["get"]
            or any(v not in ("ok", "FormatError") for v in results.values())):
        bad.append(name)

case("int", lambda seg, n: 7)
case("str", lambda seg, n: "abcd")
case("3-tuple", lambda seg, n: (seg, n, 2))
case("float_seg", lambda seg, n: (float(seg), n, 2, 0))
case("bool_seg", lambda seg, n: (True, n, 2, 0))
case("huge_end", lambda seg, n: (seg, 2**70, 2, 0))
case("list", lambda seg, n: [seg, 64, 2, 0])
print("not a clean FormatError from verify/keys/get/batch-get:", bad)
sys.exit(1 if bad else 0)
