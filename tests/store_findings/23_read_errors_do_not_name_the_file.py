"""The rule: a damaged store gives FormatError *naming the file* and the
problem. The Rust get path (_store_get -> value_handle / decode) raises
FormatErrors with no file name at all ("value length 65 is not a multiple
of 8 ...", "index entry of key k is not a 4-tuple: Int(7)", decode errors
of a damaged root): the user cannot tell which segment or index file (or
superblock) is damaged. Same for flipped bytes inside a value read with
s[k] (only verify() names the file).
Exits 0 when every such FormatError names a store file."""
import os, re, sys, tempfile
import bale
from _common import rewrite_record, small_store

d = os.path.join(tempfile.mkdtemp(), "s")
small_store(d)
def lie(record):
    seg = sorted(record["segments"])[0]
    length = record["segments"][seg][1]
    record["delta"].update({
        "odd": (seg, 65, 2, 0),
        "past": (seg, length + 64, 2, 0),
        "flags": (seg, length, 2, 0x80),
        "root": (seg, length, (10**6 << 19) | 2, 0),
        "int": 7,
    })
rewrite_record(d, lie)
r = bale.Store(d, readonly=True)
unnamed = []
for k in ("odd", "past", "flags", "root", "int"):
    try:
        bale.thaw(r[k])
        print(f"{k:6s} read a value?!")
        unnamed.append(k)
    except bale.FormatError as e:
        named = re.search(r"(seg|idx)-\d{8}\.bale|SUPER\.[01]", str(e))
        print(f"{k:6s} {'names a file' if named else 'NO FILE NAMED'}: {e}")
        if not named:
            unnamed.append(k)
sys.exit(1 if unnamed else 0)
