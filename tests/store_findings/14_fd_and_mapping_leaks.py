"""Resource leaks of a writer:
1. _abort() unlinks a rolled-back batch's new segment files but leaves their
   descriptors in _seg_fds; the next transaction reuses the id and
   overwrites the dict entry: one leaked fd (of an unlinked file) per
   rolled-back batch that opened a segment.
2. reclaim() (_move) and commits that drop emptied segments do not forget
   the segments' lineages (self._lineages), so the writer keeps every
   reclaimed segment mapped (and its appended bytes in memory): the
   unlinked files' disk space is not returned until the store is closed,
   although reclaim() reported it freed.
3. open/close cycles (control: should not leak).
Exits 0 when none of these leak."""
import gc, os, sys, tempfile
import bale

def fds():
    return len(os.listdir("/proc/self/fd"))

def deleted_maps(d):
    return sum(1 for line in open("/proc/self/maps") if d in line and "(deleted)" in line)

bad = []
d = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d)
s["x"] = 1
before = fds()
for i in range(50):
    try:
        with s.batch():
            s.put(f"k{i}", i, label=f"lab{i}")
            raise ValueError
    except ValueError:
        pass
s["y"] = 2
leaked = fds() - before
print("1. fds leaked by 50 rolled-back batches:", leaked)
if leaked > 2:
    bad.append("abort fd leak")
s.close()

d2 = os.path.join(tempfile.mkdtemp(), "s")
s = bale.Store(d2, segment_size=4096)
for i in range(300):
    s.put(f"k{i}", {"blob": "z" * 1000}, label="L")
for i in range(300):
    if i % 10:
        del s[f"k{i}"]
freed = s.reclaim()
gc.collect()
held = deleted_maps(d2)
print(f"2. reclaim() reported {freed} bytes freed; the writer still maps {held} deleted segment files "
      f"({len(s._lineages)} lineages for {len(s._snap.segments)} live segments)")
if held:
    bad.append("reclaimed segments still mapped")
s.close()

d3 = os.path.join(tempfile.mkdtemp(), "s")
with bale.Store(d3) as s:
    s["a"] = {"v": 1}
gc.collect()
f0, m0 = fds(), len(open("/proc/self/maps").readlines())
for i in range(200):
    with bale.Store(d3) as s:
        s[f"k{i % 3}"] = {"v": i}
        _ = s["a"]["v"]
    with bale.Store(d3, readonly=True) as r:
        _ = r["a"]["v"]
gc.collect()
f1, m1 = fds(), len(open("/proc/self/maps").readlines())
print(f"3. 200 open/close cycles: fds {f0}->{f1}, mappings {m0}->{m1}")
if f1 - f0 > 2 or m1 - m0 > 10:
    bad.append("open/close leak")
print("leaks:", bad)
sys.exit(1 if bad else 0)
