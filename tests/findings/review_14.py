# unverified bytes (a frozenset that holds a tuple that holds the frozenset): hash(tuple_view) raises FormatError, but `tuple_view in frozenset_view` raises TypeError("unhashable type: 'TupleView'") -- the membership test turns the probe's FormatError into TypeError
import sys, struct, xxhash, bale
def slot_tuple(n, offset): return 6 | (n << 3) | ((offset >> 3) << 19)
buf = bytearray(64)
A, F = 64, 72
buf += struct.pack("<Q", F)                                   # tuple items at 64: [ -> frozenset at 72 ] (forward)
buf += struct.pack("<Q", 0x0D | (1 << 8)) + struct.pack("<Q", slot_tuple(1, A))   # FROZENSET of 1: the tuple
buf[0:8] = b"BALE\r\n\x1a\n"; buf[8:12] = struct.pack("<I", 1); buf[12:16] = b"\x04\x03\x02\x01"
buf[16:24] = struct.pack("<Q", len(buf)); buf[24:32] = struct.pack("<Q", F); buf[40:44] = struct.pack("<I", 3)   # SHARED|CYCLIC
buf[32:40] = struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(buf)))
r = bale.load(bytes(buf))                                     # unverified
t = next(iter(r.root))
try:
    hash(t)
except bale.FormatError as e:
    print("hash(t): FormatError:", e)
try:
    t in r.root
    print("membership answered")
except bale.FormatError as e:
    print("in: FormatError:", e)
except Exception as e:
    raise SystemExit(f"in: {type(e).__name__}: {e}")
