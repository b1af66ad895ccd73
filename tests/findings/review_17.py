# Writer.append that fails with OSError part-way (EFBIG via RLIMIT_FSIZE here; ENOSPC alike) leaves the Writer open with its position out of step with the file: later appends and close() succeed and leave a file that bale.open refuses (header length != file length) -- the failed append should poison the writer (or roll the file back)
import bale, resource, signal, os, tempfile
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
p = os.path.join(tempfile.mkdtemp(), "w.bale")
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
w = bale.Writer(p)
w.append({"alpha": 1, "beta": "b" * 20})
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, hard))
try:
    w.append({"gamma": 2, "delta": "x" * 30_000_000})   # fails part-way: the disk is "full"
    raise SystemExit("the big append went through")
except OSError as e:
    print("append failed as expected:", e)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
# The failed write aborted the writer: it says so, and leaves nothing at the path.
try:
    w.append({"gamma": 3, "delta": "small"})
    raise SystemExit("an append after a failed write went through")
except ValueError as e:
    assert "aborted" in str(e), e
assert not os.path.exists(p), os.listdir(os.path.dirname(p))
print("aborted cleanly")
