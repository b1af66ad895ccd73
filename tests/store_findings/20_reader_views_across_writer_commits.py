"""A reader holds views while writer processes overwrite, delete, drop and
reclaim for many commits (segments rolling over at 4096 bytes). Every held
view must keep its value; after the reader lets go of its views and
refreshes, it must no longer map any deleted segment or index file (no
mapping leak across refreshes).
Exits 0 when views stay correct and no deleted file stays mapped."""
import gc, os, subprocess, sys, tempfile
import bale

d = os.path.join(tempfile.mkdtemp(), "s")
with bale.Store(d, segment_size=4096) as s, s.batch():
    for i in range(300):
        s.put(f"k{i}", {"i": i, "pad": "p" * (i % 50), "l": list(range(i % 7))}, label=f"L{i % 3}")
del s  # a closed Store keeps its handles (see 21_closed_store_keeps_its_mappings.py)
r = bale.Store(d, readonly=True)
held = {k: r[k] for k in r}
expect = {k: bale.thaw(v) for k, v in held.items()}
WRITER = r'''
import bale, random, sys
s = bale.Store(sys.argv[1], segment_size=4096); rng = random.Random(int(sys.argv[2]))
for step in range(60):
    x = rng.random()
    if x < 0.5:
        with s.batch():
            for _ in range(30):
                i = rng.randrange(2000)
                s.put(f"k{i}", {"i": -i, "w": sys.argv[2]}, label=f"L{rng.randrange(4)}")
    elif x < 0.7:
        with s.batch():
            for k in rng.sample(s.keys(), min(40, len(s))):
                del s[k]
    elif x < 0.85:
        s.drop(f"L{rng.randrange(4)}")
    else:
        s.reclaim()
'''
procs = [subprocess.Popen([sys.executable, "-c", WRITER, d, str(n)]) for n in range(2)]
bad = 0
while any(p.poll() is None for p in procs):
    r.refresh()
    for k in list(r)[:50]:
        v = r.get(k)
        if v is not None:
            bale.thaw(v)
for p in procs:
    p.wait()
for k, v in held.items():
    if bale.thaw(v) != expect[k]:
        bad += 1
print("held views that changed:", bad)
del held, v
gc.collect()
r.refresh()
gc.collect()
maps = [l for l in open("/proc/self/maps") if d in l and "(deleted)" in l]
print("deleted store files still mapped after refresh:", len(maps))
r.verify()
sys.exit(0 if bad == 0 and not maps else 1)
