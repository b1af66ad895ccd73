"""Two Store objects on one directory in one process each open LOCK, so
their flocks are on different open file descriptions and exclude each
other even within one thread: a put through the second Store while the
first one's batch is open blocks forever (self-deadlock, no error). Also
opening a writer Store (its constructor takes the lock) inside another's
batch hangs. A process-wide table of the locks this process holds (by
st_dev/st_ino) could raise a clear RuntimeError instead.
Exits 0 when the second put returns or raises within 5 s."""
import os, signal, sys, tempfile
import bale

class Hang(Exception):
    pass

def alarm(*_):
    raise Hang

d = os.path.join(tempfile.mkdtemp(), "s")
a = bale.Store(d)
b = bale.Store(d)
signal.signal(signal.SIGALRM, alarm)
outcome = None
try:
    with a.batch():
        a.put("x", 1)
        signal.alarm(5)
        try:
            b.put("y", 2)
            outcome = "returned"
        except Hang:
            outcome = "HANG"
        except Exception as e:
            outcome = f"{type(e).__name__}: {e}"
        finally:
            signal.alarm(0)
except Exception as e:
    outcome = f"{outcome}; batch: {type(e).__name__}: {e}"
print("second store's put inside the first's batch:", outcome)
sys.exit(1 if outcome and "HANG" in outcome else 0)
