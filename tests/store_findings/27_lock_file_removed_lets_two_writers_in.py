"""LOCK is opened once per Store and flocked on that open file. If LOCK is
removed (an administrator "cleaning a stale lock", a tool syncing the
directory) and re-created while a writer is inside a batch, the next writer
flocks the *new* inode and runs concurrently: both append at the same
committed offset of the same segment and commit the same generation to the
same superblock slot -- an acknowledged value is lost and another reads back
the other writer's bytes. The usual remedy: after flock, compare fstat(fd)
with stat(path) and retry with a fresh open when they differ (and create
LOCK once, at store creation, never by a writer that merely opens).
Exits 0 when the second writer waits for the first batch to end."""
import os, subprocess, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
s["seed"] = "s" * 100
other = "import bale,sys; s=bale.Store(sys.argv[1]); s.put('w', 'W'*100)"
with s.batch():
    s.put("a", "A" * 100)
    if os.path.exists(os.path.join(d, "LOCK")):  # "stale lock" removed (writers
        os.unlink(os.path.join(d, "LOCK"))      # now lock the directory itself)
    w = subprocess.Popen([sys.executable, "-c", other, d])
    try:
        w.wait(timeout=3)
        concurrent = True
    except subprocess.TimeoutExpired:
        concurrent = False
w.wait(timeout=30)
s.close()
r = bale.Store(d, readonly=True)
got = {k: r.get(k) for k in ("seed", "a", "w")}
print("second writer ran inside the first one's batch:", concurrent)
print("after reopen:", {k: (v[:3] + "..." if isinstance(v, str) else v) for k, v in got.items()})
ok = not concurrent and got == {"seed": "s" * 100, "a": "A" * 100, "w": "W" * 100}
sys.exit(0 if ok else 1)
