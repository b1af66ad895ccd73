"""Same root cause as 10, worse symptom: a thread reading while another
thread's batch is open takes an entry from that batch's pending dict; if
the batch rolls back before the read resolves the entry, _abort has popped
the segment's lineage and _handle falls back to the committed mapping:
FormatError "seg-N.bale: an index entry ends at X, past the segment's
committed bytes" -- a healthy store reported as damaged. Iteration also
dies with "dictionary changed size during iteration".
(sys.setswitchinterval(1e-6) only makes the race frequent.)
Exits 0 when reader threads see no error in 10 s."""
import collections, os, sys, tempfile, threading, time
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
s["base"] = 1
sys.setswitchinterval(1e-6)
stop = threading.Event()
errs = collections.Counter()

def writer():
    i = 0
    while not stop.is_set():
        i += 1
        try:
            with s.batch():
                for j in range(20):
                    s.put(f"k{j}", {"i": i, "pad": "x" * 100}, label=f"L{i % 3}")
                if i % 2:
                    raise ValueError("roll back")
        except ValueError:
            pass

def reader():
    while not stop.is_set():
        for j in range(20):
            try:
                v = s.get(f"k{j}")
                if v is not None:
                    bale.thaw(v)
                list(s)
            except Exception as e:
                errs[f"{type(e).__name__}: {str(e)[:100]}"] += 1

ts = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(2)]
for t in ts:
    t.start()
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 10)
stop.set()
for t in ts:
    t.join()
sys.setswitchinterval(0.005)
for k, v in errs.most_common(5):
    print(v, k)
bale.Store(d, readonly=True).verify()      # the store is fine
sys.exit(1 if errs else 0)
