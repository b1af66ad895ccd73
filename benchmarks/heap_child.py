"""A child process of bench_heap.py: one measurement in a fresh interpreter.

    python heap_child.py '{"cmd": ..., ...}'

Prints one line of JSON with its figures. Commands:

- ``open_get``: import the side's library, open the store, read one field
  of one value (times of the import, and of open + first get);
- ``ltm``: random gets of one field, then a full scan summing it (run by the
  parent inside a memory cgroup smaller than the store);
- ``reader`` / ``writer``: random gets (a new snapshot every
  ``refresh_every`` gets) or durable puts, from ``start`` for ``duration``
  seconds (wall clock, so that processes start together);
- ``kmeans``: Lloyd's k-means over the ``features`` of every value, reading
  the values from the store each iteration; the time in the garbage
  collector is summed with ``gc.callbacks``.
"""

import time

T0 = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def key(i: int) -> str:
    return f"p:{i:08d}"


def import_library(side: str) -> None:
    if side == "bale":
        import bale

        bale.Store  # bale imports its submodules lazily: this one counts as import too
    elif side == "lmdb":
        import pickle  # noqa: F401

        import lmdb  # noqa: F401
    elif side == "diskcache":
        import diskcache  # noqa: F401
    elif side == "sqlite":
        import pickle  # noqa: F401
        import sqlite3  # noqa: F401


def rss_peak() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def read_bytes() -> int:
    """Bytes this process has had read from the disk so far (page cache misses), from /proc/self/io."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def open_get(a: dict) -> dict:
    t0 = time.perf_counter()
    import_library(a["side"])
    import heap_backends

    r1 = read_bytes()
    t1 = time.perf_counter()
    side = heap_backends.open_side(a["side"], a["path"], readonly=True)
    value = side.get(a["key"])[a["field"]]
    t2 = time.perf_counter()
    return {"startup": t0 - T0, "import": t1 - t0, "open_get": t2 - t1, "value": value,
            "read_bytes": read_bytes() - r1}


def ltm(a: dict) -> dict:
    import heap_backends

    side = heap_backends.open_side(a["side"], a["path"], readonly=True)
    rng = random.Random(a["seed"])
    keys = [key(rng.randrange(a["n"])) for _ in range(a["gets"])]
    field = a["field"]
    t0 = time.perf_counter()
    got = 0
    for k in keys:
        got += side.get(k)[field]
    t1 = time.perf_counter()
    total = side.scan_sum(field)
    t2 = time.perf_counter()
    return {"gets": t1 - t0, "per_get": (t1 - t0) / len(keys), "scan": t2 - t1, "sum": total, "got": got,
            "rss": rss_peak()}


def wait_until(start: float) -> None:
    while True:
        left = start - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 0.01))


def reader(a: dict) -> dict:
    import heap_backends

    side = heap_backends.open_side(a["side"], a["path"], readonly=True)
    rng = random.Random(a["seed"])
    n, field, every = a["n"], a["field"], a["refresh_every"]
    keys = [key(rng.randrange(n)) for _ in range(every * 64)]
    get = side.get
    wait_until(a["start"])
    end = a["start"] + a["duration"]
    gets = 0
    refreshes = 0
    while time.time() < end:
        side.refresh()
        refreshes += 1
        base = (refreshes * every) % len(keys)
        for k in keys[base:base + every]:
            get(k)[field]
        gets += every
    elapsed = time.time() - a["start"]
    side.close()
    return {"gets": gets, "seconds": elapsed, "per_second": gets / elapsed}


def writer(a: dict) -> dict:
    import heap_backends

    side = heap_backends.open_side(a["side"], a["path"])
    rng = random.Random(a["seed"])
    values = [side.get(key(i)) for i in range(16)]
    if a["side"] == "bale":
        import bale

        values = [bale.thaw(v) for v in values]
    wait_until(a["start"])
    end = a["start"] + a["duration"]
    puts = 0
    while time.time() < end:
        v = dict(values[puts % len(values)], followers=puts)
        side.put_durable(key(rng.randrange(a["n"])), v)
        puts += 1
    elapsed = time.time() - a["start"]
    side.close()
    return {"puts": puts, "seconds": elapsed, "per_second": puts / elapsed}


def kmeans(a: dict) -> dict:
    import gc

    import heap_backends

    pauses = []
    started = [0.0]

    def on_gc(phase, info):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append(time.perf_counter() - started[0])

    n, k, iters = a["n"], a["k"], a["iters"]
    keys = [key(i) for i in range(n)]
    load = load_gc = 0.0
    if a["side"] == "heap":
        # the dataset cached on the Python heap, as a job would without a store (thawed once from the bale store)
        import bale

        source = heap_backends.open_side("bale", a["path"], readonly=True)
        gc.callbacks.append(on_gc)
        t = time.perf_counter()
        data = {k_: bale.thaw(source.get(k_)) for k_ in keys}
        load = time.perf_counter() - t
        gc.callbacks.remove(on_gc)
        load_gc = sum(pauses)
        pauses.clear()
        source.close()
        get = data.__getitem__
    else:
        side = heap_backends.open_side(a["side"], a["path"], readonly=True)
        get = side.get
    centroids = [list(get(keys[i])["features"]) for i in range(k)]
    dim = len(centroids[0])
    gc.callbacks.append(on_gc)
    t0 = time.perf_counter()
    times = []
    inertia = 0.0
    for _ in range(iters):
        ti = time.perf_counter()
        sums = [[0.0] * dim for _ in range(k)]
        counts = [0] * k
        inertia = 0.0
        assigned = []  # (key, cluster) of every value: kept for the iteration, as a job keeps its output
        for key_ in keys:
            f = get(key_)["features"]
            x = list(f)  # one read of the vector, the same for every side
            best, best_d = 0, float("inf")
            for c in range(k):
                cen = centroids[c]
                d = 0.0
                for j in range(dim):
                    t = x[j] - cen[j]
                    d += t * t
                if d < best_d:
                    best, best_d = c, d
            inertia += best_d
            assigned.append((key_, best))
            counts[best] += 1
            s = sums[best]
            for j in range(dim):
                s[j] += x[j]
        centroids = [[s / counts[c] for s in sums[c]] if counts[c] else centroids[c] for c in range(k)]
        times.append(time.perf_counter() - ti)
    total = time.perf_counter() - t0
    gc.callbacks.remove(on_gc)
    return {"total": total, "load": load, "load_gc": load_gc, "iterations": times, "gc": sum(pauses), "collections": len(pauses),
            "gc_max": max(pauses, default=0.0), "inertia": inertia, "centroids": centroids, "rss": rss_peak()}


def main() -> None:
    a = json.loads(sys.argv[1])
    out = {"open_get": open_get, "ltm": ltm, "reader": reader, "writer": writer, "kmeans": kmeans}[a["cmd"]](a)
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
