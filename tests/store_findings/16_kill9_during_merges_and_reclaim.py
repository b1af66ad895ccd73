"""kill -9 at random moments of a writer that commits big batches (> 1024
entries: index files written and merged), deletes, and reclaims (full merge
plus segment moves), with small segments. After each kill: the store opens,
verify() passes, and every acknowledged key has its acknowledged value.
Usage: 16_kill9_during_merges_and_reclaim.py [TRIALS]. Exits 0 when nothing
acknowledged is lost."""
import json, os, random, signal, subprocess, sys, tempfile, time
import bale

TRIALS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
CHILD = r'''
import bale, json, random, sys
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
s = bale.Store(path, segment_size=8192)
gen = 0
while True:
    r = rng.random()
    if r < 0.6:
        gen += 1
        n = rng.choice([5, 1100, 2500])
        keys = [f"k{rng.randrange(4000)}" for _ in range(n)]
        print(json.dumps(["begin", "batch", gen]), flush=True)
        with s.batch():
            for k in keys:
                s.put(k, {"g": gen, "k": k, "pad": "p" * (gen % 50)}, label=rng.choice([None, "a", "b"]))
        print(json.dumps(["done", "batch", gen, sorted(set(keys))]), flush=True)
    elif r < 0.8:
        ks = s.keys()
        dels = rng.sample(ks, min(len(ks), rng.randrange(1, 1500)))
        print(json.dumps(["begin", "del"]), flush=True)
        with s.batch():
            for k in dels:
                del s[k]
        print(json.dumps(["done", "del", dels]), flush=True)
    else:
        print(json.dumps(["begin", "reclaim"]), flush=True)
        s.reclaim()
        print(json.dumps(["done", "reclaim"]), flush=True)
'''

failed = []
for trial in range(TRIALS):
    d = os.path.join(tempfile.mkdtemp(), "s")
    rng = random.Random(trial)
    model = {}
    total = 0
    for round_ in range(3):
        p = subprocess.Popen([sys.executable, "-c", CHILD, d, str(trial * 10 + round_)], stdout=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.3, 3.0))
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate()
        if os.environ.get("VERBOSE"):
            print("  ops done:", sum(1 for l in out.splitlines() if l.startswith('["done')), "last:", out.splitlines()[-1][:60] if out else None)
        inflight = None
        for line in out.splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # "done" cut by the kill: still in flight
            if msg[0] == "begin":
                inflight = msg
            elif msg[1] == "batch":
                for k in msg[3]:
                    model[k] = msg[2] + total
                inflight = None
            elif msg[1] == "del":
                for k in msg[2]:
                    model.pop(k, None)
                inflight = None
            else:
                inflight = None
        # generations restart per child: offset them
        try:
            with bale.Store(d, readonly=True) as r:
                r.verify()
                ib = inflight[2] if inflight and inflight[1] == "batch" else None
                idel = bool(inflight and inflight[1] == "del")
                for k, g in model.items():
                    v = r.get(k)
                    if v is None:
                        if not idel:
                            raise AssertionError(f"acknowledged key {k} is missing")
                    elif v["g"] + total != g and v["g"] != ib:
                        raise AssertionError(f"key {k}: g={v['g']} expected {g - total}")
                for k in r:
                    if k not in model and r[k]["g"] != ib:
                        raise AssertionError(f"key {k} present but deleted or never acknowledged")
                # adopt what is on disk as the new model (the in-flight op may or may not have committed)
                model = {k: r[k]["g"] + total + 10**6 for k in r}
                total += 10**6
        except Exception as e:
            print(f"trial {trial} round {round_}: {type(e).__name__}: {e}")
            failed.append(trial)
            break
    print(f"trial {trial}: ok" if trial not in failed else f"trial {trial}: FAILED", flush=True)
print("failed trials:", failed)
sys.exit(1 if failed else 0)
