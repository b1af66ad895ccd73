"""Store files that are not regular files hang the opener instead of
giving an error: a FIFO (or a symlink to /dev/zero) as SUPER.x is read with
f.read() to the end (FIFO: blocks for a writer; /dev/zero: reads forever,
eating memory), and a FIFO as a segment or index file blocks in Rust's
File::open, which retries on EINTR, so not even Ctrl-C stops it. The spec
says a superblock slot may be anything and is then ignored; other files
should give FormatError/OSError naming them. Fix: open with O_NONBLOCK (or
fstat and require S_ISREG) and read at most 40 + n bytes of a superblock.
Each case runs in a child with a 10 s timeout.
Exits 0 when every case ends (with a value or a clean error)."""
import os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
import bale
from _common import small_store
d = os.path.join(sys.argv[2], "s")
small_store(d, 1500)
with bale.Store(d) as s:
    seg = sorted(s._snap.segments)[0]; idx = s._snap.levels[0][0]
    newest = "SUPER.%d" % (s.generation % 2)
    other = "SUPER.%d" % ((s.generation + 1) % 2)
case = sys.argv[3]
target = {"super-other": other, "seg": "seg-%08d.bale" % seg, "idx": "idx-%08d.bale" % idx}[case.split(":")[0]]
p = os.path.join(d, target)
os.unlink(p)
if case.endswith(":fifo"):
    os.mkfifo(p)
else:
    os.symlink("/dev/zero", p)
try:
    bale.Store(d, readonly=True).keys()
    print("opened")
except (bale.FormatError, OSError, MemoryError) as e:
    print(type(e).__name__, str(e)[:100])
'''
hung = []
for case in ["super-other:fifo", "super-other:zero", "seg:fifo", "idx:fifo"]:
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, HERE, tempfile.mkdtemp(), case],
                             capture_output=True, text=True, timeout=10)
        print(f"{case:18s} {out.stdout.strip() or out.stderr.strip()[-200:]}")
    except subprocess.TimeoutExpired:
        print(f"{case:18s} HANG (killed after 10 s)")
        hung.append(case)
sys.exit(1 if hung else 0)
