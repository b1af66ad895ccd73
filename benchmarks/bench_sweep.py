"""Shape sweep: every measure of issue 21 on a grid of data shapes, worst cell first.

    python benchmarks/bench_sweep.py [--quick | --smoke] [--no-report] [--max-items N] [--only SUBSTR ...]

The grid (every generator is seeded here, so every run makes the same data):

- ints by magnitude (< 2^10, < 2^40, < 2^62, > 2^64) as flat lists, in
  records of 4 int fields and as leaves of binary trees of 2-tuples;
- floats: lists of 3 floats (points), flat float lists, records of floats;
- strings by length (1-7, 8-64, 1 KiB) x alphabet (ASCII, Latin-1, BMP:
  Cyrillic and CJK, astral: emoji), flat lists of distinct strings;
- repetition: strings of 8-64 ASCII characters all distinct, drawn from a
  vocabulary of 10 and of 2,000, as a flat list and in records; and all
  distinct in records, each also held by a list outside them;
- containers: flat records (one key set), nested records (twitter /
  github-events-like: nested dicts, lists of dicts), heterogeneous dicts
  (varied key sets), the tweet-like records of bench_core, binary trees
  built depth-first and level by level, wide lists of mixed scalars, deep
  lists (chains nested 50 and 500 deep);
- sizes: flat records, the small-int tree and the flat int list at the
  smallest and the largest size of the mode (10k and 1M items in full
  mode; ``--max-items 3000000`` adds a 3M-item cell of each), nested
  records at 10k and a quarter of the largest (250k);
- every file of ``../shared/data/json`` (json.load; ndjson one value a line),
  twitter.json's user objects as wide records (39 scalar fields), and
  twitter's statuses x100 and github's events x300 (10,000 and 9,000 real
  nested records of several key sequences, parsed again so that no object
  repeats: regions of 31 MB and 15 MB, past the caches).

"Items" are the top-level elements: records, strings, list elements, tree
leaves, deep chains' lists. Measures, per cell, each against its baselines
in the same process, the functions taking turns (``common.best_interleaved``)
so that the load of this shared machine drifts alike on both sides:

- compaction: ``bale.compact(x)`` against ``msgspec.msgpack.Encoder().encode``,
  ``pickle.dumps(x, protocol=5)`` and ``orjson.dumps`` (n/a where they refuse
  the data: ints beyond 64 bits, nesting deeper than orjson's 254);
- thaw: ``bale.thaw(region.root)`` against ``pickle.loads``, once with the
  collector disabled around both (``gc.disable()``), once with it enabled
  for both (``thaw`` turns it off inside itself either way; ``pickle.loads``
  then pays the collections its allocations trigger);
- bytes: ``region.nbytes`` / ``len(pickle.dumps(x, 5))``;
- ``region.verify()`` throughput in GB/s;
- scan: every value read once through views against the same walk over the
  native object (records: ``for rec in d: for v in rec.values()``; other
  shapes: an explicit-stack walk of every list, tuple and dict).

Inputs and regions are frozen out of the collector (``gc.freeze()``) while
a cell is timed; results are dropped after the clock is read. A cell whose
timed figure misses its target or comes within 10% of it is measured
``--reruns`` more times (2 in the full sweep), each time in a fresh
interpreter that makes its data anew, and its figure is the median of its
runs (``rerun_close_cells``). Writes the
section "Shape sweep" with, per target of issue 21, the cells sorted worst
first, and ``plots/sweep_heatmap.png`` (rows: cells, columns: measures,
colour: ratio / target).
"""

from __future__ import annotations

import collections
import dataclasses
import gc
import json
import math
import os
import pickle
import platform
import random
import statistics
import string
import subprocess
import sys
import time
from collections.abc import Callable

import msgspec
import orjson

import bale
import common
from bale._bale import region_stats
from bale._datagen import tweets, vocabulary

# pickle.dumps and == recurse once or twice per level of nesting: the 500-deep lists need more than 1,000.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 5_000))

JSON_DIR = os.path.join(os.path.dirname(common.HERE), "..", "shared", "data", "json")

# Items of most cells, and the two ends of the size sweep, per mode.
BASE = {"smoke": 2_000, "quick": 30_000, "full": 200_000}
SWEEP = {"smoke": (1_000, 5_000), "quick": (10_000, 200_000), "full": (10_000, 1_000_000)}
# Seconds of timing aimed at per measure: fast cells get more turns (at least the mode's minimum).
BUDGET = {"smoke": 0.0, "quick": 0.15, "full": 0.3}
MIN_TURNS = {"smoke": 1, "quick": 3, "full": 5}
MAX_TURNS = {"smoke": 1, "quick": 15, "full": 20}

# --- generators ----------------------------------------------------------------------

MAGNITUDES = {  # name -> (low, high): values drawn in [low, high)
    "int<2^10": (0, 1 << 10),
    "int<2^40": (0, 1 << 40),
    "int<2^62": (0, 1 << 62),
    "int>2^64": ((1 << 64) + 1, 1 << 100),
}
ALPHABETS = {
    "ASCII": string.ascii_letters + string.digits,
    "Latin-1": "".join(chr(c) for c in range(0xC0, 0x100) if c not in (0xD7, 0xF7)),
    "BMP": "".join(chr(c) for c in range(0x430, 0x450)) + "".join(chr(c) for c in range(0x4E00, 0x4E40)),
    "astral": "".join(chr(c) for c in range(0x1F600, 0x1F650)),
}
LENGTHS = {"len 1-7": (1, 7), "len 8-64": (8, 64), "len 1 KiB": (1024, 1024)}


