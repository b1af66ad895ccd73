"""Flips random bytes in an index file, a segment file or a superblock (no
checksum fix-up: readers must cope with any bytes), then opens the store
readonly, lists keys, reads every value, verifies; and opens it as a writer
and puts. Runs in a child process per batch of cases so that a crash
(SIGSEGV/SIGBUS/abort) is seen. Outcomes other than success, FormatError,
KeyError or OSError are reported (they are the 06 class when the damage
lands in index entries).
Usage: 41_fuzz_file_bytes.py [CASES] [SEED]. Exits 0 when no case crashes and
every error is clean."""
import os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = int(sys.argv[1]) if len(sys.argv) > 1 else 300
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 0
CHILD = r'''
import os, random, shutil, sys, tempfile
sys.path.insert(0, sys.argv[1])
import bale
from _common import small_store
cases, seed = int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
base = os.path.join(tempfile.mkdtemp(), "base")
small_store(base, 60)
with bale.Store(base) as s, s.batch():
    for i in range(1100):
        s.put(f"m{i}", {"i": i, "t": (i, "x" * (i % 9))}, label="M", share=bool(i % 3))
bad = 0
for case in range(cases):
    d = os.path.join(tempfile.mkdtemp(), "s")
    shutil.copytree(base, d)
    names = [n for n in os.listdir(d) if n.endswith(".bale") or n.startswith("SUPER")]
    n = rng.choice(names); p = os.path.join(d, n)
    data = bytearray(open(p, "rb").read())
    for _ in range(rng.choice([1, 1, 2, 8])):
        i = rng.randrange(len(data)); data[i] ^= 1 << rng.randrange(8)
    open(p, "wb").write(bytes(data))
    out = []
    def step(label, f):
        try:
            f(); out.append("ok")
        except (bale.FormatError, KeyError, OSError):
            out.append("clean")
        except Exception as e:
            out.append(f"{label}: {type(e).__name__}: {str(e)[:70]}")
    holder = []
    step("open", lambda: holder.append(bale.Store(d, readonly=True)))
    if holder:
        r = holder[0]
        step("read", lambda: [bale.thaw(r.get(k)) for k in list(r)])
        step("verify", lambda: r.verify())
    step("put", lambda: bale.Store(d).put("zz", 1))
    odd = [o for o in out if o not in ("ok", "clean")]
    if odd:
        bad += 1
        print(f"case {case} ({n}): {odd[0]}", flush=True)
    shutil.rmtree(os.path.dirname(d), ignore_errors=True)
print(f"BAD {bad}", flush=True)
'''
p = subprocess.run([sys.executable, "-c", CHILD, HERE, str(CASES), str(SEED)], capture_output=True, text=True, timeout=1200)
print(p.stdout[-3000:], p.stderr[-1500:])
if p.returncode < 0:
    print("CRASH: child killed by signal", -p.returncode)
    sys.exit(2)
sys.exit(0 if p.returncode == 0 and "BAD 0" in p.stdout else 1)
