"""The store (bale.Store) against LMDB + pickle, diskcache, shelve and sqlite3 + pickle (issue 19).

    python benchmarks/bench_heap.py [--quick | --smoke] [--big] [--items 1,2,...] [--no-report]

Same records for every side, in the same run; repeated timings take turns
(``common.best_interleaved``'s order). The sides are described in
``heap_backends.py``; stores live in a temporary folder on the machine's
disk (``$TMPDIR``, or ``BALE_HEAP_DIR``), removed at the end. Items:

1. put throughput: batched (one commit for all puts) into a fresh store, on
   generated user records and on real records (``../shared/data/json``:
   the statuses of twitter.json, the events of github_events.json and the
   performances of citm_catalog.json, cycled under distinct keys), and one
   commit per put (durable where the side can be); disk used after.
2. warm get of one field of one value, random keys, from a store of 1M
   generated records (100k ``--quick``), and from the real-records store of
   item 1: ``s[k]["name"]`` against ``pickle.loads(txn.get(k))["name"]`` and
   the others. GC enabled, the parent's heap frozen (``gc.freeze()``) after
   the builds, the same for every side.
3. open + first get in a fresh process (``heap_child.py``), stores of 10 MB,
   100 MB and 1 GB of ~4 kB profiles (10 GB too with ``--big``), warm page
   cache (best of 3 children, taking turns) and cold (page cache dropped
   first, when this process may).
4. larger than memory: random gets and a full scan summing a field, in a
   child inside a cgroup v1 memory cgroup whose limit is a quarter of the
   store, page cache dropped first; bale against LMDB + pickle.
5. one writer (a durable put after another) and 1, 2, 4 reader processes
   doing random gets (a new snapshot every 100 gets: ``refresh()`` / a new
   read transaction), for a fixed time; bale against LMDB + pickle.
6. drop of the label holding item 2's records: ``s.drop(label)`` against
   diskcache ``evict(tag)``, LMDB ``txn.drop(db)`` and sqlite ``DROP TABLE``;
   time and disk returned.
7. an iterative job (k-means, Lloyd's algorithm) over the largest store of
   item 3, read through the store every iteration, in the memory cgroup of
   item 4: bale views against diskcache (pickle spilled to SQLite); total
   time and time in the garbage collector (``gc.callbacks``).
8. values built from other stored values (references between segments):
   N base records under one label, then N values ``{"base": s[k], "rank":
   i}`` under another, batched. bale references the base where it lies;
   against bale made to copy it (the base thawed first: what a store
   without references between segments stores) and LMDB + pickle (which
   pickles the base again inside each value); time and bytes added. Then
   bale's ``drop`` of the base label (the bases stay, held, while the
   values reference them) and of the values' label (both freed), and a
   warm get of ``s[k]["base"]["name"]`` against ``s[k]["name"]``.

``--items`` runs some of them (printed only: the report's section is written
by a run of all items). Default mode takes about ten minutes on a 2-core
machine; ``--quick`` two; ``--smoke`` seconds (tiny stores, page cache left
alone, the cgroup limit not below the store: it only checks that it works).
Writes the section "The store (bale.Store)" and ``plots/heap_*.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import time

import common
import heap_backends as hb

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "heap_child.py")
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "json"))
CGROUP_ROOT = "/sys/fs/cgroup/memory"
MB = 1_000_000
MiB = 1 << 20
TITLE = "The store (bale.Store)"
ALL_ITEMS = (1, 2, 3, 4, 5, 6, 7, 8)

CONFIG = {
    "smoke": dict(ref_n=300, put_n=2_000, put_real=300, durable=5, put_turns=1, get_n=3_000, gets=2_000, get_turns=2,
                  sizes=[1 * MB, 4 * MB], open_turns=1, ltm_size=4 * MB, limit=64 * MiB, ltm_gets=200,
                  readers=[1, 2], reader_secs=0.4, reader_turns=1, km_iters=2, drop_caches=False),
    "quick": dict(ref_n=10_000, put_n=20_000, put_real=5_000, durable=50, put_turns=2, get_n=100_000, gets=50_000, get_turns=3,
                  sizes=[10 * MB, 100 * MB, 300 * MB], open_turns=3, ltm_size=300 * MB, limit=96 * MiB,
                  ltm_gets=1_000, readers=[1, 2, 4], reader_secs=1.5, reader_turns=2, km_iters=2,
                  drop_caches=True),
    "full": dict(ref_n=50_000, put_n=100_000, put_real=20_000, durable=150, put_turns=3, get_n=1_000_000, gets=100_000,
                 get_turns=5, sizes=[10 * MB, 100 * MB, 1000 * MB], open_turns=3, ltm_size=1000 * MB,
                 limit=256 * MiB, ltm_gets=1_500, readers=[1, 2, 4], reader_secs=2.0, reader_turns=2, km_iters=2,
                 drop_caches=True),
}
OPEN_SIDES = ("bale", "lmdb", "sqlite", "diskcache")
KMEANS_K = 8
DIM = 8


# --- records ---------------------------------------------------------------------------


def user_records(n: int, seed: int = 0) -> list[dict]:
    """User-like records built on ``bale._datagen.tweets``: a name, ids, hashtags, URLs, two scores."""
    from bale._datagen import tweets, vocabulary

    pool = tweets(min(n, 20_000), seed)
    vocab = vocabulary()
    rng = random.Random(seed + 1)
    out = []
    for i in range(n):
        t = pool[i % len(pool)]
        out.append({"name": f"{vocab[i % len(vocab)]}{i}", "user_id": t["user_id"] ^ i, "hashtags": t["hashtags"],
                    "urls": t["urls"], "followers": rng.randrange(1 << 20), "scores": [rng.random(), rng.random()]})
    return out


def real_records() -> list[dict]:
    """Records nobody on this project wrote: every one a dict with an ``id``."""
    with open(os.path.join(DATA, "twitter.json")) as f:
        statuses = json.load(f)["statuses"]
    with open(os.path.join(DATA, "github_events.json")) as f:
        events = json.load(f)
    with open(os.path.join(DATA, "citm_catalog.json")) as f:
        performances = json.load(f)["performances"]
    return statuses + events + performances


def _words(rng: random.Random, vocab: list[str], n: int) -> str:
    return " ".join(vocab[rng.randrange(len(vocab))] for _ in range(n))


_PROFILE_BASES: list[dict] = []


def profile_bases() -> list[dict]:
    """256 base profiles of about 4 kB pickled: a bio and 12 recent tweets with text."""
    if not _PROFILE_BASES:
        from bale._datagen import tweets, vocabulary

        vocab = vocabulary()
        rng = random.Random(19)
        pool = tweets(256 * 12, 19)
        for b in range(256):
            recent = [dict(t, text=_words(rng, vocab, 18), retweets=rng.randrange(1000))
                      for t in pool[b * 12:(b + 1) * 12]]
            _PROFILE_BASES.append({"name": vocab[b], "bio": _words(rng, vocab, 40), "location": _words(rng, vocab, 2),
                                   "recent": recent})
    return _PROFILE_BASES


def profile_bytes() -> float:
    bases = profile_bases()
    return sum(len(pickle.dumps(dict(b, user_id=1 << 39, followers=99999, features=[0.5] * DIM), protocol=5))
               for b in bases) / len(bases)


def profiles(n: int, seed: int = 3):
    """``n`` (key, profile) pairs; features drawn around KMEANS_K centres (the same in every call)."""
    bases = profile_bases()
    rng = random.Random(seed)
    centres = [[rng.uniform(-10, 10) for _ in range(DIM)] for _ in range(KMEANS_K)]
    gauss = rng.gauss
    for i in range(n):
        c = centres[i % KMEANS_K]
        yield f"p:{i:08d}", dict(bases[i % len(bases)], user_id=i, followers=(i * 7919) % 100_003,
                                 features=[x + gauss(0.0, 2.0) for x in c])


# --- processes, cgroups, page cache ------------------------------------------------------


def read_ahead_kb() -> str:
    """The read-ahead window of the disk holding the stores (for the report), or "?"."""
    try:
        dev = os.stat(tempfile.gettempdir()).st_dev
        with open(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/queue/read_ahead_kb") as f:
            return f.read().strip()
    except OSError:
        try:
            with open(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/../queue/read_ahead_kb") as f:
                return f.read().strip()
        except OSError:
            return "?"


def drop_caches() -> bool:
    """Writes dirty pages back, then drops the page cache; False if this process may not."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


