"""Every mapped segment keeps its file open (Storage::mapped holds the File,
and a writer's lineage keeps it too), so opening a store holds one
descriptor per live segment. A store with more segments than the
descriptor limit (default soft limit 1024: e.g. 1100 labels, or a 70 GB
store of 64 MiB segments) cannot be opened at all: OSError EMFILE "Too many
open files". A mapping does not need its descriptor once made: close it
after mmap (keep st_dev/st_ino if identity is needed). A writer is worse:
two per segment it wrote (the write fd in _seg_fds is never closed when
the segment is sealed, plus the lineage's mapping): 300 fds for 150 sealed
4 KiB segments.
Exits 0 when a store with 1100 segments opens under RLIMIT_NOFILE 1024."""
import os, resource, subprocess, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
with bale.Store(d) as s, s.batch():
    for i in range(1100):
        s.put(f"k{i}", i, label=f"label{i}")
CHILD = r'''
import resource, sys, bale
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
try:
    r = bale.Store(sys.argv[1], readonly=True)
    print("opened", len(r), r["k1099"])
except OSError as e:
    print("BUG", type(e).__name__, e)
    sys.exit(1)
'''
p = subprocess.run([sys.executable, "-c", CHILD, d], capture_output=True, text=True, timeout=300)
print(p.stdout.strip(), p.stderr.strip()[-300:])
sys.exit(p.returncode)
