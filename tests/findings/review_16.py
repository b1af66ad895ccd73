# a key stored at a non-minimal string width (unverified bytes): the source view's lookup raises FormatError (its index is checked once), but bale.compact/append/compacted copy the bytes as they are into a region this process trusts, where the same lookup of a key that iteration lists raises KeyError
import bale, struct, xxhash
def fix(b):
    b = bytearray(b); b[32:40] = bytes(8); b[32:40] = struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(b))); return bytes(b)
d = {"abcdefghi": 1, "zzzzzzzzz": 2}
b = bytearray(bytes(bale.compact(d)))
for o in range(64, len(b), 8):
    w = struct.unpack_from("<Q", b, o)[0]
    if w & 7 == 4 and (w >> 3) & 3 == 0 and (w >> 5) & 0xFFFF == 9:   # ASCII STR slot of a 9-char key
        struct.pack_into("<Q", b, o, w | (1 << 3))                    # width ASCII -> Latin-1 (same text)
        break
src = bale.load(fix(b))                                              # unverified
bad = 0
for name, view in [("source", lambda: src.root), ("compact", lambda: bale.compact([src.root]).root[0]),
                   ("append", lambda: bale.compact(["x"]).append(src.root).root), ("compacted", lambda: src.compacted().root)]:
    v = view()
    for k in list(v.keys()):
        try:
            v[k]
        except bale.FormatError as e:
            print(f"{name}: FormatError ({e})")
        except KeyError:
            print(f"{name}: KeyError for {k!r}, which iteration listed"); bad += 1
raise SystemExit(1 if bad else 0)
