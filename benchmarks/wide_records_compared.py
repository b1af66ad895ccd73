"""Two builds of bale on wide records (issue 21): tables of many columns against the same
records row by row, twitter.json's users, and the thaw of the JSON corpora.

    python benchmarks/wide_records_compared.py OLD NEW [--rounds 3]

OLD and NEW are directories a build is installed in (``pip install --target DIR .``); each
round runs every build in a fresh process, builds taking turns, and the table gives each
figure's range over the rounds. Compaction is the best of 100 calls; thaw is the best of 12
(20 for the users, 300 for the corpora), with the GC disabled around both ``bale.thaw`` and
``pickle.loads``; the users and 200,000 flat records are made first and frozen out of the
collector, as in the sweep. Rows "... rows" hold the same records, each with one more key whose value
is ``[{}, 0]``: a first row no table takes, so they are written row by row. It prints a table
and writes no report.
"""

from __future__ import annotations

CHILD = r"""
import gc, json, pickle, random, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
import bale
from bench_sweep import JSON_DIR, corpus_users, flat_records
from common import best_gc_off

def best(f, k):
    return best_gc_off(f, k) * 1e3

# Made first and frozen out of the collector, as the sweep does: with 200,000 other records
# held, the thaw of the users by a build that grows each dict from empty took 12.5-13.2 ms,
# and 8 ms in a fresh process (the allocator's state; a dict made at its final size takes
# 7-8 ms either way).
users = corpus_users(f"{JSON_DIR}/twitter.json")
flat = flat_records(200_000)
gc.collect()
gc.freeze()
rng = random.Random(5)
keys = [f"k{j}" for j in range(40)]
cells = {
    "ints": lambda: rng.randrange(1 << 40),
    "10-char strings": lambda: "%010d" % rng.randrange(10**10),
    "60-char strings": lambda: "%060d" % rng.randrange(10**10),
    "booleans": lambda: rng.random() < 0.5,
}
out = {}
for name, cell in cells.items():
    records = json.loads(json.dumps([{k: cell() for k in keys} for _ in range(4300)]))
    rows = json.loads(json.dumps([dict(r, z=[{}, 0]) for r in records]))
    gc.collect()
    out[f"compact 40 columns of {name}, ms"] = best(lambda: bale.compact(records), 100)
    out[f"compact 40 columns of {name}, rows, ms"] = best(lambda: bale.compact(rows), 100)
out["compact twitter users x50, ms"] = best(lambda: bale.compact(users), 100)
for name, data, k in (("twitter users x50", users, 20), ("flat records (6 fields) 200k", flat, 12)):
    region, p = bale.compact(data), pickle.dumps(data, protocol=5)
    out[f"thaw {name}, ms"] = best(lambda: bale.thaw(region.root), k)
    out[f"pickle.loads {name}, ms"] = best(lambda: pickle.loads(p), k)
for name in ("citm_catalog", "github_events", "twitter"):
    with open(f"{JSON_DIR}/{name}.json") as f:
        data = json.load(f)
    region, p = bale.compact(data), pickle.dumps(data, protocol=5)
    out[f"thaw {name}.json, ms"] = best(lambda: bale.thaw(region.root), 300)
    out[f"pickle.loads {name}.json, ms"] = best(lambda: pickle.loads(p), 300)
print(json.dumps(out))
"""


if __name__ == "__main__":
    from common import builds_in_turns

    builds_in_turns(__doc__, CHILD, digits=3)
