"""Helpers shared by bale's tests (not a test module itself).

* ``same(a, b)``: identical types at every level, floats by bit pattern,
  dicts in the same insertion order; iterative, so it works on values nested
  a million levels deep (CPython's own ``==`` recurses).
* ``expected_thaw(x)``: what ``thaw(compact(x).root)`` must give for ``x``
  (bytearray becomes bytes, everything else keeps its type).
* ``thawed_both_ways(value)``: the value compacted, verified, and thawed
  from its region and from a verified copy of its bytes.
* A tiny region *writer* for crafted-bytes tests, following docs/FORMAT.md.
"""

from __future__ import annotations

import struct

try:  # XXH3-64 is only needed to forge regions that pass the checksum check.
    import xxhash as _xxhash
except ImportError:  # pragma: no cover - depends on the environment
    _xxhash = None

HAVE_XXHASH = _xxhash is not None

MAGIC = b"BALE\r\n\x1a\n"
HEADER_LEN = 64

_MISSING = object()


def thawed_both_ways(value, **compact_options):
    """``thaw`` of the value's region, and of a verified copy of its bytes."""
    import bale

    region = bale.compact(value, **compact_options)
    region.verify()
    again = bale.load(bytes(region), verify=True)
    return bale.thaw(region.root), bale.thaw(again.root)


def float_bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _same_scalar(a, b) -> bool:
    if isinstance(a, float):
        return float_bits(a) == float_bits(b)
    if isinstance(a, complex):
        return float_bits(a.real) == float_bits(b.real) and float_bits(a.imag) == float_bits(b.imag)
    return a == b


def same(a, b) -> bool:
    """True when ``b`` is ``a`` rebuilt exactly (types, order, float bits)."""
    return why_different(a, b) is None


def _render(path) -> str:
    steps = []
    while path is not None:
        path, step = path
        steps.append(step)
    return "root" + "".join(reversed(steps))


def why_different(a, b):
    """None when ``same``; otherwise a short description of the first difference."""
    # Paths are linked (parent, step) pairs, rendered only on a difference,
    # so that very deep values cost O(depth) and not O(depth**2).
    stack = [(a, b, None)]
    while stack:
        x, y, path = stack.pop()
        if type(x) is not type(y):
            return f"{_render(path)}: type {type(x).__name__} != {type(y).__name__} ({x!r:.80} vs {y!r:.80})"
        if isinstance(x, (list, tuple)):
            if len(x) != len(y):
                return f"{_render(path)}: len {len(x)} != {len(y)}"
            for i in range(len(x) - 1, -1, -1):
                stack.append((x[i], y[i], (path, f"[{i}]")))
        elif isinstance(x, dict):
            if len(x) != len(y):
                return f"{_render(path)}: len {len(x)} != {len(y)}"
            kx, ky = list(x), list(y)
            for i in range(len(kx) - 1, -1, -1):
                stack.append((x[kx[i]], y[ky[i]], (path, f"[{kx[i]!r:.40}]")))
                stack.append((kx[i], ky[i], (path, f".key#{i}")))
        elif isinstance(x, (set, frozenset)):
            if len(x) != len(y):
                return f"{_render(path)}: len {len(x)} != {len(y)}"
            # Map each element of y to itself so that an equal element of x
            # finds y's actual object, whose type and bits must match too.
            ymap = {e: e for e in y}
            for e in x:
                other = ymap.get(e, _MISSING)
                if other is _MISSING:
                    return f"{_render(path)}: element {e!r:.80} missing"
                stack.append((e, other, (path, "{...}")))
        elif not _same_scalar(x, y):
            return f"{_render(path)}: {x!r:.80} != {y!r:.80}"
    return None


def assert_same(a, b):
    diff = why_different(a, b)
    assert diff is None, diff


