"""A child forked inside a batch inherits the open transaction. When the
child leaves the `with` block by sys.exit() (or any exception), _write
calls _abort(), which flock(LOCK_UN)s the lock file description it shares
with the parent -- releasing the *parent's* writer lock -- and unlinks the
parent's new segment files. Another writer then runs concurrently with the
parent's batch: both append at the same committed offset and both commit the
same generation to the same superblock slot. Result: an acknowledged put of
the other writer is lost and the parent's value reads back as the other
writer's bytes (silent wrong value).
Exits 0 when the other writer is kept out until the parent's batch ends
and every acknowledged value reads back."""
import os, subprocess, sys, tempfile, time
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
s["seed"] = "s" * 100              # an open unlabelled segment exists

other = (
    "import bale,sys; s=bale.Store(sys.argv[1]); s.put('w', 'W'*100); "
    "print('other writer committed', flush=True)"
)
with s.batch():
    s.put("a", "A" * 100)          # appended at the committed length L
    pid = os.fork()
    if pid == 0:
        sys.exit(0)                # child: SystemExit runs through the with
    os.waitpid(pid, 0)
    w = subprocess.Popen([sys.executable, "-c", other, d])
    try:
        w.wait(timeout=3)
        released = True
    except subprocess.TimeoutExpired:
        released = False
w.wait(timeout=30)
s.close()
r = bale.Store(d, readonly=True)
got = {k: r.get(k) for k in ("seed", "a", "w")}
print("lock released to another writer during the batch:", released)
print("values after reopen:", {k: (v[:3] + "..." if isinstance(v, str) else v) for k, v in got.items()})
ok = not released and got == {"seed": "s" * 100, "a": "A" * 100, "w": "W" * 100}
if not ok:
    print("BUG: child exit inside an inherited batch broke the parent's transaction")
sys.exit(0 if ok else 1)
