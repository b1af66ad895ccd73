"""Fuzzes commit records with valid checksums: replaces a random field (or a
field of a segment row, a level, a delta entry) with a random value of a
random type/size (negative, huge, float, bool, str, bytes, None, nested
containers), then opens the store readonly and as a writer, lists keys,
reads every value, verifies, and puts one value. Anything but FormatError /
OSError / KeyError-free success is a finding; a crash of the process is too
(each case runs in-process, so a crash ends the script non-zero).
Usage: 40_fuzz_commit_records.py [CASES] [SEED]. Exits 0 when every outcome
is clean."""
import os, random, shutil, sys, tempfile, traceback
import bale
from bale import _store
from _common import newest_super, small_store, write_record

CASES = int(sys.argv[1]) if len(sys.argv) > 1 else 300
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 0)

def junk(depth=0):
    c = rng.randrange(14)
    if c == 0: return rng.randrange(-10, 10)
    if c == 1: return rng.choice([2**63, 2**64, 2**64 - 1, -2**63, 10**30, -1])
    if c == 2: return rng.random() * 1000
    if c == 3: return rng.choice([True, False])
    if c == 4: return "s" * rng.randrange(5)
    if c == 5: return b"b"
    if c == 6: return None
    if c == 7 and depth < 2: return tuple(junk(depth + 1) for _ in range(rng.randrange(6)))
    if c == 8 and depth < 2: return [junk(depth + 1) for _ in range(rng.randrange(4))]
    if c == 9 and depth < 2: return {junk(depth + 1) if rng.random() < 0.3 else rng.randrange(5): junk(depth + 1) for _ in range(rng.randrange(3))}
    if c == 10: return rng.randrange(0, 2000) * 8
    if c == 11: return rng.randrange(0, 70000)
    if c == 12: return frozenset({1, 2})
    return 0

def freeze(x):
    try:
        hash(x); return x
    except TypeError:
        return repr(x)

base = os.path.join(tempfile.mkdtemp(), "base")
small_store(base, 40)
with bale.Store(base) as s, s.batch():
    for i in range(1100):
        s.put(f"m{i}", i, label="M")
bad = []
for case in range(CASES):
    d = os.path.join(tempfile.mkdtemp(), "s")
    shutil.copytree(base, d)
    name = newest_super(d)
    g, _version, payload = _store._read_superblock(name)
    rec = bale.thaw(bale.load(payload).root)
    where = rng.choice(["top", "segrow", "level", "delta", "delta", "segkey"])
    if where == "top":
        k = rng.choice(["generation", "next_file", "count", "segments", "levels", "delta"])
        rec[k] = junk(); what = f"{k}={rec[k]!r:.60}"
    elif where == "segrow" and rec["segments"]:
        seg = rng.choice(sorted(rec["segments"]))
        row = list(rec["segments"][seg]); i = rng.randrange(len(row)); row[i] = junk()
        rec["segments"][seg] = tuple(row); what = f"segments[{seg}][{i}]={row[i]!r:.60}"
    elif where == "segkey" and rec["segments"]:
        seg = rng.choice(sorted(rec["segments"]))
        nk = freeze(junk()); rec["segments"][nk] = rec["segments"].pop(seg); what = f"segment key {seg}->{nk!r:.40}"
    elif where == "level" and rec["levels"]:
        lv = list(rec["levels"]); i = rng.randrange(len(lv)); lv[i] = junk(); rec["levels"] = tuple(lv)
        what = f"levels[{i}]={lv[i]!r:.60}"
    else:
        if rec["delta"] and rng.random() < 0.6:
            k = rng.choice(sorted(rec["delta"], key=repr))
            e = rec["delta"][k]
            if isinstance(e, tuple) and rng.random() < 0.7:
                e = list(e); e[rng.randrange(4)] = junk(); e = tuple(e)
            else:
                e = junk()
            rec["delta"][k] = e; what = f"delta[{k!r}]={e!r:.60}"
        else:
            nk = freeze(junk()); rec["delta"][nk] = junk(); what = f"delta new key {nk!r:.30}"
    try:
        write_record(name, g, rec)
    except Exception:
        continue  # not compactable
    steps = []
    def step(label, f):
        try:
            f(); steps.append((label, "ok"))
        except (bale.FormatError, KeyError):
            steps.append((label, "FormatError"))
        except OSError as e:
            steps.append((label, f"OSError"))
        except Exception as e:
            steps.append((label, f"{type(e).__name__}: {str(e)[:60]}"))
            raise StopIteration
    try:
        r = None
        def opn():
            nonlocal_r[0] = bale.Store(d, readonly=True)
        nonlocal_r = [None]
        step("open", opn)
        r = nonlocal_r[0]
        if r is not None:
            step("keys", lambda: r.keys())
            step("read", lambda: [bale.thaw(r.get(k)) for k in list(r)])
            step("verify", lambda: r.verify())
        step("put", lambda: bale.Store(d).put("zz", {"a": 1}))
    except StopIteration:
        bad.append((case, what, steps[-1]))
        print(f"case {case}: {what}: {steps[-1]}")
    shutil.rmtree(os.path.dirname(d), ignore_errors=True)
print(f"{len(bad)} of {CASES} cases gave a non-bale error")
sys.exit(1 if bad else 0)
