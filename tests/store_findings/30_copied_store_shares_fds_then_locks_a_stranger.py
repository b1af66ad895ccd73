"""copy.copy(store) is allowed (no __copy__/__reduce__ refusing it) and the
copy shares the original's descriptor numbers (_lock_fd, _seg_fds). Closing
the copy closes them; the original's next put fails with EBADF, and once
the number is reused by any other open() the original flocks -- and later
close()s -- a stranger's file: no exclusion against other writers, and an
unrelated file object's descriptor is closed under it. Store should refuse
copying (__copy__/__deepcopy__/__reduce__ raising TypeError) or dup().
Exits 0 when copying a Store is refused."""
import copy, os, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
s["a"] = 1
try:
    c = copy.copy(s)
except TypeError as e:
    print("copy refused:", e)
    sys.exit(0)
c.close()
stranger = open(os.path.join(os.path.dirname(d), "stranger.txt"), "w")
print("original's lock fd", s._lock_fd, "is now the stranger's fd", stranger.fileno())
s["b"] = 2                       # "locks" stranger.txt, not LOCK
s.close()                        # closes the stranger's descriptor
try:
    stranger.write("x")
    stranger.flush()
    print("stranger intact")
except OSError as e:
    print("BUG: the stranger's file was closed by the store:", e)
sys.exit(1)
