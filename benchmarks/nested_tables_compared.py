"""Two builds of bale on records that hold dicts and lists of dicts (issue 21): the sweep's
nested records and the JSON corpora, which a build with nested tables stores as trees of
tables and one without stores row by row.

    python benchmarks/nested_tables_compared.py OLD NEW [--rounds 3]

OLD and NEW are directories a build is installed in (``pip install --target DIR .``); each
round runs every build in a fresh process, builds taking turns, and the table gives each
figure's range over the rounds. Every figure is the best of several calls (3 for the
50,000 nested records, 100 for a corpus) against its baseline in the same process: msgspec's
MessagePack encoder for compaction, ``pickle.loads`` for thaw,
pickle's bytes (protocol 5), and for the scan the same walk over the native objects (every
dict's values and every list's items, through views or not). Verify is ``Region.verify()``
in GB/s. The GC is disabled during every call, of bale and of the baselines alike
(``common.best_gc_off``). It prints a table and writes no report.
"""

from __future__ import annotations

CHILD = r"""
import gc, json, pickle, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
import bale, msgspec
from bench_sweep import JSON_DIR, nested_records
from common import best_gc_off as best

def walk(x):
    n, todo = 0, [x]
    while todo:
        y = todo.pop()
        if isinstance(y, (dict, bale.DictView)):
            todo.extend(y.values())
        elif isinstance(y, (list, bale.ListView, bale.NumberListView)):
            todo.extend(y)
        else:
            n += 1
    return n

data = {"nested records 50k": nested_records(50_000)}
for name in ("citm_catalog", "twitter", "github_events"):
    with open(f"{JSON_DIR}/{name}.json") as f:
        data[f"{name}.json"] = json.load(f)
gc.collect()
gc.freeze()
enc = msgspec.msgpack.Encoder()
out = {}
for name, value in data.items():
    k = 3 if name.startswith("nested") else 100
    region, p = bale.compact(value), pickle.dumps(value, protocol=5)
    root = region.root
    out[f"{name}: bytes / pickle"] = region.nbytes / len(p)
    out[f"{name}: compact / msgspec"] = best(lambda: bale.compact(value), k) / best(lambda: enc.encode(value), k)
    out[f"{name}: thaw / pickle.loads"] = best(lambda: bale.thaw(root), k) / best(lambda: pickle.loads(p), k)
    out[f"{name}: verify, GB/s"] = region.nbytes / best(region.verify, k) / 1e9
    out[f"{name}: scan / native"] = best(lambda: walk(root), k) / best(lambda: walk(value), k)
print(json.dumps(out))
"""


if __name__ == "__main__":
    from common import builds_in_turns

    builds_in_turns(__doc__, CHILD, digits=2)
