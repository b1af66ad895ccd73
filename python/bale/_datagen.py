"""Deterministic test data for the demo, the benchmarks and the tests.

``tweets(n, seed)`` gives tweet-like records ``{"hashtags": [0-3 short str],
"user_id": int, "urls": [0-2 str]}``, the shape the project brief measured
pickle, msgspec, orjson and pyarrow on. Hashtags come from a fixed vocabulary
of word-like strings (real hashtags repeat); user ids are below 2**40; URLs
are t.co links with 10 random alphanumerics. ``bintree(depth)`` gives a
complete binary tree of 2-tuples with int leaves.

Only the standard library is used, and the same arguments give the same data
in every process and on every platform (``random.Random`` is seeded and its
algorithms are stable).
"""

from __future__ import annotations

import random
import string

__all__ = ["VOCABULARY_SIZE", "bintree", "tweets", "vocabulary"]

VOCABULARY_SIZE = 2000

_ALNUM = string.ascii_letters + string.digits
_ONSETS = ("b c d f g h j k l m n p r s t v w y z bl br ch cl cr dr fl fr gl gr "
           "pl pr sc sh sk sl sm sn sp st sw th tr wh").split()
_VOWELS = "a e i o u a e i o ai ea ee oo ou y".split()
_CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "ck", "ng", "st", "nd", "rt"]

_vocab_cache: dict[tuple[int, int], list[str]] = {}


def _word(rng: random.Random) -> str:
    """A pronounceable lowercase word of 3 to 12 letters."""
    while True:
        syllables = rng.choice((1, 2, 2, 2, 3, 3, 4))
        w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables))
        if 3 <= len(w) <= 12:
            return w


def vocabulary(size: int = VOCABULARY_SIZE, seed: int = 2015) -> list[str]:
    """``size`` distinct word-like hashtags, always the same for the same arguments."""
    key = (size, seed)
    if key not in _vocab_cache:
        rng = random.Random(seed)
        words: dict[str, None] = {}
        while len(words) < size:
            words[_word(rng)] = None
        _vocab_cache[key] = list(words)
    return list(_vocab_cache[key])


def tweets(n: int, seed: int = 0, progress=None) -> list[dict]:
    """``n`` tweet-like records, the same for the same ``seed``.

    ``progress(done, n)``, if given, is called every 50,000 records and at
    the end.
    """
    rng = random.Random(seed)
    vocab = vocabulary()
    nv = len(vocab)
    rnd, bits, choices = rng.random, rng.getrandbits, rng.choices
    alnum = _ALNUM
    out: list[dict] = []
    append = out.append
    for i in range(n):
        append(
            {
                "hashtags": [vocab[int(rnd() * nv)] for _ in range(int(rnd() * 4))],
                "user_id": bits(40),
                "urls": ["https://t.co/" + "".join(choices(alnum, k=10)) for _ in range(int(rnd() * 3))],
            }
        )
        if progress is not None and (i + 1) % 50_000 == 0 and i + 1 != n:
            progress(i + 1, n)
    if progress is not None:
        progress(n, n)
    return out


def bintree(depth: int):
    """A complete binary tree of 2-tuples with ``2**depth`` int leaves 0, 1, ..."""
    level: list = list(range(1 << depth))
    for _ in range(depth):
        level = [(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]
