"""A compaction may write into the buffer of a region dropped before
(`spare_buffer.rs`): its bytes must be those of a compaction in a fresh
process, whatever the old buffer held, and the old region's views stay
unaffected while it lives."""

import os
import random
import subprocess
import sys

import pytest

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


def test_the_string_map_kept_between_compactions_names_no_string_of_an_earlier_one():
    # Strings held twice go through the compactor's map by address, kept
    # between compactions (`spare_buffer::take_string_map`). Each round's
    # strings are freed before the next round's are made, which reuse their
    # addresses: an entry left over would give an earlier region's slot.
    for round_ in range(40):
        words = [f"round {round_} word {i} " + "x" * (i % 50) for i in range(300)]
        value = [words, list(words), {"w": words[::7]}]
        region = bale.compact(value)
        region.verify()
        assert bale.thaw(region.root) == value
        # Each string is stored once: the second list costs its slots only.
        alone = bale.compact([words])
        assert region.nbytes < alone.nbytes + 8 * (len(words) + len(words[::7])) + 512
        del words, value, region, alone


def test_a_string_map_grown_past_what_is_kept_is_let_go_and_later_compactions_hold():
    big = [f"entry {i:07d} of a long list" for i in range(50_000)]  # more than the map kept holds
    assert bale.thaw(bale.compact([big, big]).root) == [big, big]
    del big
    small = [f"later {i} string of some length" for i in range(100)]
    assert bale.thaw(bale.compact([small, small[::-1]]).root) == [small, small[::-1]]


@pytest.mark.parametrize("n", [3, 5_000, 150_000])
def test_strings_met_again_far_apart_are_stored_once_whatever_the_path(n):
    # The map of shared strings (`address_map.rs`) grows towards the strings
    # a list's run of leaves or a table's columns announce, and loads places
    # ahead (`Note [Prefetched places of shared strings]`): each string is
    # still found wherever it is met again, in a list, a run broken by
    # containers, a table's string column or a list column, in any order.
    words = [f"distinct word {i:07d} " + "y" * (i % 13) for i in range(n)]
    again = words[:]
    random.Random(n).shuffle(again)
    value = [
        words,
        [{"w": w, "i": i} for i, w in enumerate(again)],
        [[w] if i % 5 == 0 else (i if i % 5 == 1 else w) for i, w in enumerate(reversed(words))],
        [{"tags": [w, again[i - 1]]} for i, w in enumerate(again)],
    ]
    region = bale.compact(value)
    region.verify()
    assert bale.thaw(region.root) == value
    assert bale._bale.region_stats(region)["kinds"]["strings"][0] == n
    del region
    # A later compaction, with the map kept or let go, holds too.
    assert bale.thaw(bale.compact([again[:50], again[:50]]).root) == [again[:50], again[:50]]
