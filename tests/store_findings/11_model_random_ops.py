"""Seeded random operations against a dict model: put (4 labels, values
that reuse views of stored values), delete, drop, reclaim, batches (some
rolled back by an exception), reopen, refresh of a second reader, with
segment_size 4096 so segments roll over, and > 1024 entries so index files
merge. After every step: len, set of keys, labels, every value, and
verify() every few steps.
Usage: 11_model_random_ops.py [SEEDS] [STEPS]. Exits 0 when the store always
matches the model."""
import os, random, sys, tempfile
import bale

SEEDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 400
LABELS = [None, "a", "b", ""]

class Rollback(Exception):
    pass

def value(rng, s, model):
    kind = rng.random()
    if kind < 0.3 and model:
        # built from a view of a stored value (same label or another)
        k = rng.choice(sorted(model, key=repr))
        return {"ref": s[k], "n": rng.randrange(100)}, {"ref": model[k][0], "n": None}
    if kind < 0.4:
        return rng.randrange(-5, 5), None
    if kind < 0.5:
        return (rng.randrange(3), rng.randrange(3)), None
    v = {"i": rng.randrange(10**6), "s": "x" * rng.randrange(300), "l": list(range(rng.randrange(20)))}
    return v, None

def check(s, model, where):
    assert len(s) == len(model), (where, len(s), len(model))
    assert set(s.keys()) == set(model), (where, set(s.keys()) ^ set(model))
    labels = {}
    for k, (v, lab) in model.items():
        labels[lab] = labels.get(lab, 0) + 1
    assert s.labels() == labels, (where, s.labels(), labels)
    for k, (v, lab) in model.items():
        got = bale.thaw(s[k])
        assert got == v, (where, k, got, v)

def run(seed):
    rng = random.Random(seed)
    d = os.path.join(tempfile.mkdtemp(), "s")
    s = bale.Store(d, segment_size=4096)
    reader = bale.Store(d, readonly=True)
    model = {}
    for step in range(STEPS):
        r = rng.random()
        where = f"seed {seed} step {step}"
        if r < 0.45:
            k = rng.choice([f"k{rng.randrange(60)}", f"k{rng.randrange(60)}".encode()])
            lab = rng.choice(LABELS)
            v, ref = value(rng, s, model)
            s.put(k, v, label=lab)
            stored = bale.thaw(v) if ref is None else {"ref": ref["ref"], "n": v["n"]}
            model[k] = (stored, lab)
        elif r < 0.6 and model:
            k = rng.choice(sorted(model, key=repr))
            del s[k]
            del model[k]
        elif r < 0.65:
            lab = rng.choice(LABELS)
            n = s.drop(lab)
            gone = [k for k, (_, l) in model.items() if l == lab]
            assert n == len(gone), (where, "drop count", n, len(gone))
            for k in gone:
                del model[k]
        elif r < 0.7:
            s.reclaim()
        elif r < 0.85:
            rollback = rng.random() < 0.3 and not os.environ.get("MODEL_NO_ROLLBACK")
            trial = dict(model)
            try:
                with s.batch():
                    for _ in range(rng.randrange(1, 40 if rng.random() < 0.8 else 1500)):
                        q = rng.random()
                        if q < 0.75:
                            k = f"k{rng.randrange(2000)}"
                            lab = rng.choice(LABELS)
                            v = {"i": rng.randrange(100), "t": "y" * rng.randrange(50)}
                            s.put(k, v, label=lab)
                            trial[k] = (v, lab)
                        elif q < 0.95 and trial:
                            k = rng.choice(sorted(trial, key=repr))
                            del s[k]
                            del trial[k]
                        else:
                            lab = rng.choice(LABELS)
                            s.drop(lab)
                            for k in [k for k, (_, l) in trial.items() if l == lab]:
                                del trial[k]
                    if rollback:
                        raise Rollback
            except Rollback:
                pass
            else:
                model = trial
        elif r < 0.92:
            s.close()
            s = bale.Store(d, segment_size=4096)
        else:
            reader.refresh()
            check(reader, model, where + " (reader)")
        check(s, model, where)
        if step % 25 == 0:
            s.verify()
    s.close()
    r2 = bale.Store(d, readonly=True)
    check(r2, model, f"seed {seed} reopened")
    r2.verify()

failed = []
for seed in range(SEEDS):
    try:
        run(seed)
    except Exception as e:
        import traceback; traceback.print_exc()
        failed.append(seed)
        print(f"seed {seed}: {type(e).__name__}: {str(e)[:400]}")
print("failed seeds:", failed)
sys.exit(1 if failed else 0)
