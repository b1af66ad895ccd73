"""Commit records with a valid checksum whose fields lie in ways the shape
check misses. Each must give FormatError (opening readonly, opening as a
writer, then a put), never AttributeError / OverflowError / struct.error.
- segments is a list, not a dict: `thaw(seg_view).items()` -> AttributeError
- a segment row's length >= 2**64: _open_segment(path, length) -> OverflowError
- generation 2**64-1 (header and record agree): opens, but every commit
  dies in SUPER_HEADER.pack with struct.error (the store can never be
  written again; it should be refused or reported as a FormatError)
Exits 0 when all of them are FormatErrors."""
import os, sys, tempfile
import bale
from bale import _store
from _common import newest_super, small_store, write_record

bad = []

def case(name, change, gen=None):
    d = os.path.join(tempfile.mkdtemp(), "s")
    small_store(d)
    name_sb = newest_super(d)
    g, _version, payload = _store._read_superblock(name_sb)
    record = bale.thaw(bale.load(payload).root)
    change(record)
    if gen is not None:
        record["generation"] = gen
        os.unlink(name_sb)
        name_sb = os.path.join(d, _store.SUPER_NAMES[gen % 2])
        other = os.path.join(d, _store.SUPER_NAMES[(gen + 1) % 2])
        if os.path.exists(other):
            os.unlink(other)
        g = gen
    write_record(name_sb, g, record)
    out = []
    for what, fn in [
        ("readonly open", lambda: bale.Store(d, readonly=True).keys()),
        ("writer put", lambda: bale.Store(d).put("new", 1)),
    ]:
        try:
            fn()
            out.append((what, "ok"))
        except bale.FormatError:
            out.append((what, "FormatError"))
        except Exception as e:
            out.append((what, f"{type(e).__name__}: {str(e)[:70]}"))
    print(f"{name:22s} {out}")
    allowed = ("FormatError", "ok") if gen is not None else ("FormatError",)
    if out[0][1] not in allowed or out[1][1] != "FormatError":
        bad.append(name)

def seg_list(r):
    r["segments"] = list(r["segments"].items())
    r["count"] = 0

def huge_len(r):
    seg = sorted(r["segments"])[0]
    row = r["segments"][seg]
    r["segments"][seg] = (row[0], 2**64 + 64, *row[2:])

case("segments is a list", seg_list)
case("length >= 2**64", huge_len)
case("generation 2**64-1", lambda r: None, gen=2**64 - 1)
print("non-FormatError outcomes:", bad)
sys.exit(1 if bad else 0)