_cg_count = itertools.count()


def make_cgroup(limit: int) -> tuple[str | None, str]:
    """A fresh cgroup v1 memory cgroup limited to ``limit`` bytes, or None and why not."""
    if not os.path.isdir(CGROUP_ROOT):
        return None, f"no cgroup v1 memory controller at {CGROUP_ROOT}"
    path = os.path.join(CGROUP_ROOT, f"bale-heap-{os.getpid()}-{next(_cg_count)}")
    try:
        os.mkdir(path)
    except OSError as e:
        return None, f"cannot create {path}: {e.strerror}"
    try:
        with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
            f.write(str(limit))
    except OSError as e:
        os.rmdir(path)
        return None, f"cannot set {path}/memory.limit_in_bytes: {e.strerror}"
    return path, ""


def remove_cgroup(path: str) -> dict:
    """The cgroup's peak usage and failure counts, then the cgroup removed (its child has exited)."""
    def read(name):
        try:
            with open(os.path.join(path, name)) as f:
                return f.read()
        except OSError:
            return ""
    out = {"max_usage": int(read("memory.max_usage_in_bytes") or 0), "failcnt": int(read("memory.failcnt") or 0)}
    for line in read("memory.oom_control").splitlines():
        if line.startswith("oom_kill "):
            out["oom_kills"] = int(line.split()[1])
    for _ in range(100):
        try:
            os.rmdir(path)
            break
        except OSError:
            time.sleep(0.05)
    return out