def expected_thaw(x):
    """The native value that ``thaw(compact(x).root)`` must equal exactly."""
    if isinstance(x, bytearray):
        return bytes(x)
    if isinstance(x, list):
        return [expected_thaw(e) for e in x]
    if isinstance(x, tuple):
        return tuple(expected_thaw(e) for e in x)
    if isinstance(x, dict):
        return {expected_thaw(k): expected_thaw(v) for k, v in x.items()}
    if isinstance(x, set):
        return {expected_thaw(e) for e in x}
    if isinstance(x, frozenset):
        return frozenset(expected_thaw(e) for e in x)
    return x


def has_nan(x) -> bool:
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, float):
            if v != v:
                return True
        elif isinstance(v, complex):
            if v.real != v.real or v.imag != v.imag:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend(v)
    return False


# ---------------------------------------------------------------------------
# Region bytes: header fields and a minimal writer for crafted regions.
# ---------------------------------------------------------------------------


def u64(b, off: int) -> int:
    return struct.unpack_from("<Q", b, off)[0]


def put_u64(b: bytearray, off: int, value: int) -> None:
    struct.pack_into("<Q", b, off, value & 0xFFFFFFFFFFFFFFFF)


def put_u32(b: bytearray, off: int, value: int) -> None:
    struct.pack_into("<I", b, off, value & 0xFFFFFFFF)


def checksum(b) -> int:
    """XXH3-64 (seed 0) of the region with its checksum field taken as zero."""
    if _xxhash is None:
        raise RuntimeError("xxhash is not installed")
    data = bytes(b[:32]) + bytes(8) + bytes(b[40:])
    return _xxhash.xxh3_64_intdigest(data)


def fix_checksum(b: bytearray) -> None:
    put_u64(b, 32, checksum(b))


def header(total_len: int, root: int, *, version: int = 1, flags: int = 0) -> bytearray:
    h = bytearray(HEADER_LEN)
    h[0:8] = MAGIC
    put_u32(h, 8, version)
    h[12:16] = b"\x04\x03\x02\x01"
    put_u64(h, 16, total_len)
    put_u64(h, 24, root)
    put_u32(h, 40, flags)
    return h


# Slot constructors (docs/FORMAT.md, "Slots").
def slot_obj(offset: int) -> int:
    return offset


def slot_int(v: int) -> int:
    return ((v << 3) | 1) & 0xFFFFFFFFFFFFFFFF


def slot_const(c: int) -> int:
    return (c << 3) | 2


SLOT_NONE, SLOT_FALSE, SLOT_TRUE = slot_const(0), slot_const(1), slot_const(2)


def slot_sstr(s: bytes) -> int:
    assert len(s) <= 7
    raw = bytes([3 | (len(s) << 3)]) + s + bytes(7 - len(s))
    return u64(raw, 0)


def slot_str(width: int, n: int, offset: int) -> int:
    return 4 | (width << 3) | (n << 5) | ((offset >> 3) << 21)


def slot_list(n: int, offset: int) -> int:
    return 5 | (n << 3) | ((offset >> 3) << 19)


def slot_tuple(n: int, offset: int) -> int:
    return 6 | (n << 3) | ((offset >> 3) << 19)


def obj_header(kind: int, length: int) -> int:
    return kind | (length << 8)


class Writer:
    """Appends 8-aligned words after a 64-byte header; ``finish`` fills it in."""

    def __init__(self) -> None:
        self.buf = bytearray(HEADER_LEN)

    @property
    def pos(self) -> int:
        return len(self.buf)

    def raw(self, data: bytes) -> int:
        """Append ``data`` zero-padded to a word; returns its offset."""
        off = self.pos
        self.buf += data
        self.buf += bytes((-len(data)) % 8)
        return off

    def words(self, *ws: int) -> int:
        return self.raw(b"".join(struct.pack("<Q", w & 0xFFFFFFFFFFFFFFFF) for w in ws))

    def obj(self, kind: int, length: int, payload: bytes = b"") -> int:
        return self.raw(struct.pack("<Q", obj_header(kind, length)) + payload)

    def finish(self, root: int, *, flags: int = 0, good_checksum: bool = True) -> bytes:
        out = bytearray(self.buf)
        out[0:HEADER_LEN] = header(len(out), root, flags=flags)
        if good_checksum and HAVE_XXHASH:
            fix_checksum(out)
        return bytes(out)
