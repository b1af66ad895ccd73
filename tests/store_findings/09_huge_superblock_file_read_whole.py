"""_read_superblock reads the whole superblock file into memory before
looking at its header. A damaged or foreign SUPER.x that is huge (here a
sparse 8 GiB file; the spec says the other slot MAY be anything and is
ignored) makes every open read 8 GiB: MemoryError under a memory limit,
minutes of I/O otherwise. The header's `n` says how long the file must be:
fstat first, and refuse a size other than 40 + n without reading.
Exits 0 when the store opens (under a 1 GiB address-space limit) from its
valid superblock, ignoring the huge one."""
import os, resource, sys, tempfile
import bale
from _common import small_store, newest_super

d = os.path.join(tempfile.mkdtemp(), "s")
small_store(d)
valid = newest_super(d)
other = os.path.join(d, "SUPER.0" if valid.endswith("SUPER.1") else "SUPER.1")
with open(other, "wb") as f:
    f.truncate(8 << 30)
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, hard))
try:
    n = len(bale.Store(d, readonly=True))
    print("opened:", n, "values")
    ok = n == 20
except MemoryError:
    print("BUG: MemoryError reading an 8 GiB superblock slot")
    ok = False
finally:
    os.unlink(other)
sys.exit(0 if ok else 1)
