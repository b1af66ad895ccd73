# issue 17 item 12 still open: byte 81 of compact([Color.RED, Color.BLUE]) (the TYPE's field count 2 -> 0), checksum fixed, passes verify=True; indexing/repr/hash/thaw raise IndexError('tuple index out of range') instead of FormatError
import bale, enum, struct, xxhash
class Color(enum.Enum):
    RED = 1
    BLUE = "b"
b = bytearray(bytes(bale.compact([Color.RED, Color.BLUE])))
assert b[80:82] == bytes([0x1C, 0x02])   # TYPE object, 2 fields (name, value)
b[81] = 0
b[32:40] = bytes(8); b[32:40] = struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(b)))
r = bale.load(bytes(b), verify=True)      # accepted
for name, op in [("root[0]", lambda: r.root[0]), ("repr", lambda: repr(r.root)), ("thaw", lambda: bale.thaw(r.root))]:
    try:
        op()
    except (bale.FormatError, bale.ThawError) as e:
        print(name, "clean:", e)
    except Exception as e:
        print(name, "WRONG EXCEPTION:", type(e).__name__, e)
        bad = True
raise SystemExit(1 if "bad" in dir() else 0)
