"""A reader reads SUPER.0 and then SUPER.1, at two moments. A writer
rewrites each slot in place (pwrite, then ftruncate when shorter), so a slot
is invalid while it is being rewritten. If the reader is slow enough between
its two reads (a busy machine), it can find SUPER.0 mid-rewrite (commit g)
and SUPER.1 mid-rewrite (commit g+1): both invalid, and Store() / refresh()
raise FormatError "no valid superblock" on a healthy store. Readers should
retry (re-read both) before declaring the store damaged.
Here on tmpfs (cheap fsync) a writer commits in a loop while readers open
the store and refresh for a few seconds, sleeping a little between the two
reads via a tiny hook to widen the window as a loaded machine would.
Usage: 18_... [SECONDS]. Exits 0 when no reader ever gets FormatError."""
import os, random, subprocess, sys, tempfile, time
import bale
from bale import _store

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 5
base = "/dev/shm" if os.path.isdir("/dev/shm") else None
d = os.path.join(tempfile.mkdtemp(dir=base), "s")
s = bale.Store(d)
s["k"] = 0
WRITER = r'''
import bale, sys, time
s = bale.Store(sys.argv[1]); end = time.time() + float(sys.argv[2]); i = 0
while time.time() < end:
    i += 1
    s["k"] = "x" * (i % 97)   # records of varying length: shrinking rewrites truncate
'''
w = subprocess.Popen([sys.executable, "-c", WRITER, d, str(SECONDS)])
# a reader descheduled between its two superblock reads (a loaded machine)
orig = _store._read_superblock
def slow_read(path):
    got = orig(path)
    if path.endswith("SUPER.0"):
        time.sleep(random.uniform(0, 0.002))
    return got
_store._read_superblock = slow_read
errors = opened = 0
end = time.time() + SECONDS
r = bale.Store(d, readonly=True)
while time.time() < end:
    try:
        r.refresh()
        opened += 1
    except bale.FormatError as e:
        errors += 1
        last = e
w.wait()
print(f"{opened} refreshes, {errors} spurious FormatErrors", f"(last: {last})" if errors else "")
sys.exit(1 if errors else 0)
