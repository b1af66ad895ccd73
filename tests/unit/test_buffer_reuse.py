"""A compaction may write into the buffer of a region dropped before
(`spare_buffer.rs`): its bytes must be those of a compaction in a fresh
process, whatever the old buffer held, and the old region's views stay
unaffected while it lives."""

import os
import subprocess
import sys

import bale

MAKE = r"""
import random
rng = random.Random(5)
value = [{"name": "".join(rng.choices("abcdefgh", k=rng.randint(8, 40))), "n": i, "tags": ["x"] * (i % 3)}
         for i in range(40_000)]
"""


def fresh_bytes() -> bytes:
    code = MAKE + "import sys, bale\nsys.stdout.buffer.write(bytes(bale.compact(value)))\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout


def test_a_compaction_into_a_reused_buffer_writes_the_same_bytes_as_a_fresh_one():
    want = fresh_bytes()
    scope = {}
    exec(MAKE, scope)
    for junk in (os.urandom(3 << 20), b"\xff" * (5 << 20)):
        # Regions of 1-64 MiB full of other bytes, dropped: their buffers are kept.
        old = bale.compact([junk, junk[: 1 << 20]])
        assert old.nbytes > 1 << 20
        del old
        got = bale.compact(scope["value"])
        assert bytes(got) == want
        got.verify()
        # A second region while the first lives: its buffer is not shared.
        other = bale.compact(scope["value"])
        assert bytes(other) == want and bytes(got) == want
        del got, other


def test_views_of_a_region_outlive_other_compactions():
    scope = {}
    exec(MAKE, scope)
    region = bale.compact(scope["value"])
    root = region.root
    first = bale.thaw(root[123])
    del region  # the view keeps its region (and buffer) alive
    for _ in range(3):
        tmp = bale.compact([os.urandom(2 << 20)])
        del tmp
    assert bale.thaw(root[123]) == first == scope["value"][123]
