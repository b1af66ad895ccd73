"""Scope question (documentation): a segment file truncated by another
process after a reader mapped it. Reading a value in the lost pages kills
the reader with SIGBUS. This is the same situation README documents for
bale.open ("a memory-mapped file must not be truncated while it is open"),
and bale itself never truncates a committed segment (it only appends past
`length` and unlinks), so it is outside the contract -- but docs/STORE.md
does not say so. Suggest one sentence in STORE.md (*Reading and snapshots*):
segment and index files MUST NOT be truncated or rewritten in place by
anything; readers map them.
Exits 0 when the reader gets an error instead of dying, or when
docs/STORE.md documents the limitation (says store files "MUST NOT be
truncated")."""
import os, re, signal, subprocess, sys, tempfile

CHILD = r'''
import os, sys, bale
d = os.path.join(sys.argv[1], "s")
with bale.Store(d) as s:
    s["big"] = ["x" * 100] * 1 + [os.urandom(1 << 20)]
r = bale.Store(d, readonly=True)
v = r["big"]
seg = os.path.join(d, "seg-00000001.bale")
os.truncate(seg, 4096)                     # someone else truncates it
try:
    print(len(bytes(v[1])))
except Exception as e:
    print("error:", type(e).__name__, e)
'''
p = subprocess.run([sys.executable, "-c", CHILD, tempfile.mkdtemp()], capture_output=True, text=True, timeout=60)
if p.returncode < 0:
    spec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "STORE.md")
    documented = os.path.exists(spec) and re.search(r"MUST NOT be\s+truncated", open(spec).read()) is not None
    print("reader killed by", signal.Signals(-p.returncode).name,
          "(out of scope like bale.open;", "documented in STORE.md)" if documented else "NOT documented in STORE.md)")
    sys.exit(0 if documented else 1)
print("reader survived:", p.stdout.strip(), p.stderr.strip()[-200:])
sys.exit(0)
