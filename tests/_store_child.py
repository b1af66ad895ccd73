"""Child processes for test_store.py (not a test module itself).

    python _store_child.py writer PATH SEED [SEGMENT_SIZE [refs]]
    python _store_child.py putter PATH PREFIX COUNT
    python _store_child.py reader PATH SECONDS

``writer`` runs random operations on the store forever (puts, batches,
deletes, drops, reclaims) and reports each on stdout: ``begin OP`` before
it starts and ``done`` once it has returned, flushed at once, so that a
parent that kills it with SIGKILL knows every acknowledged operation and the
one in flight. OP is a JSON list: ``["put", key, version, label]``,
``["del", key]``, ``["drop", label]``, ``["reclaim"]`` or ``["batch", [OP,
...]]``. The value of a put is ``value_of(key, version)``. With ``refs``,
OP may also be ``["ref", key, version, label, src]``: the value put is
``{"k": key, "v": version, "base": store[src]}`` (a view of another stored
value, which the store references where it lies), or ``value_of(key,
version)`` when ``src`` is absent.

``putter`` opens the store, puts COUNT keys PREFIX0.., one commit each,
reopening the store every 10 puts, and closes it.

``reader`` refreshes and reads for SECONDS: every value it sees must be
``value_of(key, version)`` for the version its ``v`` field names (never a
half-written value); it prints the number of reads.
"""

from __future__ import annotations

import json
import random
import sys
import time

import bale


def value_of(key: str, version: int) -> dict:
    return {
        "k": key,
        "v": version,
        "items": list(range(version % 40)),
        "text": "é" * (version % 300),
        "nested": {"a": [version, float(version) / 3], "b": {"c": key * (version % 5)}},
    }


LABELS = [None, "L0", "L1", "L2"]


def random_op(rng: random.Random, version: list, refs: bool = False) -> list:
    r = rng.random()
    key = f"k{rng.randrange(200)}"
    if refs and r < 0.25:
        version[0] += 1
        return ["ref", key, version[0], rng.choice(LABELS), f"k{rng.randrange(200)}"]
    if r < 0.70:
        version[0] += 1
        return ["put", key, version[0], rng.choice(LABELS)]
    if r < 0.85:
        return ["del", key]
    if r < 0.90:
        return ["drop", rng.choice(LABELS)]
    if r < 0.93:
        return ["reclaim"]
    ops = []
    for _ in range(rng.randrange(1, 30)):
        version[0] += 1
        if refs and rng.random() < 0.3:
            ops.append(["ref", f"k{rng.randrange(200)}", version[0], rng.choice(LABELS), f"k{rng.randrange(200)}"])
        else:
            ops.append(["put", f"k{rng.randrange(200)}", version[0], rng.choice(LABELS)])
    return ["batch", ops]


def apply(store: bale.Store, op: list) -> None:
    kind = op[0]
    if kind == "put":
        store.put(op[1], value_of(op[1], op[2]), label=op[3])
    elif kind == "ref":
        base = store.get(op[4])
        if base is None or op[4] == op[1]:
            store.put(op[1], value_of(op[1], op[2]), label=op[3])
        else:
            store.put(op[1], {"k": op[1], "v": op[2], "base": base}, label=op[3])
    elif kind == "del":
        if op[1] in store:
            del store[op[1]]
    elif kind == "drop":
        store.drop(op[1])
    elif kind == "reclaim":
        store.reclaim()
    elif kind == "batch":
        with store.batch():
            for inner in op[1]:
                apply(store, inner)


def writer(path: str, seed: int, segment_size: int, refs: bool = False) -> None:
    rng = random.Random(seed)
    version = [seed * 1_000_000]
    store = bale.Store(path, segment_size=segment_size)
    print("ready", flush=True)
    while True:
        op = random_op(rng, version, refs)
        print("begin " + json.dumps(op), flush=True)
        apply(store, op)
        print("done", flush=True)


def putter(path: str, prefix: str, count: int) -> None:
    store = bale.Store(path)
    for i in range(count):
        if i % 10 == 0:
            store.close()
            store = bale.Store(path)
        store[f"{prefix}{i}"] = value_of(f"{prefix}{i}", i)
    store.close()


def reader(path: str, seconds: float) -> None:
    store = bale.Store(path, readonly=True)
    reads = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        store.refresh()
        for key in store.keys():
            value = store.get(key)
            if value is None:
                print(f"{key!r} is listed by keys() but get() finds nothing", flush=True)
                sys.exit(1)
            native = bale.thaw(value)
            if native != value_of(key, native["v"]):
                print(f"torn value under {key!r}: {native!r}", flush=True)
                sys.exit(1)
            reads += 1
    print(reads, flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "writer":
        writer(
            sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1 << 16, sys.argv[5:] == ["refs"]
        )
    elif mode == "putter":
        putter(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif mode == "reader":
        reader(sys.argv[2], float(sys.argv[3]))
    else:
        sys.exit(f"unknown mode {mode!r}")
