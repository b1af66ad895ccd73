"""reclaim() measures disk usage (os.scandir + entry.stat()) before taking
the writers' lock and again after releasing it; info() does the same with no
lock. When another writer process unlinks a file between the scandir and the
stat (any drop, emptied segment or index merge), reclaim()/info() raise a
bare FileNotFoundError -- and for the second measurement, *after* the
reclaim has committed, so the caller is told it failed when it happened.
Fix: ignore FileNotFoundError per entry (or measure under the lock).
Exits 0 when reclaim() and info() never fail while another process writes."""
import os, subprocess, sys, tempfile, time
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
with bale.Store(d, segment_size=4096) as s:
    s["x"] = 1
CHURN = r'''
import bale, sys, time
s = bale.Store(sys.argv[1], segment_size=4096); end = time.time() + float(sys.argv[2]); i = 0
while time.time() < end:
    i += 1
    with s.batch():
        for j in range(20):
            s.put(f"c{i}-{j}", "z" * 300, label=f"L{i % 5}")
    s.drop(f"L{(i + 2) % 5}")
'''
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 8
p = subprocess.Popen([sys.executable, "-c", CHURN, d, str(SECONDS)])
s = bale.Store(d, segment_size=4096)
errors, calls = [], 0
end = time.time() + SECONDS
while time.time() < end:
    for f in (s.reclaim, s.info):
        calls += 1
        try:
            f()
        except FileNotFoundError as e:
            errors.append(f"{f.__name__}: {e}")
p.wait()
print(f"{calls} calls, {len(errors)} FileNotFoundErrors", errors[:2])
sys.exit(1 if errors else 0)
