# bytes changed in place after verify=True (bale.load adopts a writable bytearray without copying; bale.open maps a file a peer may rewrite, e.g. a /dev/shm segment): the region stays trusted, so a key that iteration lists misses with KeyError instead of FormatError
import bale, os, tempfile
d = {f"key_number_{i:04d}": i for i in range(20)}
good = bytes(bale.compact(d))
bad = 0
# 1. bale.load over a bytearray the caller keeps writing to
b = bytearray(good)
r1 = bale.load(b, verify=True)
i = b.index(b"key_number_0007"); b[i:i + 15] = b"KEY_NUMBER_0007"
# 2. bale.open over a file rewritten in place (same length)
p = os.path.join(tempfile.mkdtemp(), "r.bale")
open(p, "wb").write(good)
r2 = bale.open(p, verify=True)
with open(p, "r+b") as f:
    f.seek(i); f.write(b"KEY_NUMBER_0007")
for name, r in (("load(bytearray)", r1), ("open(file)", r2)):
    for k in list(r.root.keys()):
        try:
            r.root[k]
        except bale.FormatError as e:
            print(name, "clean:", e)
        except KeyError:
            print(name, f"KeyError for {k!r}, which iteration just listed"); bad += 1
raise SystemExit(1 if bad else 0)
