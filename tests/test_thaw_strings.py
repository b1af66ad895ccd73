"""thaw makes a string stored once into one object, however many slots
reference it (as pickle's memo does), and never confuses two strings."""

import random

import bale


def test_a_vocabulary_thaws_into_one_object_per_word():
    rng = random.Random(1)
    vocab = [f"word{i:03d}-" + "x" * rng.randrange(8, 50) for i in range(10)] + ["é" * 9, "€" * 9, "\U0001f600" * 9]
    data = [rng.choice(vocab) for _ in range(20_000)]
    native = bale.thaw(bale.compact(data).root)
    assert native == data
    assert len({id(s) for s in native}) == len(set(data))


def test_strings_of_a_column_that_share_a_start_stay_apart():
    # A STR_COLUMN's empty string starts where the next one does: same
    # address, other length.
    rows = [{"name": n, "tag": t} for n, t in zip(["", "abc", "", "abcdef", "ab", ""] * 50, ["x", "", "yy", "", "zzz", "w"] * 50)]
    native = bale.thaw(bale.compact(rows).root)
    assert native == rows
    assert bale.thaw(bale.compact({"rows": rows, "again": rows[:7]}).root) == {"rows": rows, "again": rows[:7]}


def test_more_distinct_strings_than_the_memo_holds():
    data = [f"s{i}-{'q' * (i % 40)}" for i in range(50_000)] * 2
    assert bale.thaw(bale.compact(data).root) == data
