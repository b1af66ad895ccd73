"""Fuzzing child process for test_fuzz.py (not a test module itself).

    python _fuzz_child.py MODE SEED COUNT STATUS_FILE

MODE is one of
  mutate         mutations of valid regions of varied content
  random         fully random bytes
  header-random  a valid header followed by random (slot-flavoured) words
  one            reproduce the single case whose case seed is SEED (COUNT ignored)

For every buffer the child calls ``bale.load(buf)``, walks the root fully
(thaw, repr, len, iteration, indexing, slicing, lookups with the original's
keys, == against the original) and calls ``bale.load(buf, verify=True)``.
The only exception allowed anywhere is ``bale.FormatError``; when verification
passes, reading must raise nothing at all. Failures are printed (with the
case seed) and make the exit status 1. The current case seed is written to
STATUS_FILE before each case so that the parent can name the case after a
crash (signal) or a hang (SIGALRM after ALARM_SECONDS in one case).
"""

from __future__ import annotations

import os
import random
import resource
import signal
import struct
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import array  # noqa: E402
import dataclasses  # noqa: E402
import datetime as dt  # noqa: E402
import decimal  # noqa: E402
import enum  # noqa: E402
import typing  # noqa: E402
import uuid  # noqa: E402
import zoneinfo  # noqa: E402

import numpy as np  # noqa: E402

import bale  # noqa: E402
from _bale_testlib import HAVE_XXHASH, fix_checksum, header, put_u64  # noqa: E402

ALARM_SECONDS = 30
NODE_BUDGET = 2000  # Python-side walk budget per buffer (the library's own thaw/repr are unbounded)
EXAMPLES_PER_KIND = 3  # failures are grouped by exception type and the operation that raised it

# ThawError: a record names a class this process does not know (or a
# changed one), which no verification of the bytes can rule out.
FormatError = (bale.FormatError, bale.ThawError)
SEQ_VIEWS = (bale.ListView, bale.TupleView, bale.NumberListView)
SET_VIEWS = (bale.SetView, bale.FrozenSetView)
_MISSING = object()


# ---------------------------------------------------------------------------
# Originals
# ---------------------------------------------------------------------------


def originals():
    return [
        {"a": 1, "b": [1, 2, 3], "c": "hello world", "d": None, "e": True, "f": 2.5, "g": -0.0},
        {f"key{i}": i * 3 for i in range(40)},
        {1: "a", 2.5: "b", (1, 2): "c", None: "d", b"x": "e", frozenset({1}): "f", "k" * 20: [1], 10**30: {"n": 1}, -7: (), "\xe9": "\xfc", 2**63: "i64+1"},
        [{"id": i, "name": f"user{i}", "tags": ["a", "b"][: i % 3], "score": i / 7} for i in range(30)],
        {"set": set(range(20)) | {"a", "bb", 2.5, (1, 2)}, "fs": frozenset({1, 2, 3}), "small": {None, b"b"}, "fsbig": frozenset(f"e{i}" for i in range(12))},
        [[1, [2, [3, [4, [5, (6, 7, (8,))]]]]], [], (), {}, set(), frozenset()],
        ["ascii string long enough", "latin \xe9" * 5, "bmp \u20ac \u2211" * 3, "astral \U0001f600 x", "\ud800", "", "short", "x" * 70, "\xe9", "\u20ac", "\U0001f600"],
        [2**70, -(2**100), 2**62, -(2**62), 2**63, 10**40, 0, -1, 2**60, -(2**60) - 1, 1.5, float("nan"), float("inf"), -0.0, 1e-310, 1 + 2j, complex(-0.0, float("nan")), b"", b"bytes\x00\xff" * 3],
        "a top-level string that is long enough " * 3,
        12345678901234567890123,
        (1, "two", 3.0, [4], {"five": 5}, frozenset({(1, 2), "x"})),
        {"long": "y" * 70_000, "wide": "\u20ac" * 300, "astral": "\U0001f600" * 20},
        [{"x": i, "y": [i] * (i % 4), "z": {"k": (i, str(i))}} for i in range(200)],
        {"list": list(range(66_000))},
        {f"k{i}": {f"inner{j}": [j, str(j)] for j in range(10)} for i in range(12)},
    ]


@dataclasses.dataclass
class FuzzRecord:
    a: int
    b: object = None


class FuzzPoint(typing.NamedTuple):
    x: float
    y: str


