# views of unverified regions are copied byte-for-byte by compact / Region.append / compacted(): malformed encodings (here a dict shape holding the same key twice, and an inline string with non-zero padding) land in a region this process then treats as its own (trusted), which its own verify() rejects; the copy's len() disagrees with its thaw()
import bale, struct, xxhash
def fix(b):
    b = bytearray(b); b[32:40] = bytes(8); b[32:40] = struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(b))); return bytes(b)
bad = 0
# 1. a dict shape whose second key is changed into the first
buf = bytearray(bytes(bale.compact({"a": 1, "b": 2})))
i = buf.index(bytes([0x0b, ord("b")] + [0] * 6)); buf[i + 1] = ord("a")
src = bale.load(fix(buf))                       # unverified: reads may be wrong, that is allowed
# 2. an inline string slot with a non-zero padding byte
buf2 = bytearray(bytes(bale.compact(["ab", "cd"])))
j = buf2.index(bytes([0x13]) + b"ab" + bytes(5)); buf2[j + 6] = 0x41
src2 = bale.load(fix(buf2))
for name, make in [("compact", lambda s: bale.compact([s.root])), ("compact share", lambda s: bale.compact([s.root], share=True)),
                   ("append", lambda s: bale.compact(["x"]).append([s.root])), ("compacted", lambda s: s.compacted())]:
    for label, s in (("dup key", src), ("padding", src2)):
        out = make(s)
        try:
            out.verify()
        except bale.FormatError as e:
            bad += 1
            extra = ""
            if label == "dup key":
                d = out.root[0] if name != "compacted" else out.root
                extra = f"; len(copy)={len(d)} but len(thaw(copy))={len(bale.thaw(d))}"
            print(f"{name}: the region compaction wrote fails its own verify ({label}): {e}{extra}")
raise SystemExit(1 if bad else 0)
