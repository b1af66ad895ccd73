"""Several writer processes at once, each with its own keys and labels,
doing random puts (some built from views of its own values), deletes,
drops of its own labels, batches (some rolled back) and reclaims (which move
*other* processes' values too), with 4096-byte segments. Each child checks
its own keys after every operation and writes its final model; the parent
then checks the union against a fresh reader and verify().
Usage: 31_multiprocess_model.py [PROCS] [STEPS]. Exits 0 when all agree."""
import json, os, subprocess, sys, tempfile
import bale

PROCS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 150
CHILD = r'''
import bale, json, os, random, sys
d, me, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rng = random.Random(me)
s = bale.Store(d, segment_size=4096)
labels = [f"{me}-a", f"{me}-b", None]
model = {}
class Roll(Exception): pass
def check(where):
    for k, (v, lab) in model.items():
        got = bale.thaw(s[k])
        assert got == v, (where, k, got, v)
    for k in s:
        if isinstance(k, str) and k.startswith(me + ":"):
            assert k in model, (where, "extra key", k)
for step in range(steps):
    x = rng.random()
    if x < 0.45:
        k = f"{me}:{rng.randrange(40)}"; lab = rng.choice(labels)
        if model and rng.random() < 0.3:
            src = rng.choice(sorted(model))
            s.put(k, {"ref": s[src], "n": step}, label=lab)
            model[k] = ({"ref": model[src][0], "n": step}, lab)
        else:
            v = {"n": step, "s": "x" * rng.randrange(200)}
            s.put(k, v, label=lab); model[k] = (v, lab)
    elif x < 0.6 and model:
        k = rng.choice(sorted(model)); del s[k]; del model[k]
    elif x < 0.65:
        lab = rng.choice(labels[:2])
        if lab is not None:
            s.drop(lab)
            model = {k: v for k, v in model.items() if v[1] != lab}
    elif x < 0.7:
        s.reclaim()
    else:
        trial = dict(model); roll = rng.random() < 0.25
        try:
            with s.batch():
                for _ in range(rng.randrange(1, 30)):
                    k = f"{me}:{rng.randrange(40)}"; lab = rng.choice(labels)
                    v = {"b": step, "t": "y" * rng.randrange(80)}
                    s.put(k, v, label=lab); trial[k] = (v, lab)
                if roll:
                    raise Roll
        except Roll:
            pass
        else:
            model = trial
    check(f"{me} step {step}")
json.dump({k: v for k, (v, lab) in model.items()}, open(out, "w"))
'''
d = os.path.join(tempfile.mkdtemp(), "s")
bale.Store(d).close()
outs, procs = [], []
for i in range(PROCS):
    out = os.path.join(os.path.dirname(d), f"model{i}.json")
    outs.append(out)
    procs.append(subprocess.Popen([sys.executable, "-c", CHILD, d, f"p{i}", str(STEPS), out], stderr=subprocess.PIPE, text=True))
failed = False
for p in procs:
    _, err = p.communicate()
    if p.returncode:
        failed = True
        print("child failed:", err.strip()[-600:])
if not failed:
    expect = {}
    for out in outs:
        expect.update(json.load(open(out)))
    r = bale.Store(d, readonly=True)
    got = {k: bale.thaw(r[k]) for k in r}
    if got != expect:
        failed = True
        print("store and models differ:", sorted(set(got) ^ set(expect))[:10],
              [k for k in expect if k in got and got[k] != expect[k]][:10])
    r.verify()
print("ok" if not failed else "FAILED")
sys.exit(1 if failed else 0)