class FuzzColor(enum.Enum):
    RED = 1
    BLUE = "blue"


def typed_originals():
    """Every kind of typed value (issue 5), to be mutated like the others."""
    return [
        {"date": dt.date(2020, 2, 29), "dt": dt.datetime(2021, 11, 7, 1, 30, fold=1, tzinfo=zoneinfo.ZoneInfo("America/New_York")),
         "fixed": dt.datetime(2020, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=-3), "BRT")), "t": dt.time(23, 59, 1, 5),
         "td": dt.timedelta(-2, 7, 9), "dec": decimal.Decimal("-1.25E-9"), "uuid": uuid.UUID(int=2**100 + 7),
         "range": range(5, 500, 9), "arr": array.array("d", [1.5, -2.0]), "keys": {dt.date(2000, 1, 1): 1, uuid.UUID(int=3): 2}},
        [FuzzRecord(i, [i, str(i)]) for i in range(10)] + [FuzzPoint(1.5, "p"), FuzzColor.RED, FuzzColor.BLUE, FuzzColor.RED],
        {"ints": list(range(-3, 40)), "floats": [i / 3 for i in range(30)], "big": [2**63, 1]},
        {"np": np.arange(12, dtype=np.int32).reshape(3, 4), "f": np.asfortranarray(np.ones((2, 3))), "s": np.float32(2.5),
         "rec": np.zeros(2, dtype=[("a", "<i2"), ("b", "S3")]), "str": np.array(["x", "yz"]), "when": np.datetime64("2020-01-01")},
    ]


def shared_and_grown():
    """(region bytes, original or None) for regions made with share=True
    (cycles included) and by appends. Cyclic values have no original to
    compare with: Python's own == recurses without end on them."""
    out = []
    x = [1, "shared string value", (2.5, None)]
    out.append((bytes(bale.compact([x, x, {"k": x}], share=True)), [x, x, {"k": x}]))
    me = []
    me.append(me)
    me.append({"self": me, "n": 1})
    out.append((bytes(bale.compact(me, share=True)), None))
    t = ([], "t")
    t[0].append(t)
    d = {"a": [t], "b": None}
    d["d"] = d
    out.append((bytes(bale.compact([d, t, []], share=True)), None))
    r = bale.compact([3, 2, 1])
    for i in range(5):
        r = r.append((i, f"item {i} of the persistent list", r.root))
    out.append((bytes(r), bale.thaw(r.root)))
    other = bale.compact({f"k{i}": [i] * 3 for i in range(12)})
    r = r.append({"from another region": other.root, "here": r.root, "again": r.root})
    out.append((bytes(r), bale.thaw(r.root)))
    return out


# ---------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------

SPECIAL_BYTES = [0x00, 0xFF, 0x80, 0x7F, 0x01, 0x07, 0x0F, 0x0E]
SPECIAL_WORDS = [0, 2**64 - 1, 2**63, 2**63 - 1, 0xFFFFFFFF, 1, 2, 7, 64, 0x10, 0x0F | (2**56 - 1) << 8]


