# unverified bytes: a dataclass record whose TYPE flavor word is changed to 4 (enum) reads as a RecordView; `view == native` raises AttributeError("'DC' object has no attribute '_name_'") instead of FormatError/ThawError
import bale, dataclasses, struct, xxhash
@dataclasses.dataclass
class DC:
    x: object
    y: object
val = DC(1, "a" * 10)
b = bytearray(bytes(bale.compact([val, val])))
o = next(o for o in range(64, len(b), 8) if b[o] == 0x1C)     # the TYPE object
assert struct.unpack_from("<Q", b, o + 8)[0] == 1               # flavor: dataclass
struct.pack_into("<Q", b, o + 8, 4)                             # flavor: enum
b[32:40] = bytes(8); b[32:40] = struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(b)))
r = bale.load(bytes(b))                                         # unverified
try:
    print(r.root[0] == val)
except (bale.FormatError, bale.ThawError) as e:
    print("clean:", e)
except Exception as e:
    raise SystemExit(f"{type(e).__name__}: {e}")
