"""Reads take no lock and, while *any* thread has a batch open, go through
the Python path that consults that thread's pending entries. So another
thread sharing the Store reads values (and len()) of a batch that has not
committed -- and that may then be rolled back: the reader got a value the
store never held. Iterating in one thread while the batch thread puts can
also die with "dictionary changed size during iteration".
Exits 0 when a second thread sees only committed state."""
import os, sys, tempfile, threading
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
s["base"] = 1
in_batch, read_done = threading.Event(), threading.Event()
seen = {}

def batcher():
    try:
        with s.batch():
            s.put("ghost", {"never": "committed"})
            in_batch.set()
            read_done.wait(10)
            raise RuntimeError("roll back")
    except RuntimeError:
        pass

t = threading.Thread(target=batcher)
t.start()
in_batch.wait(10)
seen["get"] = s.get("ghost")
seen["len"] = len(s)
seen["contains"] = "ghost" in s
read_done.set()
t.join()
print("other thread saw during the batch:", seen, "; after rollback:", s.get("ghost"), len(s))

# iteration racing with puts of a batch in another thread
errors = []
stop = threading.Event()
def putter():
    with s.batch():
        i = 0
        while not stop.is_set() and i < 200000:
            s.put(f"p{i}", i)
            i += 1
th = threading.Thread(target=putter)
th.start()
try:
    for _ in range(200):
        list(s)
except RuntimeError as e:
    errors.append(str(e))
stop.set()
th.join()
print("iteration errors:", errors[:1])
ok = seen == {"get": None, "len": 1, "contains": False} and not errors
sys.exit(0 if ok else 1)