def _leaf(i: int, low: int, high: int) -> int:
    """A deterministic pseudo-random int of [low, high) for leaf i (the same in both tree builders)."""
    x = (i * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & ((1 << 128) - 1)
    x ^= x >> 61
    return low + x % (high - low)


def ints(n: int, mag: str, seed: int = 1) -> list[int]:
    low, high = MAGNITUDES[mag]
    rng = random.Random(seed)
    return [rng.randrange(low, high) for _ in range(n)]


def int_records(n: int, mag: str) -> list[dict]:
    low, high = MAGNITUDES[mag]
    rng = random.Random(2)
    r = rng.randrange
    return [{"id": r(low, high), "a": r(low, high), "b": r(low, high), "c": r(low, high)} for _ in range(n)]


def tree_level(n: int, low: int = 0, high: int = 1 << 10):
    """A binary tree of 2-tuples over n leaves, built level by level (all leaves first, then each level)."""
    level: list = [_leaf(i, low, high) for i in range(n)]
    while len(level) > 1:
        nxt = [(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def tree_dfs(n: int, low: int = 0, high: int = 1 << 10):
    """The same tree as ``tree_level(n, ...)``, its nodes made depth-first (left subtree, right, then the node)."""
    # Replay the level-by-level pairing on leaf indices, then build that shape depth-first.
    level: list = [(i, i + 1) for i in range(n)]  # leaf ranges
    while len(level) > 1:
        nxt = [(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    shape = level[0]  # the tree of ranges, its leaves (i, i + 1)

    def build(node):
        if isinstance(node[0], int):
            return _leaf(node[0], low, high)
        return (build(node[0]), build(node[1]))

    tree = build(shape)
    del shape, level
    gc.collect()
    return tree


def floats(n: int) -> list[float]:
    rng = random.Random(3)
    return [rng.uniform(-1e6, 1e6) for _ in range(n)]


def points(n: int) -> list[list[float]]:
    rng = random.Random(4)
    u = rng.uniform
    return [[u(-180, 180), u(-90, 90), u(0, 9000)] for _ in range(n)]


def float_records(n: int) -> list[dict]:
    rng = random.Random(5)
    u = rng.uniform
    return [{"x": u(-1, 1), "y": u(-1, 1), "z": u(-1, 1), "w": u(0, 1e9)} for _ in range(n)]


def strings(n: int, length: str, alphabet: str, seed: int = 6) -> list[str]:
    lo, hi = LENGTHS[length]
    alpha = ALPHABETS[alphabet]
    rng = random.Random(seed)
    ch, r = rng.choices, rng.randint
    return ["".join(ch(alpha, k=r(lo, hi))) for _ in range(n)]


def vocab_strings(n: int, vocab: int | None, seed: int = 7) -> list[str]:
    """n ASCII strings of 8-64 characters: all distinct (vocab None), else drawn from ``vocab`` of them."""
    if vocab is None:
        return [f"{i:08d}" + s for i, s in enumerate(strings(n, "len 8-64", "ASCII", seed))]  # distinct for sure
    words = strings(vocab, "len 8-64", "ASCII", seed)
    rng = random.Random(seed + 1)
    return [words[rng.randrange(vocab)] for _ in range(n)]


def vocab_records(n: int, vocab: int | None) -> list[dict]:
    a, b = vocab_strings(n, vocab, 8), vocab_strings(n, vocab, 9)
    return [{"name": a[i], "tag": b[i], "n": i} for i in range(n)]


# Second references to the values of the cell being measured (see `held_elsewhere`).
_HELD_ELSEWHERE: list = []


def held_elsewhere(records: list[dict]) -> list[dict]:
    """``records``, each of their values also held by a list outside them, as an index or a
    second view of the same data holds them: every string then has two references, and the
    compactor, which writes a string held more than once only once, looks each one up."""
    _HELD_ELSEWHERE.append([v for r in records for v in r.values()])
    return records


def flat_records(n: int) -> list[dict]:
    rng = random.Random(10)
    vocab = vocabulary()
    r, u, bits = rng.randrange, rng.random, rng.getrandbits
    alnum = ALPHABETS["ASCII"]
    return [{"id": bits(40), "name": "".join(rng.choices(alnum, k=r(8, 21))), "score": u() * 100,
             "active": u() < 0.5, "tag": vocab[r(len(vocab))], "count": r(1000)} for _ in range(n)]


def nested_records(n: int) -> list[dict]:
    """Twitter / github-events-like: nested dicts, lists of dicts, nulls, bools, ints past 2^40."""
    rng = random.Random(11)
    vocab = vocabulary()
    langs = ["en", "ja", "es", "pt", "ru", "fr", "de", "ko", "ar", "it"]
    r, u, bits = rng.randrange, rng.random, rng.getrandbits
    alnum = ALPHABETS["ASCII"]
    out = []
    for i in range(n):
        words = [vocab[r(len(vocab))] for _ in range(r(3, 20))]
        text = " ".join(words)
        tags = [{"text": vocab[r(len(vocab))], "indices": [a := r(140), a + r(3, 20)]} for _ in range(r(4))]
        urls = [{"url": "https://t.co/" + "".join(rng.choices(alnum, k=10)),
                 "expanded_url": "https://example.com/" + "/".join(rng.choices(words, k=2)),
                 "indices": [a := r(140), a + 23]} for _ in range(r(3))]
        out.append({
            "id": (1 << 59) + bits(58),
            "created_at": f"2012-09-{1 + r(28):02d}T{r(24):02d}:{r(60):02d}:{r(60):02d}Z",
            "text": text,
            "user": {"id": bits(33), "login": words[0] + str(r(1000)), "followers": r(1_000_000),
                     "verified": u() < 0.1, "lang": langs[r(len(langs))], "url": None if u() < 0.7 else
                     "https://example.com/" + words[-1]},
            "payload": {"action": ("opened", "closed", "created")[r(3)], "size": r(10),
                        "commits": [{"sha": "%040x" % bits(160), "distinct": True, "message": words[r(len(words))]}
                                    for _ in range(r(3))]},
            "entities": {"hashtags": tags, "urls": urls},
            "retweet_count": r(100), "in_reply_to": None if u() < 0.8 else bits(40), "public": u() < 0.9,
        })
    return out


def hetero_dicts(n: int) -> list[dict]:
    """Flat dicts of 3-8 keys drawn from 30, in random order: many key sets."""
    rng = random.Random(12)
    keys = [f"field_{k}" for k in range(30)]
    r, u = rng.randrange, rng.random
    values = (lambda: r(1 << 30), lambda: u(), lambda: "v" + str(r(10_000)), lambda: None, lambda: u() < 0.5)
    return [{k: values[r(5)]() for k in rng.sample(keys, r(3, 9))} for _ in range(n)]


def wide_list(n: int) -> list:
    """One list of n mixed scalars (ints, floats, short and long strings, None, bools)."""
    rng = random.Random(13)
    r, u = rng.randrange, rng.random
    makers = (lambda: r(1 << 20), lambda: u(), lambda: "s" + str(r(100_000)), lambda: None, lambda: True,
              lambda: "longer string number " + str(r(1 << 30)))
    return [makers[r(6)]() for _ in range(n)]


def deep_lists(n: int, depth: int) -> list:
    """n // depth chains, each ``depth`` lists nested in one another around an int."""
    out = []
    for i in range(max(1, n // depth)):
        v: object = [i]
        for _ in range(depth - 1):
            v = [v]
        out.append(v)
    return out


def read_corpus(path: str):
    with open(path, "rb") as f:
        if path.endswith(".ndjson"):
            return [json.loads(line) for line in f if line.strip()]
        return json.load(f)


def corpus_copies(path: str, copies: int) -> list:
    """The records of a corpus (twitter's statuses, github's events), ``copies`` times over, parsed again
    so that no object repeats: real nested records of several key sequences at the size of the grid,
    in regions larger than the caches."""
    data = read_corpus(path)
    rows = data["statuses"] if isinstance(data, dict) else data
    return json.loads(json.dumps(rows * copies))


def corpus_users(path: str, copies: int = 50) -> list[dict]:
    """The user objects of twitter.json's statuses, their scalar fields, as records: those of
    its most common key sequence (86 of 100; the others lack a key, so a list holding both
    is written row by row), ``copies`` times over, parsed again so that no object repeats.
    Wide records (39 fields, 30 of them strings) of data we did not design."""
    users = [{k: v for k, v in s["user"].items() if not isinstance(v, (dict, list))}
             for s in read_corpus(path)["statuses"]]
    common = collections.Counter(tuple(u) for u in users).most_common(1)[0][0]
    return json.loads(json.dumps([u for u in users if tuple(u) == common] * copies))


# --- the grid --------------------------------------------------------------------------


@dataclasses.dataclass
class Shape:
    name: str
    group: str
    kind: str  # "flat records", "nested records", "tree" or "other": which targets apply
    items: int
    make: Callable[[], object]
    walk: str = "deep"  # "records" (two-level loop) or "deep" (every container)


def grid(mode: str, max_items: int | None) -> list[Shape]:
    n = BASE[mode]
    small, large = SWEEP[mode]
    s: list[Shape] = []
    for mag in MAGNITUDES:
        low, high = MAGNITUDES[mag]
        s.append(Shape(f"{mag}, flat list", "ints", "other", n, lambda mag=mag: ints(n, mag)))
        s.append(Shape(f"{mag}, records of 4 ints", "ints", "flat records", n, lambda mag=mag: int_records(n, mag),
                       "records"))
        s.append(Shape(f"{mag}, tree leaves (level)", "ints", "tree", n,
                       lambda low=low, high=high: tree_level(n, low, high)))
    s += [
        Shape("floats, flat list", "floats", "other", n, lambda: floats(n)),
        Shape("floats, lists of 3", "floats", "other", n, lambda: points(n)),
        Shape("floats, records of 4", "floats", "flat records", n, lambda: float_records(n), "records"),
    ]
    for length in LENGTHS:
        m = n if length != "len 1 KiB" else max(100, n // 20)
        for alpha in ALPHABETS:
            s.append(Shape(f"str {length}, {alpha}", "strings", "other", m,
                           lambda length=length, alpha=alpha, m=m: strings(m, length, alpha)))
    for label, vocab in (("all distinct", None), ("vocabulary 10", 10), ("vocabulary 2,000", 2000)):
        s.append(Shape(f"str 8-64, {label}, flat list", "repetition", "other", n,
                       lambda vocab=vocab: vocab_strings(n, vocab)))
        s.append(Shape(f"str 8-64, {label}, records", "repetition", "flat records", n,
                       lambda vocab=vocab: vocab_records(n, vocab), "records"))
    s.append(Shape("str 8-64, all distinct, records, also held elsewhere", "repetition", "flat records", n,
                   lambda: held_elsewhere(vocab_records(n, None)), "records"))
    nn = max(1_000, n // 4)  # nested records hold ~30 values each
    s += [
        Shape("flat records (6 fields)", "containers", "flat records", n, lambda: flat_records(n), "records"),
        Shape("tweet-like records (bench_core)", "containers", "flat records", n, lambda: tweets(n), "deep"),
        Shape("nested records (twitter/github-like)", "containers", "nested records", nn, lambda: nested_records(nn)),
        Shape("heterogeneous dicts (3-8 of 30 keys)", "containers", "flat records", n, lambda: hetero_dicts(n),
              "records"),
        Shape("tree, built level by level", "containers", "tree", n, lambda: tree_level(n)),
        Shape("tree, built depth-first", "containers", "tree", n, lambda: tree_dfs(n)),
        Shape("wide list, mixed scalars", "containers", "other", n, lambda: wide_list(n)),
        Shape("deep lists, nesting 50", "containers", "tree", n, lambda: deep_lists(n, 50)),
        Shape("deep lists, nesting 500", "containers", "tree", n, lambda: deep_lists(n, 500)),
    ]
    sizes = [small, large] + ([max_items] if max_items and max_items > large else [])
    for k in sizes:
        s += [
            Shape(f"size {k:,}: flat records", "sizes", "flat records", k, lambda k=k: flat_records(k), "records"),
        ]
        if k <= small:
            s.append(Shape(f"size {k:,}: nested records", "sizes", "nested records", k, lambda k=k: nested_records(k)))
        elif k == large:  # a nested record holds ~30 values: a quarter of the items, as in the grid above
            s.append(Shape(f"size {k // 4:,}: nested records", "sizes", "nested records", k // 4,
                           lambda k=k: nested_records(k // 4)))
        s += [
            Shape(f"size {k:,}: int<2^10 tree (level)", "sizes", "tree", k, lambda k=k: tree_level(k)),
            Shape(f"size {k:,}: int<2^40 flat list", "sizes", "other", k, lambda k=k: ints(k, "int<2^40")),
        ]
    if os.path.isdir(JSON_DIR):
        kinds = {"twitter.json": "nested records", "github_events.json": "nested records",
                 "citm_catalog.json": "nested records"}
        for name in sorted(os.listdir(JSON_DIR)):
            if name.endswith((".json", ".ndjson")):
                path = os.path.join(JSON_DIR, name)
                s.append(Shape(f"corpus {name}", "corpora", kinds.get(name, "other"), 0,
                               lambda path=path: read_corpus(path)))
                if name == "twitter.json":
                    s.append(Shape("corpus twitter.json: its users as records (39 fields) x50", "corpora",
                                   "flat records", 0, lambda path=path: corpus_users(path), "records"))
                copies = {"twitter.json": 100, "github_events.json": 300}.get(name)
                if copies:
                    s.append(Shape(f"corpus {name} x{copies}", "corpora", "nested records", 0,
                                   lambda path=path, copies=copies: corpus_copies(path, copies)))
    return s


# --- walking ---------------------------------------------------------------------------

SEQ = frozenset({list, tuple, bale.ListView, bale.TupleView, bale.NumberListView})
MAP = frozenset({dict, bale.DictView})


def walk_deep(x) -> int:
    """Reads every value of every list, tuple and dict (views alike); returns the number of scalars."""
    n = 0
    stack = [x]
    pop, extend = stack.pop, stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t in SEQ:
            extend(v)
        elif t in MAP:
            extend(v.values())
        else:
            n += 1
    return n


def skeleton(x):
    """``x``'s lists, tuples and dicts, made anew, with every other value replaced by None.

    A walk over it runs the same Python loop as over ``x`` (the same containers, keys and number of
    values) with no scattered object to read: one ``None``, and containers made one after the other.
    """
    t = type(x)
    if t is list:
        return [skeleton(v) for v in x]
    if t is tuple:
        return tuple(skeleton(v) for v in x)
    if t is dict:
        return {k: skeleton(v) for k, v in x.items()}
    return None


def walk_records(d) -> int:
    """``for rec in d: for v in rec.values()``: every field of every record read once."""
    n = 0
    for rec in d:
        for _v in rec.values():
            n += 1
    return n


WALKS = {"deep": walk_deep, "records": walk_records}

# --- measuring -------------------------------------------------------------------------

MEASURES = [  # key, heat-map label, target value, direction ("le": ratio <= target; "ge": figure >= target)
    ("compact_msgspec", "compact /\nmsgspec", 1.0),
    ("compact_pickle", "compact /\npickle.dumps", 0.25),
    ("thaw_gc_off", "thaw / loads\nGC off", 1.0),
    ("thaw_gc_on", "thaw / loads\nGC on", 1.0),
    ("bytes", "bytes /\npickle", None),  # 1.0 for records, 1.5 for trees
    ("verify", "verify\n2 GB/s / rate", 2.0),
    ("scan", "scan /\nnative", 1.2),
]


def turns(mode: str, seconds: float) -> int:
    """Turns for a measure whose one call takes ``seconds``: enough to fill the mode's budget, bounded.

    Calls of over 0.3 s (the largest cells) get 3 turns: their best is steady, and the default run must
    stay within ~15 minutes.
    """
    if seconds > 0.3:
        return min(3, MIN_TURNS[mode])
    want = int(BUDGET[mode] / max(seconds, 1e-6))
    return max(MIN_TURNS[mode], min(MAX_TURNS[mode], want))


def try_encode(f: Callable[[], bytes]) -> bytes | None:
    try:
        return f()
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError, orjson.JSONEncodeError):
        return None


def _rows(d) -> None:
    for _rec in d:
        pass


def _rows_values(d) -> None:
    for rec in d:
        rec.values()


def scan_phases(root, x, repeat: int) -> dict[str, float]:
    """The records scan in steps, views and native taking turns: the rows alone, with ``values()``, all."""
    fs = {}
    for step, f in (("rows", _rows), ("rows + values()", _rows_values), ("every value", walk_records)):
        fs[f"bale {step}"] = lambda f=f: f(root)
        fs[f"native {step}"] = lambda f=f: f(x)
    return common.best_interleaved(fs, repeat, keep_results=True)


def fresh_strings(x: list[str]) -> list[str]:
    """Equal strings in new objects: no UTF-8 form cached in them yet."""
    return [(v + "\0")[:-1] for v in x]


def fresh_turns(fns: dict[str, Callable[[list[str]], object]], x: list[str], repeat: int) -> dict[str, float]:
    """As ``common.best_interleaved``, but each call encodes its own fresh copy of the strings ``x``.

    ``pickle.dumps``, msgspec and orjson write str as UTF-8, and CPython
    keeps the UTF-8 form of a non-ASCII str inside it once asked for it
    (``PyUnicode_AsUTF8AndSize``): after the first turn they copy cached
    bytes, a cost paid once per string object and not counted by the warm
    turns. Here every call gets new objects (made outside the clock).
    """
    times = {name: float("inf") for name in fns}
    names = list(fns)
    for turn in range(repeat):
        if turn:
            random.Random(turn).shuffle(names)
        for name in names:
            y = fresh_strings(x)
            gc.collect()
            t0 = time.perf_counter()
            result = fns[name](y)
            elapsed = time.perf_counter() - t0
            del result, y
            times[name] = min(times[name], elapsed)
    return times


def measure(shape: Shape, x, mode: str) -> dict:
    """Every measure of one cell. Raises SystemExit when bale and the native object disagree."""
    region = bale.compact(x)
    root = region.root
    if bale.thaw(root) != x:
        raise SystemExit(f"{shape.name}: bale.thaw(compact(x)) != x")
    walk = WALKS[shape.walk]
    if walk(root) != walk(x):
        raise SystemExit(f"{shape.name}: the walk over views and over the native object disagree")
    encoder = msgspec.msgpack.Encoder()
    p = pickle.dumps(x, protocol=5)
    mp = try_encode(lambda: encoder.encode(x))
    oj = try_encode(lambda: orjson.dumps(x))
    t0 = time.perf_counter()
    pickle.dumps(x, protocol=5)
    rough = time.perf_counter() - t0
    cell: dict = {"name": shape.name, "group": shape.group, "kind": shape.kind,
                  "items": shape.items or (len(x) if isinstance(x, (list, dict)) else 1),
                  "nbytes": region.nbytes, "pickle_bytes": len(p),
                  "msgspec_bytes": None if mp is None else len(mp), "orjson_bytes": None if oj is None else len(oj)}
    gc.collect()
    gc.freeze()  # the inputs, the region and the encodings: no collection walks them
    try:
        enc = {"bale": lambda: bale.compact(x), "pickle": lambda: pickle.dumps(x, protocol=5)}
        if mp is not None:
            enc["msgspec"] = lambda: encoder.encode(x)
        if oj is not None:
            enc["orjson"] = lambda: orjson.dumps(x)
        # The region's bytes copied once, in turn with the encoders: see `region_copy`.
        enc["copy"] = region_copy(region)
        k = turns(mode, rough)
        t = common.best_interleaved(enc, k, keep_results=True)
        cell["turns"] = k
        cell["compact"] = t
        dec = {"bale": lambda: bale.thaw(root), "pickle": lambda: pickle.loads(p)}
        gc.disable()
        try:
            cell["thaw_off"] = common.best_interleaved(dec, k, keep_results=True)
        finally:
            gc.enable()
        cell["thaw_on"] = common.best_interleaved(dec, k, keep_results=True)
        t_verify = common.best(region.verify, 5)
        if t_verify < 0.02:
            t_verify = common.per_call(region.verify, 5, 0.01 if mode == "smoke" else 0.05)
        cell["verify_s"] = t_verify
        scans = {"bale": lambda: walk(root), "native": lambda: walk(x)}
        if target_of("scan", shape.kind) is not None:
            # Every value read and made, without the Python loop or view objects, and the Python loop
            # without the values: see `ratios`' scan_bound.
            from bale._bale import _read_every_value  # (imported here: builds_compared.py runs older builds)

            # Made here, not held through the cell's other measures.
            loop_only = skeleton(x)
            if walk(loop_only) != walk(x):
                raise SystemExit(f"{shape.name}: the walk over the skeleton and over the native object disagree")
            scans["reads"] = lambda: _read_every_value(root, deep=shape.walk != "records")
            scans["loop"] = lambda: walk(loop_only)
        cell["scan"] = common.best_interleaved(scans, k, keep_results=True)
        if shape.walk == "records":
            cell["scan_phases"] = scan_phases(root, x, min(k, 3))
        if shape.group == "strings":
            fns = {"bale": bale.compact, "pickle": lambda y: pickle.dumps(y, protocol=5)}
            if mp is not None:
                fns["msgspec"] = encoder.encode
            if oj is not None:
                fns["orjson"] = orjson.dumps
            cell["compact_fresh"] = fresh_turns(fns, x, k)
    finally:
        gc.unfreeze()
    st = region_stats(region)
    cell["anatomy"] = sorted(((kind, c, b) for kind, (c, b) in st["kinds"].items()), key=lambda e: -e[2])
    cell["slots"] = st["slots"]
    cell["distinct_shapes"] = st["distinct_shapes"]
    return cell


def region_copy(region) -> Callable[[], None]:
    """A copy of the region's bytes from one buffer into another, both made and written beforehand.

    Whatever writes the region writes these bytes, read from Python objects scattered in the heap;
    here they are read from one contiguous buffer and written into memory already mapped (as the
    buffer `spare_buffer.rs` hands every compaction after the first): no compaction goes faster.
    """
    src = bytes(region)
    dst = memoryview(bytearray(len(src)))

    def copy() -> None:
        dst[:] = src

    return copy


def ratios(cell: dict) -> dict[str, float | None]:
    """Each measure's figure: time or bytes ratios, verify in GB/s."""
    c, on, off, sc = cell["compact"], cell["thaw_on"], cell["thaw_off"], cell["scan"]
    return {
        "compact_msgspec": c["bale"] / c["msgspec"] if "msgspec" in c else None,
        "compact_msgspec_bound": c["copy"] / c["msgspec"] if "msgspec" in c else None,
        "compact_pickle": c["bale"] / c["pickle"],
        "compact_pickle_bound": c["copy"] / c["pickle"],
        "compact_orjson": c["bale"] / c["orjson"] if "orjson" in c else None,
        "thaw_gc_off": off["bale"] / off["pickle"],
        "thaw_gc_on": on["bale"] / on["pickle"],
        "bytes": cell["nbytes"] / cell["pickle_bytes"],
        "verify": cell["nbytes"] / cell["verify_s"] / 1e9,
        "scan": sc["bale"] / sc["native"],
        # The Python loop alone (over `skeleton`) plus every value made (`_read_every_value`): a scan
        # through views runs that loop and makes those values. Not the native scan plus the values: the
        # native scan also reads its scattered objects, which the views do not (the bound was above
        # figures by up to a third).
        "scan_bound": (sc["loop"] + sc["reads"]) / sc["native"] if "loop" in sc else None,
    }


def target_of(key: str, kind: str) -> float | None:
    """The issue's target for this measure on this kind of data (None: no target applies)."""
    if key == "bytes":
        return {"flat records": 1.0, "nested records": 1.0, "tree": 1.5}.get(kind)
    if key == "scan":
        return 1.2 if kind in ("flat records", "nested records") else None
    return dict((k, t) for k, _, t in MEASURES).get(key)


def beyond_reach(key: str, cell: dict) -> bool:
    """Whether the cell's measured bound for this measure (`BOUNDS`) is itself past the target, and held
    as a floor there (`below_its_bound` says when it did not)."""
    bound, target = cell["ratios"].get(BOUNDS.get(key, "")), target_of(key, cell["kind"])
    return (bound is not None and target is not None and badness(key, bound, target) > 1
            and not below_its_bound(key, cell))


# How far under its bound a figure may lie and the bound still count as a floor: the noise of two timings.
FLOOR_SLACK = 0.95


def below_its_bound(key: str, cell: dict) -> bool:
    """Whether the cell's figure lies under its measured bound by more than the noise (`FLOOR_SLACK`):
    there the bound is no floor, and the report does not call the target out of reach."""
    bound, value = cell["ratios"].get(BOUNDS.get(key, "")), cell["ratios"].get(key)
    return bound is not None and value is not None and value < bound * FLOOR_SLACK


def badness(key: str, value: float, target: float) -> float:
    """value / target, > 1 when the target is missed (verify: target / rate)."""
    return target / value if key == "verify" else value / target


# --- report ----------------------------------------------------------------------------

TARGETS = [  # key, what, goal text
    ("compact_msgspec", "compaction vs msgspec.msgpack encode", "<= 1.0x msgspec"),
    ("compact_pickle", "compaction vs pickle.dumps(protocol=5)", "<= 0.25x pickle.dumps"),
    ("thaw_gc_off", "thaw vs pickle.loads, GC disabled for both", "<= 1.0x pickle.loads"),
    ("thaw_gc_on", "thaw vs pickle.loads, GC enabled for both", "<= 1.0x pickle.loads"),
    ("bytes", "bytes vs pickle (records <= 1.0x, trees <= 1.5x)", "<= 1.0x / 1.5x pickle"),
    ("verify", "Region.verify() throughput", ">= 2 GB/s"),
    ("scan", "full scan through views vs native (flat and nested records)", "<= 1.2x native"),
]


OPEN_ROWS = 12  # rows of each target's table shown open; the rest (still sorted) in a <details> block


def fmt_value(key: str, v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v:.2f} GB/s" if key == "verify" else common.fmt_ratio(v)


def anatomy(cell: dict, top: int = 3) -> str:
    """What the region holds, by bytes: the three largest kinds of object."""
    total = cell["nbytes"]
    parts = [f"{kind} {count:,} ({100 * b / total:.0f}%)" for kind, count, b in cell["anatomy"][:top] if b]
    inline = [f"{kind} {count:,}" for kind, count, b in cell["anatomy"] if not b and count]
    return "; ".join(parts) + (f"; inline: {', '.join(inline)}" if inline else "")


def heatmap(plots_dir: str, cells: list[dict]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    rows = [c["name"] + (f" ({c['items']:,})" if c["group"] != "sizes" else "") for c in cells]
    grid_values = []
    texts = []
    for c in cells:
        row, trow = [], []
        for key, _, _ in MEASURES:
            v = c["ratios"][key]
            target = target_of(key, c["kind"])
            ref = target if target is not None else (1.0 if key in ("bytes", "scan") else None)
            if v is None or ref is None:
                row.append(math.nan)
                trow.append("n/a")
                continue
            row.append(badness(key, v, ref))
            text = f"{v:.2f}" if key != "verify" else f"{v:.1f}"
            trow.append(text if target is not None else f"({text})")
        grid_values.append(row)
        texts.append(trow)
    fig, ax = plt.subplots(figsize=(11, 1.5 + 0.24 * len(cells)), dpi=100)
    cmap = plt.get_cmap("RdYlGn_r").copy()
    cmap.set_bad("#dddddd")
    import numpy as np

    arr = np.ma.masked_invalid(np.array(grid_values, dtype=float))
    im = ax.imshow(arr, cmap=cmap, norm=LogNorm(vmin=0.25, vmax=4), aspect="auto")
    for i, trow in enumerate(texts):
        for j, text in enumerate(trow):
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5)
    ax.set_xticks(range(len(MEASURES)))
    ax.set_xticklabels([label for _, label, _ in MEASURES], fontsize=7.5)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=7)
    cb = fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02)
    cb.set_ticks([0.25, 0.5, 1, 2, 4])
    cb.set_ticklabels(["<= 0.25", "0.5", "1", "2", ">= 4"])
    cb.minorticks_off()
    cb.set_label("ratio / target (> 1: target missed; verify: 2 GB/s / rate)", fontsize=8)
    ax.set_title("Shape sweep: each cell's figure, coloured by figure / target; (x): no target, against 1.0",
                 fontsize=9)
    fig.tight_layout()
    filename = "sweep_heatmap.png"
    fig.savefig(os.path.join(plots_dir, filename))
    plt.close(fig)
    return filename


# Measures timed, and so moved by the load of the machine from run to run (bytes are not).
TIMED = ("compact_msgspec", "compact_pickle", "thaw_gc_off", "thaw_gc_on", "verify", "scan")
# The measured bound of each timed measure that has one: what no bale can go below (see `region_copy`
# and `_read_every_value`), in the same units as the figure.
BOUNDS = {"compact_msgspec": "compact_msgspec_bound", "compact_pickle": "compact_pickle_bound", "scan": "scan_bound"}
# Cells whose timed figure is within this factor of its target (or beyond it) are measured again.
CLOSE = 0.9


def close_to_a_target(cell: dict) -> bool:
    """Whether one of the cell's timed figures misses its target or comes within `CLOSE` of it; or the
    cell has a scan target at all. A scan's native side reads objects wherever the cells before left
    the allocator's free memory: 10,000 flat records scanned in 0.85x native in the sweep's process and
    1.74-2.02x in fresh ones, a met verdict that did not hold."""
    if target_of("scan", cell["kind"]) is not None:
        return True
    for key in TIMED:
        v, target = cell["ratios"][key], target_of(key, cell["kind"])
        if v is not None and target is not None and badness(key, v, target) > CLOSE:
            return True
    return False


# The argument that makes this script measure one cell, named exactly, and print its ratios as JSON.
ONE_CELL = "--one-cell"


def measure_one_cell(name: str, mode: str, max_items: int | None) -> None:
    """The child of `measure_in_a_fresh_process`: the cell named `name`, measured, its ratios on the last line."""
    shape = next((s for s in grid(mode, max_items) if s.name == name), None)
    if shape is None:
        sys.exit(f"bench_sweep: no cell named {name!r} in the {mode} grid")
    x = shape.make()
    cell = measure(shape, x, mode)
    print(json.dumps(ratios(cell)), flush=True)


def measure_in_a_fresh_process(name: str, mode: str, max_items: int | None) -> dict:
    """The ratios of the cell named `name`, measured in a new interpreter that makes its data afresh."""
    args = [sys.executable, os.path.abspath(__file__), ONE_CELL, name, mode, str(max_items or 0)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"measuring {name!r} again failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def rerun_close_cells(cells: list[dict], mode: str, reruns: int, max_items: int | None = None) -> None:
    """Measures again, ``reruns`` times each, every cell that misses a timed target or comes close to
    one, and makes each timed figure the median of its runs (``cell["runs"]`` keeps them all). One
    sweep of 2 shared cores moved such cells by up to a quarter from run to run (deep lists 500:
    1.18x, 1.22x and 1.49x msgspec for nearly the same code), enough to flip a verdict either way;
    met and missed cells near the line are both measured again, so the median does not favour either.
    Each run again is a fresh interpreter that makes the cell's data anew: in the sweep's own process
    a memory-bound cell depended on where the cells before it had left the allocator (lists nested 50
    deep: 0.93x, 1.43x and 1.46x msgspec within one sweep, with the same data made each time)."""
    if reruns <= 0:
        return
    again = [c for c in cells if close_to_a_target(c)]
    if again:
        print(f"measuring again ({reruns} more run{'s' if reruns != 1 else ''} each, each in a fresh process): "
              + ", ".join(c["name"] for c in again), flush=True)
    for cell in again:
        runs = [cell["ratios"]]
        for _ in range(reruns):
            runs.append(measure_in_a_fresh_process(cell["name"], mode, max_items))
        cell["runs"] = runs
        merged = dict(cell["ratios"])
        # The bounds are timed too, in the same runs as their figures.
        for key in (*TIMED, *BOUNDS.values()):
            values = [r.get(key) for r in runs]
            if all(v is not None for v in values):
                merged[key] = statistics.median(values)
        cell["ratios"] = merged
        print(f"{cell['name']:48s} medians of {len(runs)} runs: " + " ".join(
            f"{k}={fmt_value(k, merged[k])}" for k in TIMED if merged[k] is not None), flush=True)


def bound_cell(key: str, cell: dict) -> str:
    """The bound column's entry: the bound, and whether the figure lies under it (no floor there)."""
    bound = cell["ratios"].get(BOUNDS[key])
    if not bound:
        return "-"
    return fmt_value(key, bound) + (" (figure under it)" if below_its_bound(key, cell) else "")


def compaction_bound_paragraph(cells: list[dict]) -> list[str]:
    """The report's words on the bound of a compaction, with the cells it puts out of reach."""
    lines = ["", "**The bound of a compaction.** Whatever writes a region writes its bytes. The *bound* "
             "column of the two compaction tables is the time of one copy of the region's bytes "
             "(`region_copy`: from one contiguous buffer into another, both made and written before the "
             "clock starts, as a compaction after the first writes into a buffer already mapped), taken in "
             "turn with the encoders and divided by the baseline's time. A compaction reads the same bytes "
             "from objects scattered in the heap instead, so none goes below it; where it is above the "
             "target, no writer of this format meets that target on that data, and only fewer bytes "
             "(the bytes table) would."]
    for key, what in (("compact_msgspec", "msgspec"), ("compact_pickle", "pickle.dumps")):
        missed = [c for c in cells if c["ratios"].get(key) is not None and target_of(key, c["kind"]) is not None
                  and badness(key, c["ratios"][key], target_of(key, c["kind"])) > 1]
        out = [c for c in missed if beyond_reach(key, c)]
        if not missed:
            continue
        named = "; ".join(f"{c['name']} (figure {fmt_value(key, c['ratios'][key])}, bound "
                          f"{fmt_value(key, c['ratios'][BOUNDS[key]])})" for c in out)
        cells_that = f"{len(out)} of the {len(missed)} cell{'s' if len(missed) != 1 else ''} that miss the target"
        lines += ["", f"Against {what}: {cells_that} ha{'s' if len(out) == 1 else 've'} a bound above it"
                  + (f": {named}." if out else ".")
                  + (" The other misses are the compactor's own work, above the copy." if len(out) < len(missed)
                     else "")]
    return lines


def run_spread(cell: dict, key: str) -> str:
    """The range of a timed figure over the cell's runs, when it was measured more than once."""
    runs = cell.get("runs")
    if not runs or key not in TIMED or any(r[key] is None for r in runs):
        return ""
    values = sorted(r[key] for r in runs)
    return f" ({fmt_value(key, values[0])}-{fmt_value(key, values[-1])})"


def run(mode: str, plots_dir: str, args) -> common.Section:
    shapes = grid(mode, args.max_items)
    if args.reruns is None:
        args.reruns = 2 if mode == "full" else 0
    if args.only:
        shapes = [s for s in shapes if any(o.lower() in s.name.lower() for o in args.only)]
    cells = []
    started = time.perf_counter()
    for shape in shapes:
        t0 = time.perf_counter()
        x = shape.make()
        t_make = time.perf_counter() - t0
        cell = measure(shape, x, mode)
        del x
        _HELD_ELSEWHERE.clear()
        gc.collect()
        cell["ratios"] = ratios(cell)
        cells.append(cell)
        r = cell["ratios"]
        print(f"{shape.name:48s} items {cell['items']:>9,} " + " ".join(
            f"{k}={fmt_value(k, r[k])}" for k in r) + f"  (made in {t_make:.1f}s, cell {time.perf_counter() - t0:.1f}s)",
            flush=True)
    rerun_close_cells(cells, mode, args.reruns, args.max_items)
    elapsed = time.perf_counter() - started
    plot = heatmap(plots_dir, cells)
    source = "bench_sweep"
    flag = "" if mode == "full" else " --" + mode
    if args.max_items:
        flag += f" --max-items {args.max_items}"
    lines = [
        f"`python benchmarks/bench_sweep.py{flag}` ({elapsed / 60:.1f} min): {len(cells)} cells. Conditions: "
        f"Python {platform.python_version()}, 2 cores shared with other engineers' builds and benchmarks "
        "(figures move by several percent between runs; sub-millisecond cells more). In every cell bale and "
        "its baselines take turns (`common.best_interleaved`, shuffled order, `gc.collect()` before each "
        "call, results dropped after the clock is read) so that load drift hits both sides alike; the figure "
        "is the best turn of each. Turns per cell: as many as fill "
        f"{BUDGET[mode]} s per function, {MIN_TURNS[mode]} to {MAX_TURNS[mode]}. Inputs, regions and "
        "encodings are frozen out of the collector (`gc.freeze()`) while timed. Thaw is timed twice: "
        "**GC off** = `gc.disable()` around both `bale.thaw` and `pickle.loads`; **GC on** = collector enabled "
        "for both, so `pickle.loads` pays the collections its allocations trigger, while `bale.thaw` turns "
        "the collector off inside itself (it always does, `gc_pause.rs`). Verify is `region.verify()` "
        "(structure and checksum), best of 5 (or `per_call` under 20 ms), as `nbytes / time`. Items are "
        f"top-level elements; most cells have {BASE[mode]:,}, nested records {max(1_000, BASE[mode] // 4):,}, "
        f"1 KiB strings {max(100, BASE[mode] // 20):,}; the size sweep runs flat records, the small-int tree "
        f"and a flat int list at {SWEEP[mode][0]:,} and {SWEEP[mode][1]:,} items"
        + (f" and {args.max_items:,}" if args.max_items and args.max_items > SWEEP[mode][1] else "")
        + f", nested records at {SWEEP[mode][0]:,} and {SWEEP[mode][1] // 4:,} (3M items is `--max-items "
        "3000000`, not part of the default run, which is kept to ~15 minutes). Calls of over 0.3 s get 3 turns. "
        "n/a: the baseline refuses the data (msgspec and orjson: ints beyond 64 bits; orjson: nesting deeper "
        "than 254)."
        + (f" Every cell whose timed figure misses its target or comes within 10% of it was measured "
           f"{args.reruns} more time{'s' if args.reruns != 1 else ''} (each time in a fresh interpreter that made its data anew): its figure is the median of its "
           f"{args.reruns + 1} runs, their range in brackets." if args.reruns else ""),
        "",
        common.plot_line(plot, "shape sweep heat map: figure / target per cell and measure"),
        "",
        "Per target, every cell sorted worst first; \"-\" means the target does not apply to that kind of "
        "data (its figure is still shown).",
    ]
    targets: list[common.Target] = []
    for key, what, goal in TARGETS:
        scored = []
        for c in cells:
            v = c["ratios"][key]
            target = target_of(key, c["kind"])
            if v is None:
                continue
            scored.append((badness(key, v, target if target is not None else (1.0 if key != "verify" else 2.0)),
                           target is not None, c, v, target))
        # Cells the target applies to first, worst first; then the others (figure for information).
        scored.sort(key=lambda e: (not e[1], -e[0]))
        applies = [e for e in scored if e[1]]
        missed = [e for e in applies if e[0] > 1]
        lines += ["", f"### {what} (goal {goal})", ""]
        if applies:
            w = applies[0]
            worst = w[2]
            lines.append(f"{len(applies) - len(missed)} of {len(applies)} cells meet it; worst: "
                         f"**{worst['name']}** ({worst['items']:,} items), {fmt_value(key, w[3])}. "
                         f"Its region holds: {anatomy(worst)}.")
            lines.append("")
            targets.append(common.Target(
                f"sweep worst cell, {what}: {worst['name']}", goal, fmt_value(key, w[3]), "", "",
                w[0] <= 1, source))
        rows = []
        for bad, has_target, c, v, target in scored:
            rows.append((c["name"], c["kind"], f"{c['items']:,}", fmt_value(key, v) + run_spread(c, key),
                         "-" if target is None else (fmt_value(key, target) if key == "verify" else f"{target:g}x"),
                         "-" if not has_target else ("met" if bad <= 1 else "**NOT MET**" + (
                             ", out of reach (bound above the target)" if beyond_reach(key, c) else ""))))
        head = (["cell", "kind", "items", "figure", "target", "verdict"], ["l", "l", "r", "r", "r", "l"])
        if key in BOUNDS:
            # The bound of each cell (see the paragraph after the tables).
            rows = [(*row, bound_cell(key, c)) for row, (_, _, c, _, _) in zip(rows, scored)]
            head = (head[0] + ["bound"], head[1] + ["r"])
        lines += common.table(*head, rows[:OPEN_ROWS])
        if len(rows) > OPEN_ROWS:
            lines += ["", f"<details><summary>the other {len(rows) - OPEN_ROWS} cells, worst first</summary>", "",
                      *common.table(*head, rows[OPEN_ROWS:]), "", "</details>"]
    lines += compaction_bound_paragraph(cells)
    bounded = [c for c in cells if c["ratios"].get("scan_bound") and target_of("scan", c["kind"]) is not None]
    if bounded:
        over = [c for c in bounded if beyond_reach("scan", c)]
        under = [c for c in bounded if below_its_bound("scan", c)]
        lines += ["", "**The bound of a scan through views.** A native scan hands out the objects its dicts "
                  "hold; a scan through views makes a new object for every value it reads (an int, float or "
                  "str: CPython shares only small ints, `None`, bools and 1-character strings; a view for a "
                  "container) and drops it at the next one. The *bound* column is (loop + reads) / native "
                  "scan. *Loop* is the same Python loop over the cell's `skeleton` (its lists, tuples and "
                  "dicts made anew, every other value None): the loop's own work, without reading scattered "
                  "objects. *Reads* is `_bale._read_every_value(root)`, which reads and makes every value of "
                  "every record (with `deep=True`, of every container, for the cells walked in depth) as the "
                  "views do, with no Python loop, row view or iterator. A scan through views runs that loop "
                  "and makes those values, so where the figure is at or above its bound (within 5%, the noise "
                  "of two timings) the bound is its floor, and a bound above the 1.2x target puts the target "
                  "out of reach for any view that returns Python objects (only handing out objects made "
                  "before, that is a thawed copy, would meet it). "
                  f"Out of reach so: {len(over)} of the {len(bounded)} cells"
                  + (f" ({', '.join(c['name'] for c in over)})" if 0 < len(over) <= 6 else "") + ". "
                  + (f"In {len(under)} cell{'s' if len(under) != 1 else ''} the figure lies under its bound "
                     f"({', '.join(c['name'] for c in under)}): there the views' own iterators make the values "
                     "in less time than `_read_every_value` does, so the bound is no floor, and those "
                     "cells are not called out of reach. " if under else "")
                  + "The rest of each figure, above the bound, is the views' own cost: a row view, `values()` "
                  "and its iterator per record (the step table below)."]
    phased = [c for c in cells if "scan_phases" in c and target_of("scan", c["kind"]) is not None]
    if phased:
        worst = max(phased, key=lambda c: c["ratios"]["scan"])
        ph, n_rec = worst["scan_phases"], worst["items"]
        lines += ["", f"Where the time of the worst records scan goes (**{worst['name']}**, {n_rec:,} records, "
                  "views and native taking turns; per record, each step includes the one before):", ""]
        rows = []
        code = {"rows": "for rec in d: pass", "rows + values()": "for rec in d: rec.values()",
                "every value": "for rec in d: for v in rec.values(): n += 1"}
        for step, text in code.items():
            b, nat = ph[f"bale {step}"], ph[f"native {step}"]
            rows.append((f"`{text}`", f"{b / n_rec * 1e9:.0f} ns", f"{nat / n_rec * 1e9:.0f} ns",
                         common.fmt_ratio(b / nat)))
        lines += common.table(["step", "views, per record", "native, per record", "views / native"],
                              ["l", "r", "r", "r"], rows)
    fresh = [c for c in cells if "compact_fresh" in c]
    if fresh:
        lines += ["", "### Strings: compaction of fresh string objects", "",
                  "pickle, msgspec and orjson write a str as UTF-8, and CPython keeps the UTF-8 form inside a "
                  "non-ASCII str once it has been asked for (`PyUnicode_AsUTF8AndSize`; the object grows by that "
                  "copy). In the turns above every call after the first encodes the same objects, so the "
                  "baselines copy cached bytes. Here each call encodes its own new, equal string objects (copied "
                  "outside the clock), as a first serialization of new data would; ASCII strings have no "
                  "separate UTF-8 form, so only the non-ASCII rows should move. For information: the targets "
                  "above use the warm figures, the harder ones for bale.", ""]
        rows = []
        for c in fresh:
            f, w = c["compact_fresh"], c["compact"]
            rows.append((c["name"], f"{c['items']:,}", common.fmt_time(f["bale"]), common.fmt_time(f["pickle"]),
                         common.fmt_time(w["pickle"]), common.fmt_ratio(f["bale"] / f["pickle"]),
                         common.fmt_ratio(w["bale"] / w["pickle"]),
                         common.fmt_ratio(f["bale"] / f["msgspec"]) if "msgspec" in f else "n/a",
                         common.fmt_ratio(w["bale"] / w["msgspec"]) if "msgspec" in w else "n/a"))
        lines += common.table(["cell", "items", "compact (fresh)", "pickle.dumps (fresh)", "pickle.dumps (warm)",
                               "/ pickle fresh", "/ pickle warm", "/ msgspec fresh", "/ msgspec warm"],
                              ["l"] + ["r"] * 8, rows)
    lines += ["", "### Every cell", "",
              "Times are the best turn; bytes are `nbytes`, pickle protocol 5, msgspec MessagePack.", ""]
    rows = []
    for c in cells:
        r = c["ratios"]
        rows.append((c["name"], f"{c['items']:,}", common.fmt_time(c["compact"]["bale"]),
                     common.fmt_time(c["compact"]["pickle"]),
                     common.fmt_time(c["compact"]["msgspec"]) if "msgspec" in c["compact"] else "n/a",
                     fmt_value("x", r["compact_orjson"]),
                     common.fmt_time(c["thaw_off"]["bale"]), common.fmt_time(c["thaw_off"]["pickle"]),
                     common.fmt_time(c["thaw_on"]["pickle"]), common.fmt_bytes(c["nbytes"]),
                     common.fmt_bytes(c["pickle_bytes"]), fmt_value("verify", r["verify"]),
                     common.fmt_time(c["scan"]["bale"]), common.fmt_time(c["scan"]["native"]), str(c["turns"])))
    lines += common.table(["cell", "items", "compact", "pickle.dumps", "msgspec", "compact / orjson",
                           "thaw (GC off)", "loads (GC off)", "loads (GC on)", "bale bytes", "pickle bytes",
                           "verify", "scan views", "scan native", "turns"],
                          ["l"] + ["r"] * 14, rows)
    notes = os.path.join(common.HERE, "sweep_profiles.md")
    if os.path.exists(notes):
        with open(notes) as f:
            lines += ["", *f.read().rstrip("\n").splitlines()]
    return common.Section("Shape sweep", lines, targets, [plot])


def options(ap) -> None:
    ap.add_argument("--max-items", type=int, default=None,
                    help="add a size-sweep cell of this many items (e.g. 3000000) to flat records, nested records, "
                    "the int tree and the int list")
    ap.add_argument("--only", nargs="+", metavar="SUBSTR", help="run only the cells whose name contains one of these")
    ap.add_argument("--reruns", type=int, default=None,
                    help="measure every cell that misses a timed target, or comes within 10%% of it, this many "
                    "more times and report the median (default: 2 in the full sweep, 0 with --quick or --smoke)")


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run, options)


if __name__ == "__main__":
    if sys.argv[1:2] == [ONE_CELL]:
        cell_name, cell_mode, cell_max = sys.argv[2], sys.argv[3], int(sys.argv[4])
        measure_one_cell(cell_name, cell_mode, cell_max or None)
        sys.exit(0)
    sys.exit(main())