def forged_slot(rng, length, at):
    """A slot of a random tag, often with an offset near interesting places."""

    def offset():
        return rng.choice([0, 8, 24, 56, 64, at, at + 8, max(at - 8, 0), length, length + 8, 2**40, rng.randrange(0, max(length, 8)) & ~7, rng.randrange(64, max(length, 72)) & ~7])

    tag = rng.randrange(8)
    if tag == 0:
        return offset() & (2**64 - 1)
    if tag == 1:
        return ((rng.choice([0, 1, -1, 2**59, -(2**60), rng.getrandbits(61) - 2**60]) << 3) | 1) & (2**64 - 1)
    if tag == 2:
        return (rng.choice([0, 1, 2, 3, 4, 2**40]) << 3) | 2
    if tag == 3:
        n = rng.randrange(8)
        body = bytes(rng.choice([rng.randrange(0x80), rng.randrange(256)]) for _ in range(7))
        return struct.unpack("<Q", bytes([3 | (n << 3)]) + body)[0]
    if tag == 4:
        w = rng.randrange(4)
        n = rng.choice([0, 1, 2, 7, 8, 65535, rng.randrange(65536), rng.randrange(max(length, 1))]) & 0xFFFF
        return (4 | (w << 3) | (n << 5) | ((offset() >> 3) << 21)) & (2**64 - 1)
    if tag in (5, 6):
        n = rng.choice([0, 1, 2, 3, 65535, rng.randrange(65536), rng.randrange(max(length // 8, 1))]) & 0xFFFF
        return (tag | (n << 3) | ((offset() >> 3) << 19)) & (2**64 - 1)
    return rng.getrandbits(61) << 3 | 7


def forged_object_header(rng):
    kind = rng.choice(list(range(0x00, 0x12)) + [0xFF, rng.randrange(256)])
    length = rng.choice([0, 1, 2, 8, 9, 16, 65535, 65536, 2**56 - 1, 2**40, rng.randrange(2**20), rng.randrange(64)])
    return kind | (length << 8)


def aligned(rng, length, lo=0):
    if length - 8 < lo:
        return None
    return rng.randrange(lo, length - 7) & ~7


def mutate(rng, base):
    b = bytearray(base)
    desc = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        kind = rng.choice(["bitflip", "bitflip", "byte", "truncate", "extend", "word", "word", "slot", "slot", "slot", "objhdr", "header", "header", "copyword"])
        n = len(b)
        if n == 0:
            b += bytes(8)
            n = 8
        if kind == "bitflip":
            for _ in range(rng.choice([1, 1, 2, 4, 8])):
                pos = rng.randrange(64, n) if n > 64 and rng.random() < 0.9 else rng.randrange(n)
                b[pos] ^= 1 << rng.randrange(8)
        elif kind == "byte":
            for _ in range(rng.choice([1, 2, 8])):
                pos = rng.randrange(64, n) if n > 64 and rng.random() < 0.9 else rng.randrange(n)
                b[pos] = rng.choice(SPECIAL_BYTES + [rng.randrange(256)])
        elif kind == "truncate":
            new = rng.randrange(0, n)
            if rng.random() < 0.6:
                new &= ~7
            del b[new:]
        elif kind == "extend":
            b += rng.randbytes(rng.choice([1, 7, 8, 16, 64, rng.randrange(1, 300)]))
        elif kind == "word":
            off = aligned(rng, n)
            if off is not None:
                put_u64(b, off, rng.choice(SPECIAL_WORDS + [rng.getrandbits(64)] * 3))
        elif kind == "slot":
            off = aligned(rng, n, 64) if rng.random() < 0.85 else 24
            if off is not None and off + 8 <= n:
                put_u64(b, off, forged_slot(rng, n, off))
        elif kind == "objhdr":
            off = aligned(rng, n, 64)
            if off is not None:
                put_u64(b, off, forged_object_header(rng))
        elif kind == "header":
            field = rng.choice(["root", "total_len", "version", "bom", "flags", "reserved", "checksum"])
            if n >= 64:
                if field == "root":
                    put_u64(b, 24, forged_slot(rng, n, 24))
                elif field == "total_len":
                    put_u64(b, 16, rng.choice([0, 8, 63, 64, n - 8, n + 8, 2**63, 2**64 - 1, rng.getrandbits(64)]))
                elif field == "version":
                    struct.pack_into("<I", b, 8, rng.choice([0, 2, 255, 2**32 - 1]))
                elif field == "bom":
                    b[12:16] = rng.choice([b"\x01\x02\x03\x04", b"\x00\x00\x00\x00", rng.randbytes(4)])
                elif field == "flags":
                    struct.pack_into("<I", b, 40, rng.choice([0, 1, 1, 2, 3, 3, 0x80000000, rng.getrandbits(32)]))
                elif field == "reserved":
                    b[rng.randrange(44, 64)] = rng.randrange(1, 256)
                else:
                    b[32:40] = rng.randbytes(8)
            kind += ":" + field
        elif kind == "copyword":
            src, dst = aligned(rng, n), aligned(rng, n, 64)
            if src is not None and dst is not None:
                b[dst : dst + 8] = b[src : src + 8]
        desc.append(kind)
    n = len(b)
    if n >= 24 and rng.random() < 0.7:
        put_u64(b, 16, n)  # let the buffer past the header checks
        desc.append("fix-len")
    if HAVE_XXHASH and n >= 64 and rng.random() < 0.5:
        fix_checksum(b)  # let verification reach the structure checks
        desc.append("fix-sum")
    return bytes(b), desc


def header_random(rng):
    nwords = rng.choice([0, 1, 2, 3, 8, 16, 64, rng.randrange(1, 200)])
    total = 64 + 8 * nwords
    body = bytearray()
    for i in range(nwords):
        at = 64 + 8 * i
        r = rng.random()
        if r < 0.35:
            w = forged_slot(rng, total, at)
        elif r < 0.55:
            w = forged_object_header(rng)
        elif r < 0.75:
            w = rng.getrandbits(64)
        else:
            w = rng.choice(SPECIAL_WORDS)
        body += struct.pack("<Q", w)
    root = forged_slot(rng, total, total)
    flags = rng.choice([0, 0, 0, 1, 3, 3])
    b = header(total, root, flags=flags) + body
    if HAVE_XXHASH and rng.random() < 0.8:
        fix_checksum(b)
    return bytes(b), [f"header-random words={nwords} flags={flags}"]


def fully_random(rng):
    n = rng.choice([0, 1, 8, 63, 64, 65, 72, 128, rng.randrange(0, 600)])
    b = bytearray(rng.randbytes(n))
    if n >= 8 and rng.random() < 0.3:
        b[0:8] = b"BALE\r\n\x1a\n"
    return bytes(b), [f"random n={n}"]


# ---------------------------------------------------------------------------
# Walking
# ---------------------------------------------------------------------------


class Walker:
    def __init__(self, strict):
        self.strict = strict  # verified: no exception at all is allowed

    def g(self, fn, *args):
        """Call fn; FormatError is allowed unless strict. Returns _MISSING on FormatError."""
        try:
            return fn(*args)
        except bale.ThawError:
            return _MISSING  # a class or zone this process lacks: valid bytes too
        except FormatError:
            if self.strict:
                raise
            return _MISSING

    def walk_root(self, region, original):
        root = self.g(lambda: region.root)
        if root is _MISSING:
            return
        self.g(bale.thaw, root)
        self.g(repr, root)
        self.g(bale._bale.region_stats, region)
        try:
            self.g(bale.to_json, root)
        except ValueError as e:  # valid data that JSON cannot hold (a set, NaN, a cycle)
            if "JSON" not in str(e):
                raise
        if isinstance(root, SEQ_VIEWS):
            for key in ("a", "id", 1):
                try:
                    self.g(bale.column, root, key)
                except (KeyError, TypeError):
                    pass  # records without the key, or items that are not dicts
        self.g(lambda: root == original)
        self.g(lambda: root != original)
        self.walk(root, original)

    def walk(self, root, original):
        g = self.g
        stack = [(root, original)]
        visited = 0
        while stack and visited < NODE_BUDGET:
            v, o = stack.pop()
            visited += 1
            if isinstance(v, SEQ_VIEWS):
                n = g(len, v)
                items = g(list, v)
                g(lambda: list(reversed(v)))
                if isinstance(n, int):
                    for i in range(min(n, 12)):
                        g(v.__getitem__, i)
                        g(v.__getitem__, -1 - i)
                    if n:
                        g(v.__getitem__, n - 1)
                g(v.__getitem__, slice(1, 5))
                if isinstance(v, bale.NumberListView):
                    g(lambda: np.asarray(v).sum())
                    g(lambda: memoryview(v).tolist())
                g(v.__getitem__, slice(None, None, -2))
                if isinstance(items, list):
                    same_kind = isinstance(o, (list, tuple)) and len(o) == len(items)
                    for i, child in enumerate(items[:48]):
                        stack.append((child, o[i] if same_kind else None))
            elif isinstance(v, bale.DictView):
                g(len, v)
                keys = g(list, v)
                g(lambda: list(v.values()))
                items = g(lambda: list(v.items()))
                if isinstance(o, dict):
                    for k in list(o)[:48]:
                        got = g(v.get, k, _MISSING)
                        g(v.__contains__, k)
                        if got is not _MISSING:
                            stack.append((got, o[k]))
                if isinstance(keys, list):
                    for k in keys[:8]:
                        stack.append((k, None))
                if isinstance(items, list):
                    for _, val in items[:48]:
                        stack.append((val, None))
            elif isinstance(v, bale.RecordView):
                fields = g(lambda: v._fields)
                g(repr, v)
                try:
                    g(hash, v)
                except TypeError:
                    pass  # a field holds a list or dict, as in a tuple
                if isinstance(fields, tuple):
                    for f in fields[:16]:
                        try:
                            child = g(getattr, v, f)
                        except AttributeError:
                            if self.strict:
                                raise
                            continue  # an unverified, damaged index may not find a field
                        if child is not _MISSING:
                            stack.append((child, None))
                try:
                    g(len, v)
                    g(list, v)
                except TypeError:
                    pass  # only NamedTuple records are sequences
            elif isinstance(v, np.ndarray):
                g(lambda: v.tobytes())
                g(repr, v)
            elif isinstance(v, SET_VIEWS):
                g(len, v)
                elems = g(list, v)
                if isinstance(o, (set, frozenset)):
                    for e in list(o)[:48]:
                        g(v.__contains__, e)
                if isinstance(elems, list):
                    for e in elems[:48]:
                        stack.append((e, None))
            else:
                g(repr, v)


def exercise(buf, original):
    """Raises anything that is not an allowed FormatError."""
    try:
        region = bale.load(buf)
    except FormatError:
        region = None
    if region is not None:
        Walker(strict=False).walk_root(region, original)
        try:
            region.verify()
        except FormatError:
            pass
    try:
        checked = bale.load(buf, verify=True)
    except FormatError:
        return "rejected"
    # Verified: everything must work, with no exception at all, except that
    # the bytes may name classes (or time zones) this process does not have.
    try:
        bale.thaw(checked.root)
    except bale.ThawError:
        pass
    Walker(strict=True).walk_root(checked, original)
    return "verified"


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def case_seed(seed, i):
    return seed * 1_000_003 + i


def build_case(mode, cs, bases, origs):
    rng = random.Random(cs)
    if mode == "mutate":
        idx = rng.randrange(len(bases))
        buf, desc = mutate(rng, bases[idx])
        return buf, [f"region#{idx}"] + desc, origs[idx]
    if mode == "header-random":
        buf, desc = header_random(rng)
        return buf, desc, None
    buf, desc = fully_random(rng)
    return buf, desc, None


def main():
    mode, seed, count, status_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    origs = originals()
    bases = [bytes(bale.compact(o)) for o in origs]
    for b, o in shared_and_grown():
        bases.append(b)
        origs.append(o)
    for o in typed_originals():
        bases.append(bytes(bale.compact(o)))
        # Arrays have no truth value, so Python cannot compare a dict holding them.
        origs.append(None if "np" in o else o)
    for o, b in zip(origs, bases):
        bale.load(b, verify=True)  # the originals themselves are valid

    # Unbounded allocation must fail (MemoryError is not FormatError) rather than swap.
    limit = 4 * 1024**3
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))

    if mode == "one":
        seeds = [seed]
        mode = sys.argv[5] if len(sys.argv) > 5 else "mutate"
    else:
        seeds = [case_seed(seed, i) for i in range(count)]

    status = open(status_path, "w")
    failures = {}  # (exception type, walker operation) -> [count, examples]
    outcomes = {"rejected": 0, "verified": 0}
    for cs in seeds:
        status.seek(0)
        status.write(f"{mode} {cs}\n")
        status.flush()
        buf, desc, orig = build_case(mode, cs, bases, origs)
        signal.alarm(ALARM_SECONDS)
        try:
            outcomes[exercise(buf, orig)] += 1
        except BaseException as e:  # noqa: BLE001 - anything but FormatError is a failure
            if isinstance(e, KeyboardInterrupt):
                raise
            frames = traceback.extract_tb(e.__traceback__)
            ours = [f for f in frames if f.filename == os.path.abspath(__file__) and f.name != "g"]
            where = ours[-1].line if ours else "?"
            key = (type(e).__name__, where)
            entry = failures.setdefault(key, [0, []])
            entry[0] += 1
            if len(entry[1]) < EXAMPLES_PER_KIND:
                entry[1].append(f"case seed {cs} ({mode}; {' '.join(desc)}): {type(e).__name__}: {e!s:.300}")
        finally:
            signal.alarm(0)
    status.close()
    nfail = sum(c for c, _ in failures.values())
    print(f"cases={len(seeds)} rejected={outcomes['rejected']} verified={outcomes['verified']} failures={nfail} xxhash={HAVE_XXHASH}")
    for (etype, where), (count, examples) in sorted(failures.items(), key=lambda kv: -kv[1][0]):
        print(f"FAIL x{count}: {etype} raised by `{where}`")
        for ex in examples:
            print("    ", ex)
    sys.stdout.flush()
    os._exit(1 if failures else 0)


if __name__ == "__main__":
    main()
