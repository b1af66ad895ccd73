"""Deterministic tweet-like records for the demo, benchmarks and tests.

Each record is ``{"hashtags": [0-3 short str], "user_id": int, "urls": [0-2
str]}``, the shape the project brief measured pickle, msgspec, orjson and
pyarrow on. Hashtags come from a fixed vocabulary (as real hashtags repeat);
URLs are unique t.co links.
"""

from __future__ import annotations

import random
import string

_LOWER = string.ascii_lowercase
_ALNUM = string.ascii_letters + string.digits


def vocabulary(size: int = 2000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_LOWER) for _ in range(rng.randint(3, 12))) for _ in range(size)]


def tweets(n: int, seed: int = 0, progress=None) -> list[dict]:
    """``n`` records; ``progress(done, n)`` is called every 50,000 records."""
    rng = random.Random(seed)
    vocab = vocabulary(seed=seed)
    out = []
    for i in range(n):
        out.append(
            {
                "hashtags": [rng.choice(vocab) for _ in range(rng.randint(0, 3))],
                "user_id": rng.randrange(1 << 40),
                "urls": ["https://t.co/" + "".join(rng.choices(_ALNUM, k=10)) for _ in range(rng.randint(0, 2))],
            }
        )
        if progress is not None and (i + 1) % 50_000 == 0:
            progress(i + 1, n)
    return out


def bintree(depth: int):
    """A complete binary tree of 2-tuples with ``2**depth`` int leaves."""
    counter = iter(range(1 << depth))

    def build(d):
        if d == 0:
            return next(counter)
        return (build(d - 1), build(d - 1))

    return build(depth)
