"""Store._mutex is a threading.RLock. A process that forks while another of
its threads is inside a put/batch/reclaim (holding the RLock) gives the
child a copy of the RLock that is held by a thread the child does not have:
the child's first put/refresh/verify/close on that Store blocks forever
(hang). The store already handles fork for the flock (it re-opens LOCK in
the child); the mutex needs the same (os.register_at_fork(after_in_child=
...) re-creating it, or refusing use of a Store across fork with an error).
Exits 0 when the child's put completes within 10 s."""
import os, signal, sys, tempfile, threading, time
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
stop = threading.Event()
inside = threading.Event()

def writer():
    with s.batch():                      # holds s._mutex for a while
        s.put("t", 1)
        inside.set()
        stop.wait(5)

t = threading.Thread(target=writer)
t.start()
inside.wait(5)
pid = os.fork()
if pid == 0:
    signal.alarm(10)                      # the hang ends here, as SIGALRM
    try:
        s.put("child", 2)
        os._exit(0)
    except BaseException:
        os._exit(3)
stop.set()
t.join()
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    print("BUG: the child hung in put() (killed by signal", os.WTERMSIG(status), "after 10 s)")
    sys.exit(1)
print("child exit status", os.WEXITSTATUS(status))
r = bale.Store(d, readonly=True)
sys.exit(0 if os.WEXITSTATUS(status) == 0 and r.get("child") == 2 else 1)