def spawn(args: dict, cgroup: str | None = None) -> subprocess.Popen:
    def enter():
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    return subprocess.Popen([sys.executable, CHILD, json.dumps(args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=enter if cgroup else None)


def finish(proc: subprocess.Popen, t0: float, timeout: float = 900) -> dict:
    out, err = proc.communicate(timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": f"exit status {proc.returncode}" + (" (killed: SIGKILL, the OOM killer?)"
                                                             if proc.returncode == -9 else ""),
                "stderr": err[-2000:], "wall": wall}
    res = json.loads(out.strip().splitlines()[-1])
    res["wall"] = wall
    return res


def child(args: dict, cgroup_limit: int | None = None) -> dict:
    """Runs one heap_child.py command; in a fresh memory cgroup when ``cgroup_limit`` is given."""
    cg = None
    if cgroup_limit is not None:
        cg, why = make_cgroup(cgroup_limit)
        if cg is None:
            return {"error": why}
    try:
        t0 = time.perf_counter()
        res = finish(spawn(args, cg), t0)
    finally:
        if cg is not None:
            usage = remove_cgroup(cg)
    if cg is not None:
        res["cgroup"] = usage
    return res


# --- building -----------------------------------------------------------------------------


def build(side: str, path: str, items, label=None) -> float:
    """One batched build (one commit); returns seconds."""
    t0 = time.perf_counter()
    s = hb.open_side(side, path, label=label) if side == "lmdb" else hb.open_side(side, path)
    s.put_batch(items, label)
    s.close()
    return time.perf_counter() - t0


def us(seconds: float) -> str:
    return common.fmt_time(seconds)


def rate(n: float, seconds: float) -> str:
    r = n / seconds
    return f"{r / 1e6:.2f}M/s" if r >= 1e6 else f"{r / 1e3:.1f}k/s" if r >= 1e3 else f"{r:.0f}/s"


# --- 1. put throughput --------------------------------------------------------------------


def item_put(cfg: dict, work: str, gen: list[dict], real: list[dict]) -> dict:
    n, nr = cfg["put_n"], cfg["put_real"]
    datasets = {"generated": [(f"u:{i:08d}", gen[i % len(gen)]) for i in range(n)],
                "real": [(f"r:{i:08d}", real[i % len(real)]) for i in range(nr)]}
    counter = itertools.count()
    batched: dict[str, dict[str, float]] = {d: {s: float("inf") for s in hb.SIDES} for d in datasets}
    size: dict[str, dict[str, int]] = {d: {} for d in datasets}
    last: dict[str, dict[str, str]] = {d: {} for d in datasets}
    for turn in range(cfg["put_turns"]):
        order = [(d, s) for d in datasets for s in hb.SIDES]
        if turn:
            random.Random(turn).shuffle(order)
        for d, s in order:
            path = os.path.join(work, f"put-{next(counter)}")
            gc.collect()
            batched[d][s] = min(batched[d][s], build(s, path, datasets[d]))
            size[d][s] = hb.disk_usage(path)
            if d in last and s in last[d]:
                shutil.rmtree(last[d][s])
            last[d][s] = path
    # serialization alone, for the batched figures: bale.compact of each value, pickle.dumps of each value
    import bale

    gen_items = datasets["generated"]
    ser = common.best_interleaved({"bale": lambda: [bale.compact(v) for _, v in gen_items],
                                   "pickle": lambda: [pickle.dumps(v, hb.PROTOCOL) for _, v in gen_items]},
                                  cfg["put_turns"])
    # one commit per put, into a fresh store each; puts taking turns in rounds of 10
    durable = {s: 0.0 for s in hb.SIDES}
    opened = {}
    for s in hb.SIDES:
        opened[s] = hb.open_side(s, os.path.join(work, f"durable-{s}"))
    items = datasets["generated"][: cfg["durable"]]
    for start in range(0, len(items), 10):
        order = list(hb.SIDES)
        random.Random(start).shuffle(order)
        for s in order:
            side = opened[s]
            t0 = time.perf_counter()
            for k, v in items[start:start + 10]:
                side.put_durable(k, v)
            durable[s] += time.perf_counter() - t0
    for s in hb.SIDES:
        opened[s].close()
        durable[s] /= len(items)
    return {"n": n, "nr": nr, "batched": batched, "size": size, "durable": durable, "durable_n": len(items), "ser": ser,
            "real_paths": last["real"]}


# --- 2. warm get, 6. drop -------------------------------------------------------------------


def item_get(cfg: dict, work: str, gen: list[dict], real_paths: dict[str, str] | None, nr: int,
             want_get: bool) -> tuple[dict, dict]:
    n = cfg["get_n"]
    items = [(f"u:{i:08d}", gen[i % len(gen)]) for i in range(n)]
    paths = {s: os.path.join(work, f"get-{s}") for s in hb.SIDES}
    builds = {}
    for s in hb.SIDES:
        gc.collect()
        builds[s] = build(s, paths[s], items, label="bulk")
        print(f"  built {n:,} records: {s} in {builds[s]:.1f} s", flush=True)
    sizes = {s: hb.disk_usage(paths[s]) for s in hb.SIDES}
    sides = {s: hb.open_side(s, paths[s], label="bulk") if s == "lmdb" else hb.open_side(s, paths[s])
             for s in hb.SIDES}
    res: dict = {"n": n, "builds": builds, "sizes": sizes}
    if want_get:
        rng = random.Random(2)
        idx = [rng.randrange(n) for _ in range(cfg["gets"])]
        keys = [items[i][0] for i in idx]
        expected = [items[i][1]["name"] for i in idx[:200]]
        for s, side in sides.items():
            if [side.get(k)["name"] for k in keys[:200]] != expected:
                raise SystemExit(f"{s}: gets do not give the records back")
        loops = {s: side.field_loop(keys, "name") for s, side in sides.items()}
        gc.collect()
        gc.freeze()
        try:
            t = common.best_interleaved(loops, cfg["get_turns"])
            res["get"] = {s: v / len(keys) for s, v in t.items()}
            # where bale's time goes: the store's lookup, the value's view, a field of an in-memory region
            store = sides["bale"].s
            region = __import__("bale").compact(items[0][1])
            root = region.root
            parts = {
                "s[k][name]": lambda: [store[k]["name"] for k in keys],
                "s[k]": lambda: [store[k] for k in keys],
                "index entry": lambda: [k in store for k in keys],
                "field of a view": lambda: [root["name"] for _ in keys],
                "dict lookup": lambda: [gen[0]["name"] for _ in keys],
            }
            res["parts"] = {p: v / len(keys) for p, v in common.best_interleaved(parts, cfg["get_turns"]).items()}
            if real_paths:
                real_sides = {s: hb.open_side(s, real_paths[s]) for s in hb.SIDES}
                rk = [f"r:{rng.randrange(nr):08d}" for _ in range(min(cfg["gets"], 20_000))]
                first = [real_sides["lmdb"].get(k)["id"] for k in rk[:100]]
                for s, side in real_sides.items():
                    if [side.get(k)["id"] for k in rk[:100]] != first:
                        raise SystemExit(f"{s}: real records differ")
                t = common.best_interleaved({s: side.field_loop(rk, "id") for s, side in real_sides.items()},
                                            cfg["get_turns"])
                res["get_real"] = {s: v / len(rk) for s, v in t.items()}
                for side in real_sides.values():
                    side.close()
        finally:
            gc.unfreeze()
    for side in sides.values():
        side.close()
    return res, paths


def item_drop(paths: dict[str, str], n: int) -> dict:
    out = {}
    for s in ("bale", "lmdb", "diskcache", "sqlite"):
        side = hb.open_side(s, paths[s], label="bulk") if s == "lmdb" else hb.open_side(s, paths[s])
        before = hb.disk_usage(paths[s])
        gc.collect()
        t0 = time.perf_counter()
        dropped = side.drop("bulk")
        t = time.perf_counter() - t0
        extra = {}
        if s == "bale":
            # the index still holds the dropped keys' entries (dead): reclaim() rewrites it without them
            extra["after_drop"] = hb.disk_usage(paths[s])
            left = len(side.s)
            t1 = time.perf_counter()
            extra["reclaim_freed"] = side.s.reclaim()
            extra["reclaim"] = time.perf_counter() - t1
            if left or len(side.s):
                raise SystemExit(f"bale: {left} values left after the drop")
        side.close()
        after = hb.disk_usage(paths[s])
        if dropped != n:
            raise SystemExit(f"{s}: dropped {dropped} values, not {n}")
        out[s] = {"time": t, "before": before, "after": after, "dropped": dropped, **extra}
        print(f"  drop {s}: {t:.3f} s, {before:,} -> {after:,} bytes", flush=True)
    return out


# --- 8. values built from other stored values ------------------------------------------------


def item_refs(cfg: dict, work: str, real: list[dict]) -> dict:
    """N bases, then N values holding one base each, batched: bale with
    references, bale copying (base thawed first), LMDB + pickle."""
    import bale

    n = cfg["ref_n"]
    bases = [(f"b:{i:08d}", real[i % len(real)]) for i in range(n)]
    keys = [k for k, _ in bases]
    out: dict = {"n": n, "base_bytes": sum(len(pickle.dumps(v, hb.PROTOCOL)) for _, v in bases) / n}
    sides = {"bale": lambda s, k: s.s[k], "bale_copy": lambda s, k: bale.thaw(s.s[k]),
             "lmdb": lambda s, k: s.get(k)}
    order = list(sides)
    random.Random(8).shuffle(order)
    for name in order:
        path = os.path.join(work, f"refs-{name}")
        kind = "lmdb" if name == "lmdb" else "bale"
        build(kind, path, bases, label="bases")
        # (LMDB: values in the bases' database; the measure is the bytes and the time.)
        side = hb.open_side(kind, path, label="bases") if kind == "lmdb" else hb.open_side(kind, path)
        before = hb.disk_usage(path)
        read = sides[name]
        gc.collect()
        t0 = time.perf_counter()
        values = [(f"v:{i:08d}", {"base": read(side, k), "rank": i}) for i, k in enumerate(keys)]
        side.refresh()  # LMDB: the read transaction ends before the write one
        side.put_batch(values, "values")
        del values
        t = time.perf_counter() - t0
        side.close()
        out[name] = {"time": t, "added": hb.disk_usage(path) - before}
        print(f"  {name}: {n:,} values in {t:.3f} s, {out[name]['added']:,} bytes added", flush=True)
    # bale: the gets, then the drops, on the store with references.
    s = bale.Store(os.path.join(work, "refs-bale", "store"))
    vkeys = [f"v:{i:08d}" for i in random.Random(1).sample(range(n), min(n, 2_000))]
    bkeys = [f"b:{k[2:]}" for k in vkeys]

    def through():
        for k in vkeys:
            s[k]["base"]["id"]

    def direct():
        for k in bkeys:
            s[k]["id"]

    gets = common.best_interleaved({"through": through, "direct": direct}, 5)
    out["get"] = {k: v / len(vkeys) for k, v in gets.items()}
    path = os.path.join(work, "refs-bale")
    d0 = hb.disk_usage(path)
    t0 = time.perf_counter()
    dropped_bases = s.drop("bases")
    out["drop_bases"] = {"time": time.perf_counter() - t0, "dropped": dropped_bases,
                         "freed": d0 - hb.disk_usage(path), "held": s.info()["held_segments"]}
    probe = vkeys[0]
    if bale.thaw(s[probe]["base"]) != real[int(probe[2:]) % len(real)]:
        raise SystemExit("a value lost its base to the drop of the bases' label")
    d1 = hb.disk_usage(path)
    t0 = time.perf_counter()
    dropped_values = s.drop("values")
    out["drop_values"] = {"time": time.perf_counter() - t0, "dropped": dropped_values,
                          "freed": d1 - hb.disk_usage(path), "left": s.info()["segments"]}
    s.close()
    return out


# --- 3. open + first get; 4. larger than memory; 5. readers; 7. k-means ---------------------


def build_profiles(work: str, sizes: list[int], sides_for: dict[int, tuple[str, ...]]) -> tuple[dict, dict]:
    per = profile_bytes()
    paths: dict[int, dict[str, str]] = {}
    counts = {}
    for size in sizes:
        n = max(KMEANS_K, int(size / per))
        counts[size] = n
        paths[size] = {}
        for s in sides_for[size]:
            path = os.path.join(work, f"prof-{size}-{s}")
            t = build(s, path, profiles(n))
            paths[size][s] = path
            print(f"  built {n:,} profiles ({common.fmt_bytes(size)}): {s} in {t:.1f} s, "
                  f"{common.fmt_bytes(hb.disk_usage(path))} on disk", flush=True)
    return paths, counts


def item_open(cfg: dict, paths: dict, counts: dict, can_drop: bool) -> dict:
    out: dict = {}
    for size in cfg["sizes_run"]:
        n = counts[size]
        k = f"p:{n // 2:08d}"
        args = {s: {"cmd": "open_get", "side": s, "path": paths[size][s], "key": k, "field": "followers"}
                for s in OPEN_SIDES}
        warm = {s: None for s in OPEN_SIDES}
        for turn in range(cfg["open_turns"]):
            order = list(OPEN_SIDES)
            if turn:
                random.Random(turn).shuffle(order)
            for s in order:
                r = child(args[s])
                if "error" in r:
                    raise SystemExit(f"open_get {s}: {r}")
                if r["value"] != (n // 2 * 7919) % 100_003:
                    raise SystemExit(f"open_get {s}: wrong value {r['value']}")
                if warm[s] is None or r["open_get"] < warm[s]["open_get"]:
                    warm[s] = r
        cold = {}
        if can_drop:
            for s in OPEN_SIDES:
                drop_caches()
                cold[s] = child(args[s])
        out[size] = {"n": n, "warm": warm, "cold": cold,
                     "disk": {s: hb.disk_usage(paths[size][s]) for s in OPEN_SIDES}}
        print(f"  open+get {common.fmt_bytes(size)}: " + ", ".join(
            f"{s} {us(warm[s]['open_get'])}" for s in OPEN_SIDES), flush=True)
    return out


def item_ltm(cfg: dict, paths: dict, n: int, can_drop: bool) -> dict:
    out: dict = {"limit": cfg["limit"], "n": n, "dropped": False}
    for s in ("bale", "lmdb"):
        if can_drop:
            out["dropped"] = drop_caches()
        r = child({"cmd": "ltm", "side": s, "path": paths[s], "n": n, "gets": cfg["ltm_gets"], "seed": 4,
                   "field": "followers"}, cgroup_limit=cfg["limit"])
        r["disk"] = hb.disk_usage(paths[s])
        out[s] = r
        if "error" in r and "cgroup" not in r:
            out["skipped"] = r["error"]
            print(f"  larger than memory: skipped ({r['error']})", flush=True)
            return out
        print(f"  larger than memory, {s}: {r}"[:300], flush=True)
    ok = [out[s] for s in ("bale", "lmdb") if "error" not in out[s]]
    if len(ok) == 2 and (ok[0]["sum"] != ok[1]["sum"] or ok[0]["got"] != ok[1]["got"]):
        raise SystemExit("larger than memory: bale and LMDB sums differ")
    return out


def warm_files(path: str) -> None:
    """Reads every file under ``path`` once, into the page cache."""
    for root, _dirs, files in os.walk(path):
        for name in files:
            with open(os.path.join(root, name), "rb", buffering=0) as f:
                while f.read(1 << 20):
                    pass


def item_readers(cfg: dict, paths: dict, n: int) -> dict:
    out: dict = {}
    configs = [(readers, s) for readers in cfg["readers"] for s in ("bale", "lmdb")]
    for turn in range(cfg["reader_turns"]):
        order = list(configs)
        if turn:
            random.Random(turn).shuffle(order)
        for readers, s in order:
            warm_files(paths[s])  # the page cache may have been dropped by item 3
            start = time.time() + 1.0 + 0.15 * readers
            dur = cfg["reader_secs"]
            t0 = time.perf_counter()
            w = spawn({"cmd": "writer", "side": s, "path": paths[s], "n": n, "seed": 9, "start": start,
                       "duration": dur})
            rs = [spawn({"cmd": "reader", "side": s, "path": paths[s], "n": n, "seed": 10 + i, "start": start,
                         "duration": dur, "field": "followers", "refresh_every": 100}) for i in range(readers)]
            got = [finish(p, t0) for p in rs]
            wr = finish(w, t0)
            for r in got + [wr]:
                if "error" in r:
                    raise SystemExit(f"readers {s}: {r}")
            per = [r["per_second"] for r in got]
            res = {"per_reader": sum(per) / len(per), "total": sum(per), "writer": wr["per_second"]}
            print(f"  {readers} readers, {s}: {res}", flush=True)
            if (readers, s) not in out or res["total"] > out[(readers, s)]["total"]:
                out[(readers, s)] = res
    out = {c: out[c] for c in configs}
    return out


def item_kmeans(cfg: dict, paths: dict, n: int, can_drop: bool) -> dict:
    out: dict = {"limit": cfg["limit"], "n": n}
    for s in ("bale", "diskcache", "heap"):
        if can_drop:
            drop_caches()
        if s == "heap":  # does not fit in the limit: no cgroup
            out[s] = r = child({"cmd": "kmeans", "side": s, "path": paths["bale"], "n": n, "k": KMEANS_K,
                                "iters": cfg["km_iters"]})
            if "error" in r:
                raise SystemExit(f"kmeans {s}: {r}")
            print(f"  k-means {s}: total {r['total']:.2f} s, gc {r['gc']:.3f} s in {r['collections']} collections",
                  flush=True)
            continue
        r = child({"cmd": "kmeans", "side": s, "path": paths[s], "n": n, "k": KMEANS_K, "iters": cfg["km_iters"]},
                  cgroup_limit=cfg["limit"])
        if "error" in r and "cgroup" not in r:  # no cgroup: the same job, no limit
            r = child({"cmd": "kmeans", "side": s, "path": paths[s], "n": n, "k": KMEANS_K,
                       "iters": cfg["km_iters"]})
            r["no_cgroup"] = True
        if "error" in r:
            raise SystemExit(f"kmeans {s}: {r}")
        out[s] = r
        print(f"  k-means {s}: total {r['total']:.2f} s, gc {r['gc']:.3f} s in {r['collections']} collections",
              flush=True)
    if not out["bale"]["centroids"] == out["diskcache"]["centroids"] == out["heap"]["centroids"]:
        raise SystemExit("k-means: bale, diskcache and the heap end with different centroids")
    return out


# --- the section ----------------------------------------------------------------------------


def options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--big", action="store_true", help="also a 10 GB store for item 3 (open + first get)")
    ap.add_argument("--items", default=",".join(map(str, ALL_ITEMS)),
                    help="comma-separated items to run (1-7; default all; a subset writes no report)")


def run(mode: str, plots_dir: str, args: argparse.Namespace | None = None) -> common.Section:
    cfg = dict(CONFIG[mode])
    items = set(ALL_ITEMS)
    # run_all.py passes no options: BALE_HEAP_BIG=1 adds the 10 GB store there.
    big = os.environ.get("BALE_HEAP_BIG", "") not in ("", "0")
    if args is not None:
        items = {int(x) for x in args.items.split(",") if x.strip()}
        big = big or args.big
        if items != set(ALL_ITEMS) and not args.no_report:
            print("--items: a subset of the items; the section is printed, not written into a report")
            args.no_report = True
    cfg["sizes_run"] = list(cfg["sizes"]) + ([10_000 * MB] if big and mode == "full" else [])
    can_drop = cfg["drop_caches"] and os.access("/proc/sys/vm/drop_caches", os.W_OK)
    flag = "" if mode == "full" else f" --{mode}"
    cmd = f"python benchmarks/bench_heap.py{flag}" + (" --big" if big and mode == "full" else "")
    work = tempfile.mkdtemp(prefix="bale-heap-", dir=os.environ.get("BALE_HEAP_DIR"))
    r: dict = {}
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    try:
        gen = user_records(max(cfg["get_n"] if items & {2, 6} else 0, cfg["put_n"] if 1 in items else 0, 1))
        real = real_records()
        if 1 in items:
            print("1. put throughput", flush=True)
            r[1] = item_put(cfg, work, gen, real)
        if items & {2, 6}:
            print("2. warm get", flush=True)
            r[2], get_paths = item_get(cfg, work, gen, r[1]["real_paths"] if 1 in items else None,
                                       cfg["put_real"], 2 in items)
            del gen
            gc.collect()
            if 6 in items:
                print("6. drop", flush=True)
                r[6] = item_drop(get_paths, cfg["get_n"])
            for p in get_paths.values():
                shutil.rmtree(p, ignore_errors=True)
        if 8 in items:
            print("8. values built from other stored values", flush=True)
            r[8] = item_refs(cfg, work, real)
        if items & {3, 4, 5, 7}:
            print("3-5, 7: profiles", flush=True)
            sizes = sorted(set((cfg["sizes_run"] if 3 in items else []) + [cfg["ltm_size"], cfg["sizes"][-2]]))
            need: dict[int, set] = {size: set() for size in sizes}
            if 3 in items:
                for size in cfg["sizes_run"]:
                    need[size] |= set(OPEN_SIDES)
            need[cfg["ltm_size"]] |= ({"bale", "lmdb"} if 4 in items else set()) | (
                {"bale", "diskcache"} if 7 in items else set())
            need[cfg["sizes"][-2]] |= {"bale", "lmdb"} if 5 in items else set()
            sizes = [size for size in sizes if need[size]]
            paths, counts = build_profiles(work, sizes, {size: tuple(sorted(need[size])) for size in sizes})
            if 3 in items:
                print("3. open + first get", flush=True)
                r[3] = item_open(cfg, paths, counts, can_drop)
            if 5 in items:
                print("5. readers and a writer", flush=True)
                r[5] = item_readers(cfg, paths[cfg["sizes"][-2]], counts[cfg["sizes"][-2]])
            if 4 in items:
                print("4. larger than memory", flush=True)
                r[4] = item_ltm(cfg, paths[cfg["ltm_size"]], counts[cfg["ltm_size"]], can_drop)
            if 7 in items:
                print("7. k-means", flush=True)
                r[7] = item_kmeans(cfg, paths[cfg["ltm_size"]], counts[cfg["ltm_size"]], can_drop)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.perf_counter() - t_start
    cfg["load"] = (load_start, os.getloadavg())
    return section(mode, cmd, cfg, r, plots_dir, can_drop, elapsed)


def section(mode: str, cmd: str, cfg: dict, r: dict, plots_dir: str, can_drop: bool, elapsed: float) -> common.Section:
    L = hb.LABELS
    lines = [
        f"`{cmd}` ({elapsed / 60:.1f} minutes, load average {cfg['load'][0][0]:.1f} at the start and "
        f"{cfg['load'][1][0]:.1f} at the end on 2 cores shared with other work: single figures move by tens of "
        "percent between runs, ratios less; `--items N,...` runs some items alone, `--big` adds a 10 GB store "
        "to item 3). bale.Store against LMDB + pickle (protocol 5), diskcache, shelve and sqlite3 + pickle on the "
        "same records in the same run, stores in a temporary folder on the machine's disk (ext4 on a virtio disk: "
        "an fdatasync takes about 4 ms). Repeated timings take turns between the sides. The sides' settings are in "
        "`benchmarks/heap_backends.py`: LMDB with its default `sync=True`, one named database per label; sqlite "
        "`kv(key TEXT PRIMARY KEY, value BLOB)` in WAL mode with `synchronous=FULL`; diskcache with its defaults "
        "(WAL, `synchronous=NORMAL`) but no size limit and a tag index; shelve is `dbm.dumb` here (this Python has "
        "no gdbm or ndbm) and never fsyncs. Page cache "
        + ("dropped (`echo 3 > /proc/sys/vm/drop_caches`, after `sync`) before every cold run and before items 4 "
           "and 7." if can_drop else "**not** dropped (this mode, or this process may not): items 4 and 7 then "
           "read pages cached outside their cgroup, and their limit means nothing."),
        "",
    ]
    plots = []
    targets: list[common.Target] = []
    if 1 in r:
        p = r[1]
        rows = []
        for s in hb.SIDES:
            rows.append((L[s], rate(p["n"], p["batched"]["generated"][s]), rate(p["nr"], p["batched"]["real"][s]),
                         f"{p['durable'][s] * 1e3:.2f} ms" + (" (no fsync)" if s == "shelve" else
                                                             " (no fsync per put)" if s == "diskcache" else ""),
                         f"{common.fmt_bytes(p['size']['generated'][s])} ({p['size']['generated'][s] / p['n']:.0f} B)",
                         f"{common.fmt_bytes(p['size']['real'][s])}"))
        lines += [
            f"### 1. Put throughput\n\n`{cmd} --items 1`. Batched: {p['n']:,} generated user records "
            f"(`bale._datagen.tweets` plus a name, followers and two scores) and {p['nr']:,} real records "
            "(the 100 statuses of twitter.json, 30 events of github_events.json and 243 performances of "
            "citm_catalog.json from `../shared/data/json`, cycled under distinct keys), one commit for all (bale "
            "`batch()`, one LMDB write transaction, one sqlite transaction, diskcache `transact()`, shelve `sync()` "
            f"at the end) into a fresh store, open and close included; best of {cfg['put_turns']} taking turns. "
            f"Durable: {p['durable_n']} puts, one commit each (LMDB and sqlite fsync each commit; bale fsyncs the "
            "segment, its checksums and a superblock; diskcache's WAL with `synchronous=NORMAL` fsyncs only at "
            "checkpoints and shelve never). Disk: st_blocks of every file after the batched build.",
            "",
            *common.table(["side", "batched, generated", "batched, real records", "durable: time per put",
                           "disk after (per record), generated", "disk after, real"],
                          ["l", "r", "r", "r", "r", "r"], rows),
            "",
        ]
        b, lm = p["batched"]["generated"]["bale"] / p["n"], p["batched"]["generated"]["lmdb"] / p["n"]
        lines += [
            f"Per generated record, batched: bale {us(b)} a put, of which `bale.compact` of the value alone takes "
            f"{us(p['ser']['bale'] / p['n'])}; LMDB {us(lm)}, of which `pickle.dumps` takes "
            f"{us(p['ser']['pickle'] / p['n'])}. The rest of bale's put is `Store.put` in Python (`_store.py`: "
            "the segment's lineage handle, `Region.append` and a copy of the bytes it appended (written to the "
            "file a MiB at a time, each run with its XXH3), the key's old entry looked up, the new one recorded): "
            "bale loses batched puts to LMDB and sqlite for that reason, and durable puts because a commit "
            "fdatasyncs the segment, its `.sums` file and a superblock (three syncs to LMDB's two and sqlite WAL's "
            "one).",
            "",
        ]
        plots.append(common.bar_plot(plots_dir, "heap_put", "put throughput (records per second)", "records / s",
                                     ["batched, generated", "batched, real", "durable, one commit per put"],
                                     {L[s]: [p["n"] / p["batched"]["generated"][s], p["nr"] / p["batched"]["real"][s],
                                             1 / p["durable"][s]] for s in hb.SIDES}, logy=True))
        lines += [common.plot_line(plots[-1], "put throughput"), ""]
    if 2 in r and "get" in r[2]:
        g = r[2]
        rows = []
        for s in hb.SIDES:
            row = [L[s], f"{g['get'][s] * 1e9:,.0f}", common.fmt_ratio(g["get"]["bale"] / g["get"][s])]
            if "get_real" in g:
                row += [f"{g['get_real'][s] * 1e9:,.0f}", common.fmt_ratio(g["get_real"]["bale"] / g["get_real"][s])]
            row += [f"{g['builds'][s]:.1f} s", common.fmt_bytes(g["sizes"][s])]
            rows.append(tuple(row))
        header = ["side", f"ns per get, {g['n']:,} generated", "bale / side"]
        if "get_real" in g:
            header += ["ns per get, real records", "bale / side"]
        header += [f"build of the {g['n']:,} (one commit)", "disk"]
        parts = g["parts"]
        b = g["get"]["bale"]
        lines += [
            f"### 2. Warm get of one field\n\n`{cmd} --items 2`. A store of {g['n']:,} generated records; "
            f"{cfg['gets']:,} random keys; `s[k][\"name\"]` against `pickle.loads(txn.get(k))[\"name\"]` (one "
            "read transaction for the loop, keys encoded to bytes beforehand), `cache[k][\"name\"]`, "
            "`shelf[k][\"name\"]` and `pickle.loads(SELECT value ...)[\"name\"]`; then `[\"id\"]` of the real "
            f"records of item 1. Best of {cfg['get_turns']} taking turns (the first warms the page cache). GC "
            "state, the same for every side: enabled (default thresholds), the parent's heap (the records) frozen "
            "with `gc.freeze()` after the builds, so a collection during a loop only sees what the loop made.",
            "",
            *common.table(header, ["l"] + ["r"] * (len(header) - 1), rows),
            "",
            f"Where bale's time goes (same keys, the parts taking turns again): `s[k][\"name\"]` "
            f"{parts['s[k][name]'] * 1e9:.0f} ns, `s[k]` alone "
            f"{parts['s[k]'] * 1e9:.0f} ns (`k in s`, the same lookup without the value: "
            f"{parts['index entry'] * 1e9:.0f} ns); `[\"name\"]` on a view {parts['field of a view'] * 1e9:.0f} ns "
            f"(a native dict: {parts['dict lookup'] * 1e9:.0f} ns, loop included). `s[k]` is one call into Rust "
            "with no Python frame (`Store`'s base class `_bale._StoreReads`: the key in the commit's delta, then "
            "in each index file, newest first, in its lookup table: one 32-byte bucket holding the key's hash, "
            "its slot and its entry; the value's root prefetched from the bucket while the key's bytes are "
            "compared; the root view on the segment's own handle, with no handle object per get). What remains "
            "is mostly memory latency: at 1M keys the bucket, the key's bytes, the value's root and its field "
            "each miss the CPU caches and the TLB (the key and the root now in flight together, and every "
            "level's bucket prefetched before the delta is read).",
            "",
        ]
        full = mode == "full"
        what = f"warm get of one field, {g['n']:,}-value store (issue 19)"
        t1 = common.Target(what, "< 1 µs", us(b), "", "", (b < 1e-6) if full else None, "bench_heap.py")
        t2 = common.ratio_target(what, 0.5, b, g["get"]["lmdb"], "LMDB + pickle", "bench_heap.py")
        t3 = common.ratio_target(what, 0.1, b, g["get"]["diskcache"], "diskcache", "bench_heap.py")
        if not full:
            t2.met = t3.met = None
        targets += [t1, t2, t3]
        lines += ["Goals (issue 19): " + "; ".join(
            f"{t.goal}: {t.ratio or t.measured} ({'not measured at 1M' if t.met is None else 'met' if t.met else 'NOT MET'})"
            for t in (t1, t2, t3)) + ".", ""]
        groups = [f"{g['n']:,} generated"] + (["real records"] if "get_real" in g else [])
        plots.append(common.bar_plot(plots_dir, "heap_get", "warm get of one field of a random value",
                                     "ns per get", groups,
                                     {L[s]: [g["get"][s] * 1e9] + ([g["get_real"][s] * 1e9] if "get_real" in g
                                                                   else []) for s in hb.SIDES}, logy=False))
        lines += [common.plot_line(plots[-1], "warm get"), ""]
    if 3 in r:
        o = r[3]
        bale_warm = [d["warm"]["bale"]["open_get"] for d in o.values()]
        rows = []
        for size, d in o.items():
            for s in OPEN_SIDES:
                w = d["warm"][s]
                c = d["cold"].get(s)
                rows.append((common.fmt_bytes(size), f"{d['n']:,}", L[s], common.fmt_bytes(d["disk"][s]),
                             us(w["open_get"]), us(c["open_get"]) if c and "open_get" in c else "-",
                             common.fmt_bytes(c["read_bytes"]) if c and "read_bytes" in c else "-",
                             us(w["import"]), us(w["wall"]), us(c["wall"]) if c and "wall" in c else "-"))
        lines += [
            f"### 3. Open and first get in a fresh process\n\n`{cmd} --items 3`. Stores of ~4 kB profiles (a bio "
            "and 12 recent tweets with text); a child process imports the side's library, opens the store "
            "read-only and reads `[\"followers\"]` of the middle key. \"open + get\" is timed inside the child "
            "from after the import to after the get; \"child wall\" is the parent's time from spawning to exit "
            f"(interpreter start included). Warm: best of {cfg['open_turns']} children taking turns, files in the "
            "page cache; cold: one child after dropping the page cache"
            + ("" if can_drop else " (not done in this run)") + ".",
            "",
            *common.table(["store", "values", "side", "disk", "open + get, warm", "open + get, cold",
                           "read from disk by open + get, cold", "import", "child wall, warm", "child wall, cold"],
                          ["l", "r", "l", "r", "r", "r", "r", "r", "r", "r"], rows),
            "",
            "\"read from disk\" is the child's `read_bytes` of `/proc/self/io` across open + get. Warm, bale's "
            f"open + first get takes {us(min(bale_warm))} to {us(max(bale_warm))} from the smallest store to the "
            f"largest ({common.fmt_bytes(min(o))} to {common.fmt_bytes(max(o))}). Opening reads the commit record "
            "(a row per 64 MiB segment, checked: about 2 µs each) and maps every index file of the commit (O(log "
            "keys) files, no per-key work) and no segment: a segment is mapped at its first read, with the "
            "segments it references (docs/STORE.md, *Readers*: the reader table that keeps a freed segment's "
            "files until no open store reads a commit naming it). Each file's 64-byte header is read with "
            "`MADV_RANDOM` around that first fault, so that the kernel does not read its read-around window of "
            f"`read_ahead_kb` ({read_ahead_kb()} kB here) per file; index files stay `MADV_RANDOM` (hash probes). "
            "Cold, what remains is the first get's own faults: the index pages it probes and the value's pages, "
            "read with the default read-around on segments (which a scan wants).",
            "",
        ]
        sizes = list(o)
        series = {f"{L[s]}, warm": (sizes, [o[z]["warm"][s]["open_get"] for z in sizes]) for s in OPEN_SIDES}
        if can_drop:
            series.update({f"{L[s]}, cold": (sizes, [o[z]["cold"][s]["open_get"] for z in sizes])
                           for s in ("bale", "lmdb")})
        plots.append(common.line_plot(plots_dir, "heap_open", "open + first get in a fresh process",
                                      "store size (bytes of profiles)", "seconds", series))
        lines += [common.plot_line(plots[-1], "open and first get"), ""]
    if 4 in r:
        m = r[4]
        lines += [f"### 4. Larger than memory\n\n`{cmd} --items 4`."]
        if "skipped" in m:
            lines += ["", f"**Not measured**: {m['skipped']}. (No limit was faked.)", ""]
        else:
            rows = []
            for s in ("bale", "lmdb"):
                x = m[s]
                cg = x.get("cgroup", {})
                if "error" in x:
                    rows.append((L[s], common.fmt_bytes(x["disk"]), x["error"], "-", "-", "-",
                                 common.fmt_bytes(cg.get("max_usage", 0))))
                else:
                    rows.append((L[s], common.fmt_bytes(x["disk"]), f"{x['per_get'] * 1e6:.0f} µs",
                                 f"{x['scan']:.2f} s", rate(m["n"], x["scan"]), common.fmt_bytes(x["rss"]),
                                 common.fmt_bytes(cg.get("max_usage", 0))))
            lines += [
                "",
                f"A child in a fresh cgroup v1 memory cgroup (`memory.limit_in_bytes` = {m['limit'] // MiB} MiB, "
                "page cache included; no swap on this machine) reads the largest store of item 3 "
                f"({m['n']:,} profiles): {cfg['ltm_gets']:,} random gets of `[\"followers\"]`, then a full scan "
                "summing it (bale: every key of `s.keys()`, `s[k][\"followers\"]`; LMDB: a cursor over the "
                "database, `pickle.loads(v)[\"followers\"]`). Both give the same sums (checked). Page cache "
                + ("dropped before each child." if m["dropped"] else "NOT dropped (see above)."),
                "",
                *common.table(["side", "store on disk", "random get (cold)", "full scan", "scan rate",
                               "child peak RSS", "cgroup peak usage"], ["l", "r", "r", "r", "r", "r", "r"], rows),
                "",
                "Both sides read through `mmap` (LMDB with its default read-ahead), so a random get that misses "
                f"the page cache faults in a read-around window ({read_ahead_kb()} kB `read_ahead_kb` here) inside "
                "a cgroup that can hold a few dozen of them: random gets cost milliseconds on both sides, set by "
                "the disk, not by the format. "
                + (f"The full scan took {m['bale']['scan']:.2f} s on bale against {m['lmdb']['scan']:.2f} s on "
                   f"LMDB ({m['bale']['scan'] / m['lmdb']['scan']:.2f}x). bale reads one field of each value in "
                   "place where LMDB + pickle unpickles every ~4 kB profile, but both read the whole store from "
                   "the disk through the cgroup's page cache (both in the order the values were written), and "
                   "each side's scan moves by up to a quarter between runs on this machine."
                   if "scan" in m.get("bale", {}) and "scan" in m.get("lmdb", {}) else ""),
                "",
            ]
    if 5 in r:
        rd = r[5]
        rows = []
        for (readers, s), x in rd.items():
            rows.append((str(readers), L[s], rate(x["per_reader"], 1), rate(x["total"], 1), f"{x['writer']:.0f}/s"))
        lines += [
            f"### 5. Readers in processes with one writer\n\n`{cmd} --items 5`. The {cfg['sizes'][-2] // MB} MB "
            "store of item 3; one writer process puts profiles under random existing keys, one durable commit "
            f"each; 1 to {max(cfg['readers'])} reader processes do random gets of `[\"followers\"]`, a new "
            "snapshot every 100 gets (bale `refresh()`, LMDB a new read transaction), all for "
            f"{cfg['reader_secs']:g} s from the same instant; page cache warm; best total of {cfg['reader_turns']} "
            "runs of each configuration, taking turns. This machine has 2 cores: 2 readers already fill them (the "
            "writer mostly waits on fsync), 4 readers and a writer share them.",
            "",
            *common.table(["readers", "side", "gets/s per reader", "gets/s, all readers", "writer puts/s"],
                          ["r", "l", "r", "r", "r"], rows),
            "",
        ]
        lines += [
            f"With one reader, bale does {rd[(1, 'bale')]['per_reader'] / rd[(1, 'lmdb')]['per_reader']:.1f}x "
            "LMDB's gets: LMDB + pickle unpickles the ~4 kB profile to read one field. Readers never wait for "
            "the writer on either side. LMDB's writer commits more puts per second (a commit is two fsyncs, and "
            "pickling is cheaper than `Store.put`); bale's reader pays for `refresh()` reading both superblock "
            "files every 100 gets.",
            "",
        ]
        xs = sorted({readers for readers, _ in rd})
        plots.append(common.line_plot(plots_dir, "heap_readers", "random gets with one writer", "reader processes",
                                      "gets / s, all readers",
                                      {L[s]: (xs, [rd[(x, s)]["total"] for x in xs]) for s in ("bale", "lmdb")},
                                      logy=False, base2_x=True))
        lines += [common.plot_line(plots[-1], "readers"), ""]
    if 6 in r:
        d = r[6]
        what = {"bale": "`s.drop(label)`", "lmdb": "`txn.drop(db)` (a named database per label)",
                "diskcache": "`cache.evict(tag)`", "sqlite": "`DROP TABLE kv` (no labels: the whole table)"}
        rows = []
        for s, x in d.items():
            if s == "bale":
                rows.append((L[s], what[s], f"{x['dropped']:,}", us(x["time"]), common.fmt_bytes(x["before"]),
                             common.fmt_bytes(x["after_drop"]), common.fmt_bytes(x["before"] - x["after_drop"])))
                rows.append((L[s], "then `s.reclaim()`", "", us(x["reclaim"]), common.fmt_bytes(x["after_drop"]),
                             common.fmt_bytes(x["after"]), common.fmt_bytes(x["after_drop"] - x["after"])))
            else:
                back = x["before"] - x["after"]
                rows.append((L[s], what[s], f"{x['dropped']:,}", us(x["time"]), common.fmt_bytes(x["before"]),
                             common.fmt_bytes(x["after"]),
                             common.fmt_bytes(back) if back >= 0 else f"none (grew {common.fmt_bytes(-back)})"))
        lines += [
            f"### 6. Drop of a label\n\n`{cmd} --items 6`. The stores of item 2 (every record put with one "
            "label / tag / database); the nearest equivalent of dropping it on each side; disk (st_blocks of every "
            "file) before and after, the store closed.",
            "",
            *common.table(["side", "operation", "values", "time", "disk before", "disk after", "returned"],
                          ["l", "l", "r", "r", "r", "r", "r"], rows),
            "",
            f"bale's drop deletes the label's segment files at the commit: "
            f"{(d['bale']['before'] - d['bale']['after_drop']) / d['bale']['before'] * 100:.0f}% of the store's "
            "disk comes back at once; the index still holds an entry per dropped key (dead, skipped by every "
            "read) until `reclaim()` (or a merge that reaches the oldest index file) rewrites it. LMDB's drop is "
            "the fastest, but the freed pages stay in its file for reuse: the file never shrinks. diskcache's "
            "`evict` returns the space (SQLite `auto_vacuum=FULL`), deleting 100 rows per transaction. SQLite's "
            "`DROP TABLE` leaves the pages on its freelist until a `VACUUM`.",
            "",
        ]
    if 7 in r:
        k = r[7]
        rows = []
        names = dict(L, heap="native dicts on the Python heap (no cgroup: they do not fit)")
        for s in ("bale", "diskcache", "heap"):
            x = k[s]
            rows.append((names[s] + (" (no cgroup)" if x.get("no_cgroup") else ""), f"{x['total']:.2f} s",
                         ", ".join(f"{t:.2f}" for t in x["iterations"]), f"{x['gc']:.3f} s",
                         f"{x['gc'] / x['total'] * 100:.1f}%", str(x["collections"]), us(x["gc_max"]),
                         common.fmt_bytes(x["cgroup"]["max_usage"]) if "cgroup" in x
                         else f"- (peak RSS {common.fmt_bytes(x['rss'])})"))
        lines += [
            f"### 7. An iterative job over a cached dataset larger than memory (TeraHeap-style)\n\n`{cmd} --items 7`. "
            f"Lloyd's k-means (k = {KMEANS_K}, {DIM} features, {cfg['km_iters']} iterations, pure Python) over "
            f"the {k['n']:,} profiles of item 4's store, each iteration reading every value's `features` from "
            f"the cache: bale views in place, or diskcache (each get unpickles the whole ~4 kB profile out of "
            f"SQLite). In the memory cgroup of item 4 ({k['limit'] // MiB} MiB), page cache dropped first. For "
            "reference, the same job over the profiles held as native dicts on the Python heap (thawed from the "
            f"bale store with `bale.thaw` in {k['heap']['load']:.1f} s, of which {k['heap']['load_gc']:.2f} s in the "
            f"collector, not counted; {common.fmt_bytes(k['heap']['rss'])} "
            "peak RSS, so outside the cgroup): the TeraHeap baseline, where the cached data is in the collector's "
            "heap. Each iteration keeps a (key, cluster) tuple per value until its end, as a job keeps its output, "
            "so the collector runs; all three end with the same centroids (checked). GC time is the sum of the "
            "pauses seen by `gc.callbacks`, GC enabled with default thresholds everywhere.",
            "",
            *common.table(["cache", "total", "per iteration (s)", "time in GC", "GC share", "collections",
                           "longest pause", "cgroup peak usage"], ["l", "r", "r", "r", "r", "r", "r", "r"], rows),
            "",
            f"bale runs the job {k['diskcache']['total'] / k['bale']['total']:.1f}x faster than diskcache inside "
            "the same limit: diskcache's time is unpickling each whole profile to read 8 floats, not the "
            "collector (reference counting frees each unpickled profile at once, so few objects reach a "
            "collection). The native heap runs the iterations "
            f"{k['bale']['total'] / k['heap']['total']:.1f}x faster than bale, but needs "
            f"{common.fmt_bytes(k['heap']['rss'])} of memory, {k['heap']['rss'] / k['limit']:.0f}x the limit, "
            f"and its cost is in building it: {k['heap']['load_gc']:.1f} s of the {k['heap']['load']:.1f} s of "
            "thawing were collections, each full one traversing every cached object so far (the TeraHeap "
            "effect). Once built, CPython collects it rarely (a full collection waits until the long-lived "
            "objects grow by a quarter), so the iterations' GC share is small on every side.",
            "",
        ]
    if 8 in r:
        x = r[8]
        n = x["n"]
        names = {"bale": "bale, references (`{\"base\": s[k], ...}`)",
                 "bale_copy": "bale, base copied (`{\"base\": bale.thaw(s[k]), ...}`)",
                 "lmdb": "LMDB + pickle (the base pickled again inside each value)"}
        rows = [(names[k], us(x[k]["time"]), us(x[k]["time"] / n), common.fmt_bytes(x[k]["added"]),
                 f"{x[k]['added'] / n:,.0f} B") for k in ("bale", "bale_copy", "lmdb")]
        db, dv = x["drop_bases"], x["drop_values"]
        lines += [
            f"### 8. Values built from other stored values\n\n`{cmd} --items 8`. {n:,} real records (item 1's; "
            f"{x['base_bytes']:,.0f} bytes each as pickles) put under the label `bases`, then {n:,} values "
            "`{\"base\": <a base>, \"rank\": i}` under the label `values`, in one batch each; the time and the "
            "disk (st_blocks) the values add. bale references a base where it lies (docs/STORE.md, *References "
            "between segments*: a 40-byte EXTERN object); made to copy it, it stores what a store without "
            "references between segments stores.",
            "",
            *common.table(["how", "time", "per value", "disk added", "per value"], ["l", "r", "r", "r", "r"], rows),
            "",
            f"Reading through the reference: `s[k][\"base\"][\"id\"]` takes {us(x['get']['through'])} "
            f"against {us(x['get']['direct'])} for `s[b][\"id\"]` on the base itself (warm, best of 5 taking "
            "turns). Dropping the label `bases` "
            f"({db['dropped']:,} values, {us(db['time'])}) frees "
            + (common.fmt_bytes(db["freed"]) if db["freed"] >= 0
               else f"nothing (the commit's new files add {common.fmt_bytes(-db['freed'])})")
            + ": its "
            f"{db['held']} segments are held, as the values reference them, and every value still reads its base "
            f"(checked). Dropping `values` then ({dv['dropped']:,} values, {us(dv['time'])}) frees "
            f"{common.fmt_bytes(dv['freed'])}, the bases' segments with the values' ({dv['left']} segments left).",
            "",
        ]
    return common.Section(TITLE, lines, targets, plots)


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run, options)


if __name__ == "__main__":
    sys.exit(main())
